//! `schedlab --version` names the commit it was built from
//! (`SCHEDLAB_COMMIT`): `git rev-parse` at build time, `unknown` outside a
//! git checkout (a source tarball) or without git; and the build
//! (`SCHEDLAB_BUILD`): the cargo profile, `+pgo` when built with a profile
//! (scripts/build-pgo.sh), so that a timing says what was timed.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SCHEDLAB_COMMIT={commit}");
    println!("cargo:rustc-env=SCHEDLAB_BUILD={}", build_kind());
    // Rebuild when HEAD moves: a commit rewrites the branch's ref (or
    // packed-refs), a checkout rewrites HEAD.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// The profile's directory name (`OUT_DIR` is
/// `<target>/[<triple>/]<profile>/build/<package>-<hash>/out`: `debug` for
/// the dev profile, `release`, `dist`, ...), with `+pgo` when the flags
/// carry `-Cprofile-use` (flags that change rebuild this script too).
fn build_kind() -> String {
    let out = std::env::var_os("OUT_DIR").unwrap_or_default();
    let profile = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .map_or_else(|| "unknown".to_string(), |p| p.to_string_lossy().into_owned());
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let pgo = flags.split('\x1f').any(|f| f.contains("profile-use="));
    if pgo {
        format!("{profile}+pgo")
    } else {
        profile
    }
}
