//! The program the guest runs as `/init`: schedlab itself, statically
//! linked (the initramfs holds no libc). A static `schedlab` is used as it
//! is; otherwise the static build of this source tree is made with cargo
//! (`--target x86_64-unknown-linux-gnu` with `crt-static`, in
//! `target/guest`), which is quick when it is up to date.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::VmError;

pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";

/// True when the ELF file has no program interpreter (`PT_INTERP`), i.e.
/// it is statically linked and can run with nothing else in the initramfs.
pub fn is_static_elf(bytes: &[u8]) -> bool {
    let u16_at = |o: usize| bytes.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u64_at = |o: usize| bytes.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    const PT_INTERP: u32 = 3;
    // Offsets come from the file: checked, so a crafted header is "not static", not a panic.
    (0..phnum).all(|i| {
        let at = i.checked_mul(phentsize).and_then(|o| phoff.checked_add(o));
        at.and_then(|at| bytes.get(at..at.checked_add(4)?))
            .is_some_and(|b| u32::from_le_bytes(b.try_into().unwrap()) != PT_INTERP)
    })
}

/// The source tree this binary was built from, when it is still there.
fn workspace() -> Option<PathBuf> {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ws.join("Cargo.toml").is_file().then(|| ws.canonicalize().unwrap_or(ws))
}

/// Find or build the static guest binary. `given`: `--guest-bin` or
/// `$SCHEDLAB_GUEST_BIN`.
pub fn guest_binary(given: Option<&Path>, log: &mut dyn FnMut(&str)) -> Result<PathBuf, VmError> {
    let check = |p: &Path, what: &'static str| -> Result<PathBuf, VmError> {
        let bytes = std::fs::read(p).map_err(|e| VmError::GuestBinRead { what, path: p.to_path_buf(), source: e })?;
        if !is_static_elf(&bytes) {
            return Err(VmError::NotStatic { what, path: p.to_path_buf() });
        }
        Ok(p.to_path_buf())
    };
    if let Some(p) = given {
        return check(p, "--guest-bin");
    }
    if let Some(p) = std::env::var_os("SCHEDLAB_GUEST_BIN").filter(|p| !p.is_empty()) {
        return check(Path::new(&p), "$SCHEDLAB_GUEST_BIN");
    }
    if let Ok(me) = std::env::current_exe() {
        if std::fs::read(&me).is_ok_and(|b| is_static_elf(&b)) {
            return Ok(me);
        }
    }
    let ws = workspace().ok_or(VmError::NoSourceTree)?;
    let target_dir = ws.join("target/guest");
    log(&format!(
        "guest binary: cargo build --release --target {TARGET} with crt-static in {} \
         (a no-op when up to date; the first build takes a few minutes)",
        target_dir.display()
    ));
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .current_dir(&ws)
        .args(["build", "--quiet", "--release", "--target", TARGET, "-p", "schedlab"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        // No debug info: a faster first build and a smaller initramfs.
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0");
    let status = schedlab_helper::status(&mut cargo, GUEST_BUILD_LIMIT).map_err(VmError::Cargo)?;
    if !status.success() {
        return Err(VmError::GuestBuild(status));
    }
    check(&target_dir.join(TARGET).join("release/schedlab"), "the guest build")
}

/// How long the guest binary's build may take: the first one compiles the
/// workspace for musl, a few minutes on 2 cores.
const GUEST_BUILD_LIMIT: std::time::Duration = std::time::Duration::from_secs(60 * 60);
/// How long `strip` may take on it.
const STRIP_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The binary without debug info, for a small initramfs (a copy of the
/// original when `strip` is not installed).
pub fn stripped_copy(bin: &Path, dest: &Path) -> Result<(), VmError> {
    let mut strip = Command::new("strip");
    strip.arg("--strip-debug").arg("-o").arg(dest).arg(bin);
    let ok = schedlab_helper::status(&mut strip, STRIP_LIMIT).is_ok_and(|s| s.success());
    if !ok {
        std::fs::copy(bin, dest).map_err(|e| VmError::Copy { path: bin.to_path_buf(), source: e })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_dynamic_elves() {
        // This test binary is dynamically linked (the workspace default).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!is_static_elf(&me));
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        // A minimal ELF64 header with no program headers is static.
        let mut h = vec![0u8; 64];
        h[..5].copy_from_slice(b"\x7fELF\x02");
        assert!(is_static_elf(&h));
        // ... and one whose single program header is PT_INTERP is not.
        h[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&[3, 0, 0, 0]);
        h.resize(64 + 56, 0);
        assert!(!is_static_elf(&h));
    }

    #[test]
    fn program_header_offsets_that_overflow_are_not_static() {
        let mut h = vec![0u8; 64];
        h[..5].copy_from_slice(b"\x7fELF\x02");
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
        // phoff + 4 overflows; so does phoff + 1 * phentsize.
        for phoff in [u64::MAX, u64::MAX - 2, u64::MAX - 60] {
            h[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
            assert!(!is_static_elf(&h), "phoff {phoff:#x}");
        }
        // A header table past the end of the file is not static either.
        h[0x20..0x28].copy_from_slice(&4096u64.to_le_bytes());
        assert!(!is_static_elf(&h));
    }
}
