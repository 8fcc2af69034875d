//! The guest's root filesystem: an uncompressed `newc` cpio archive (the
//! format `Documentation/driver-api/early-userspace/buffer-format.rst`
//! describes), which the kernel unpacks into its rootfs before running
//! `/init`. Uncompressed because it boots just as well and needs no
//! compressor.

use std::collections::BTreeSet;

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFCHR: u32 = 0o020000;

/// An archive being built in memory; parent directories are added for
/// every path, once.
#[derive(Default)]
pub struct Cpio {
    out: Vec<u8>,
    dirs: BTreeSet<String>,
    ino: u32,
}

impl Cpio {
    pub fn new() -> Cpio {
        Cpio::default()
    }

    /// A directory (and its parents), mode 0755.
    pub fn dir(&mut self, path: &str) {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return;
        }
        let mut at = String::new();
        for part in path.split('/') {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if self.dirs.insert(at.clone()) {
                let name = at.clone();
                self.entry(&name, S_IFDIR | 0o755, 0, &[]);
            }
        }
    }

    /// A regular file with `mode` permission bits (parents created).
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) {
        let path = path.trim_start_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.entry(path, S_IFREG | (mode & 0o7777), 0, data);
    }

    /// A character device node (`/dev/console` for init's first stdio).
    pub fn char_dev(&mut self, path: &str, major: u32, minor: u32) {
        let path = path.trim_start_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.entry(path, S_IFCHR | 0o600, (major << 8) | minor, &[]);
    }

    /// The finished archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, 0, &[]);
        self.out
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: u32, data: &[u8]) {
        self.ino += 1;
        let nlink = if mode & S_IFDIR != 0 { 2 } else { 1 };
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so the archive is reproducible
            data.len() as u32,
            0, // devmajor
            0, // devminor
            rdev >> 8,
            rdev & 0xff,
            name.len() as u32 + 1,
            0, // check
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad4();
        self.out.extend_from_slice(data);
        self.pad4();
    }

    fn pad4(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal reader of our own output: (name, mode, data) per entry.
    fn read(archive: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut at = 0;
        let mut out = Vec::new();
        loop {
            assert_eq!(&archive[at..at + 6], b"070701", "magic at {at}");
            let field = |i: usize| {
                let s = std::str::from_utf8(&archive[at + 6 + 8 * i..at + 14 + 8 * i]).unwrap();
                u32::from_str_radix(s, 16).unwrap() as usize
            };
            let (mode, size, namesize) = (field(1) as u32, field(6), field(11));
            let name_at = at + 110;
            let name = std::str::from_utf8(&archive[name_at..name_at + namesize - 1]).unwrap().to_string();
            let data_at = (name_at + namesize).next_multiple_of(4);
            let data = archive[data_at..data_at + size].to_vec();
            at = (data_at + size).next_multiple_of(4);
            if name == "TRAILER!!!" {
                assert_eq!(at, archive.len());
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn entries_parents_and_alignment() {
        let mut c = Cpio::new();
        c.file("/init", 0o755, b"\x7fELF...");
        c.file("/work/main/scenarios/x.toml", 0o644, b"name = \"x\"\n");
        c.dir("/work/main");
        c.char_dev("/dev/console", 5, 1);
        let entries = read(&c.finish());
        let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            ["init", "work", "work/main", "work/main/scenarios", "work/main/scenarios/x.toml", "dev", "dev/console"]
        );
        assert_eq!(entries[0].1, S_IFREG | 0o755);
        assert_eq!(entries[0].2, b"\x7fELF...");
        assert_eq!(entries[4].2, b"name = \"x\"\n");
        assert_eq!(entries[1].1, S_IFDIR | 0o755);
        assert_eq!(entries[6].1, S_IFCHR | 0o600);
    }
}
