//! Which kernel the guest boots: Debian's 6.12 (downloaded once with
//! `apt-get download`, unpacked with `dpkg-deb -x`, never installed on the
//! host) or the user's own bzImage, e.g. a patched build.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::VmError;

/// The spelling of the Debian kernel on the command line.
pub const DEBIAN_612: &str = "debian-6.12";

/// A kernel ready to boot.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub image: PathBuf,
    /// What to call it in the report, e.g. "Debian 6.12.117+deb12-amd64".
    pub label: String,
}

/// Where schedlab keeps what it downloads: `$SCHEDLAB_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/schedlab`, else `~/.cache/schedlab`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SCHEDLAB_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("schedlab");
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty()).unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/schedlab")
}

/// Resolve `--kernel`: `debian-6.12` or a path to a bzImage.
pub fn resolve(spec: &str, log: &mut dyn FnMut(&str)) -> Result<Kernel, VmError> {
    if spec == DEBIAN_612 {
        return debian_612(&cache_dir().join("kernels"), log);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(VmError::NoKernel { spec: spec.to_string() });
    }
    check_bzimage(path)?;
    Ok(Kernel { image: path.to_path_buf(), label: format!("{} (given)", path.display()) })
}

/// A bzImage carries "HdrS" at offset 0x202 (the x86 boot protocol header).
fn check_bzimage(path: &Path) -> Result<(), VmError> {
    use std::io::Read;
    let mut head = [0u8; 0x206];
    let read_err = |e| VmError::KernelRead { path: path.to_path_buf(), source: e };
    let mut f = std::fs::File::open(path).map_err(read_err)?;
    let n = f.read(&mut head).map_err(read_err)?;
    if n < head.len() || &head[0x202..0x206] != b"HdrS" {
        return Err(VmError::NotBzImage { path: path.to_path_buf() });
    }
    Ok(())
}

/// `6.12.117+deb12` from `linux-image-6.12.117+deb12-amd64-unsigned`.
fn debian_version(pkg: &str) -> Option<&str> {
    let v = pkg.strip_prefix("linux-image-")?.strip_suffix("-amd64-unsigned")?;
    let (upstream, deb) = v.split_once('+')?;
    let parts: Vec<&str> = upstream.split('.').collect();
    let numeric = parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (numeric && parts[0] == "6" && parts[1] == "12" && deb.starts_with("deb") && !deb.contains('-')).then_some(v)
}

/// Sort key: the patch level.
fn patch_level(version: &str) -> u32 {
    version.split(['.', '+']).nth(2).and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// The newest cached Debian 6.12, else the newest apt knows, downloaded.
fn debian_612(root: &Path, log: &mut dyn FnMut(&str)) -> Result<Kernel, VmError> {
    let cached: Option<String> = std::fs::read_dir(root)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|v| v.starts_with("6.12.") && root.join(v).join("vmlinuz").is_file())
        .max_by_key(|v| patch_level(v));
    let version = match cached {
        Some(v) => v,
        None => download_debian_612(root, log)?,
    };
    Ok(Kernel { image: root.join(&version).join("vmlinuz"), label: format!("Debian {version}-amd64") })
}

/// How long fetching the kernel may take, per step: `apt-get download` of
/// a ~100 MB package from a slow mirror is the longest.
const FETCH_STEP_LIMIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

fn run(cmd: &mut Command, what: &'static str) -> Result<String, VmError> {
    let out = schedlab_helper::output(cmd, FETCH_STEP_LIMIT).map_err(|e| VmError::Command { what, source: e })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(VmError::CommandFailed { what, status: out.status, stderr });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn download_debian_612(root: &Path, log: &mut dyn FnMut(&str)) -> Result<String, VmError> {
    let names = run(Command::new("apt-cache").args(["pkgnames", "linux-image-6.12."]), "apt-cache pkgnames")
        .map_err(|e| VmError::FindKernel { source: Box::new(e) })?;
    let pkg = names
        .lines()
        .filter(|n| debian_version(n).is_some())
        .max_by_key(|n| patch_level(debian_version(n).unwrap_or("")))
        .ok_or(VmError::NoDebianKernel)?
        .to_string();
    let version = debian_version(&pkg).unwrap_or_default().to_string();
    log(&format!("downloading {pkg} (once; cached under {})", root.display()));
    let tmp = root.join(format!(".download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| VmError::Io { path: tmp.clone(), source: e })?;
    let result = (|| {
        run(Command::new("apt-get").arg("download").arg(&pkg).current_dir(&tmp), "apt-get download")?;
        let deb = std::fs::read_dir(&tmp)
            .map_err(|e| VmError::Read { path: tmp.clone(), source: e })?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or(VmError::NoDeb)?;
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(tmp.join("pkg")), "dpkg-deb -x")?;
        let dest = root.join(&version);
        std::fs::create_dir_all(&dest).map_err(|e| VmError::Io { path: dest.clone(), source: e })?;
        for (from, to) in
            [(format!("vmlinuz-{version}-amd64"), "vmlinuz"), (format!("config-{version}-amd64"), "config")]
        {
            let src = tmp.join("pkg/boot").join(&from);
            std::fs::copy(&src, dest.join(to)).map_err(|e| VmError::Io { path: src, source: e })?;
        }
        Ok::<(), VmError>(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result.map_err(|e| VmError::Fetch { package: pkg.clone(), source: Box::new(e) })?;
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_package_names() {
        assert_eq!(debian_version("linux-image-6.12.117+deb12-amd64-unsigned"), Some("6.12.117+deb12"));
        assert_eq!(debian_version("linux-image-6.12.117+deb12-rt-amd64-unsigned"), None);
        assert_eq!(debian_version("linux-image-6.12.117+deb12-cloud-amd64-unsigned"), None);
        assert_eq!(debian_version("linux-image-6.1.0-30-amd64-unsigned"), None);
        assert_eq!(patch_level("6.12.117+deb12"), 117);
        assert!(patch_level("6.12.95+deb12") < patch_level("6.12.117+deb12"));
    }

    #[test]
    fn a_file_that_is_not_a_bzimage_is_refused() {
        // Removed when `dir` drops, also when the test fails.
        let dir = tempfile::Builder::new().prefix("schedlab-vm-kernel-").tempdir().unwrap();
        let p = dir.path().join("vmlinux");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let err = resolve(p.to_str().unwrap(), &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("not an x86 bzImage"), "{err}");
        let err = resolve("/nonexistent/bzImage", &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("no such file"), "{err}");
        dir.close().unwrap();
    }
}
