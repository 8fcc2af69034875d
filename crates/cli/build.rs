//! `schedlab --version` names the commit it was built from
//! (`SCHEDLAB_COMMIT`): `git rev-parse` at build time, `unknown` outside a
//! git checkout (a source tarball) or without git, and `+dirty` after it
//! when the sources that go into the binary ([`BUILT_FROM`]) differed from
//! that commit, so that a timing of a binary with changes not yet
//! committed does not name the commit before them; and the build
//! (`SCHEDLAB_BUILD`): the cargo profile, `+pgo` when built with a profile
//! (scripts/build-pgo.sh), so that a timing says what was timed.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What the binary is built from, relative to the checkout's top: the
/// crates and the presets and scenarios they embed (`include_str!`).
const BUILT_FROM: [&str; 5] = ["crates", "topologies", "scenarios", "Cargo.toml", "Cargo.lock"];

fn main() {
    let top = git(&["rev-parse", "--show-toplevel"]);
    let commit = match (git(&["rev-parse", "--short=12", "HEAD"]), &top) {
        (Some(c), Some(top)) if differs_from_head(top) => format!("{c}+dirty"),
        (Some(c), _) => c,
        (None, _) => "unknown".into(),
    };
    println!("cargo:rustc-env=SCHEDLAB_COMMIT={commit}");
    // For tests/install.rs, which checks the marker against git itself.
    println!("cargo:rustc-env=SCHEDLAB_BUILT_FROM={}", BUILT_FROM.join(" "));
    println!("cargo:rustc-env=SCHEDLAB_BUILD={}", build_kind());
    // Rebuild when HEAD moves: a commit rewrites the branch's loose ref
    // (refs/heads, scanned whole: it may not exist yet where the refs are
    // packed) or packed-refs, a checkout rewrites HEAD; and when a source
    // changes (a directory is scanned whole), which may make it differ or
    // agree. Only paths that exist are named: cargo takes a missing one as
    // changed at every build, which had rebuilt this crate every time.
    if let (Some(dir), Some(top)) = (git(&["rev-parse", "--absolute-git-dir"]), &top) {
        let watched = ["HEAD", "refs/heads", "packed-refs"].map(|p| format!("{dir}/{p}"));
        let sources = BUILT_FROM.map(|p| format!("{top}/{p}"));
        for path in watched.iter().chain(&sources) {
            if std::path::Path::new(path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// Whether a tracked file of [`BUILT_FROM`] differs from HEAD (staged or
/// not; untracked files are not built unless a tracked one names them).
/// `--no-optional-locks`: `git status` would otherwise refresh the index,
/// a write of its own in the tree it reads.
fn differs_from_head(top: &str) -> bool {
    let mut args = vec!["--no-optional-locks", "-C", top, "status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(BUILT_FROM);
    git(&args).is_some_and(|s| !s.is_empty())
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
