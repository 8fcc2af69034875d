//! Lists every `.toml` file under the repository's `scenarios/` as an
//! `include_str!`, so the binary carries them (a `cargo install`ed
//! schedlab works outside the checkout).

use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..").canonicalize().unwrap();
    let scenarios = root.join("scenarios");
    println!("cargo:rerun-if-changed={}", scenarios.display());
    let mut files = Vec::new();
    walk(&scenarios, &mut files);
    let mut code = String::from("pub(crate) static FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f.strip_prefix(&root).unwrap().to_str().expect("a UTF-8 path under scenarios/");
        code.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("files.rs");
    std::fs::write(out, code).unwrap();
}
