//! Starting QEMU and watching it: the accelerator choice, the command line,
//! and a monitor loop with a deadline for each phase (boot, each run,
//! power-off) that kills a hung guest and reports the console's last lines
//! instead of hanging.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use schedlab_helper::Helper;

use crate::wire::{Decoder, Frame};
use crate::VmError;

/// `--accel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Auto,
    Kvm,
    Tcg,
}

/// An `--accel` value that is none of the three.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected auto, kvm or tcg")]
pub struct UnknownAccel(pub String);

impl std::str::FromStr for Accel {
    type Err = UnknownAccel;
    fn from_str(s: &str) -> Result<Accel, UnknownAccel> {
        match s {
            "auto" => Ok(Accel::Auto),
            "kvm" => Ok(Accel::Kvm),
            "tcg" => Ok(Accel::Tcg),
            _ => Err(UnknownAccel(s.to_string())),
        }
    }
}

/// The accelerator in use and why.
#[derive(Clone, Debug)]
pub struct AccelChoice {
    pub kvm: bool,
    pub why: String,
}

/// KVM only where a hardware hypervisor backs /dev/kvm: a software one
/// (kvm_pvm, as on Firecracker-style hosts) cannot run a stock kernel.
pub fn choose_accel(requested: Accel) -> AccelChoice {
    let module = |m: &str| Path::new("/sys/module").join(m).exists();
    let usable = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok();
    match requested {
        Accel::Tcg => AccelChoice { kvm: false, why: "--accel tcg".into() },
        Accel::Kvm => AccelChoice { kvm: true, why: "--accel kvm".into() },
        Accel::Auto if !usable => {
            AccelChoice { kvm: false, why: "TCG (software emulation): /dev/kvm is missing or not usable".into() }
        }
        Accel::Auto if module("kvm_intel") || module("kvm_amd") => {
            AccelChoice { kvm: true, why: "KVM (/dev/kvm backed by kvm_intel/kvm_amd)".into() }
        }
        Accel::Auto if module("kvm_pvm") => AccelChoice {
            kvm: false,
            why: "TCG (software emulation): /dev/kvm is kvm_pvm, a software hypervisor that cannot run a stock kernel"
                .into(),
        },
        Accel::Auto => AccelChoice {
            kvm: false,
            why: "TCG (software emulation): /dev/kvm is not backed by kvm_intel or kvm_amd".into(),
        },
    }
}

/// Everything that goes on QEMU's command line.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub cmdline: String,
    pub cpus: usize,
    pub memory_mb: u64,
    pub kvm: bool,
    pub icount: bool,
    pub console: PathBuf,
    pub data: PathBuf,
}

pub fn qemu_binary() -> Result<PathBuf, VmError> {
    let name = "qemu-system-x86_64";
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(VmError::NoQemu)
}

pub fn qemu_args(m: &MachineSpec) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |v: &[&str]| a.extend(v.iter().map(|s| s.to_string()));
    push(&["-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]);
    if m.kvm {
        push(&["-accel", "kvm", "-cpu", "host"]);
    } else if m.icount {
        // One instruction per virtual ns, guest time detached from the host's:
        // the host's preemption of vCPU threads no longer shows as latency.
        push(&["-accel", "tcg", "-icount", "shift=0,sleep=off,align=off", "-cpu", "max"]);
    } else {
        push(&["-accel", "tcg,thread=multi", "-cpu", "max"]);
    }
    let (smp, mem) = (m.cpus.to_string(), format!("{}M", m.memory_mb));
    push(&["-smp", &smp, "-m", &mem]);
    let (kernel, initrd) = (m.kernel.display().to_string(), m.initramfs.display().to_string());
    push(&["-kernel", &kernel, "-initrd", &initrd, "-append", &m.cmdline]);
    let console = format!("file:{}", m.console.display());
    push(&["-serial", &console]);
    let data = format!("file,id=schedlab,path={}", m.data.display());
    push(&["-device", "virtio-serial-pci", "-chardev", &data]);
    push(&["-device", &format!("virtserialport,chardev=schedlab,name={}", crate::PORT_NAME)]);
    a
}

/// A console line without its `[  2.755] ` timestamp.
fn console_text(line: &str) -> &str {
    match line.trim_start().strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((_, rest)) => rest,
        None => line,
    }
}

/// The shell-quoted command, for the report.
pub fn shown(bin: &Path, args: &[String]) -> String {
    let q = |s: &str| {
        if s.chars().all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+".contains(c)) {
            s.to_string()
        } else {
            format!("'{s}'")
        }
    };
    std::iter::once(bin.display().to_string()).chain(args.iter().map(|a| q(a))).collect::<Vec<_>>().join(" ")
}

/// Start QEMU as a helper ([`schedlab_helper`]): it dies with schedlab, so
/// an interrupted schedlab never leaves a guest, and it is stopped at
/// `limit` whatever the phases' own deadlines ([`monitor`]) say.
pub fn spawn(bin: &Path, args: &[String], stderr_file: &Path, limit: Duration) -> Result<Helper, VmError> {
    let err =
        std::fs::File::create(stderr_file).map_err(|e| VmError::Io { path: stderr_file.to_path_buf(), source: e })?;
    let mut cmd = Command::new(bin);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
    Helper::spawn(&mut cmd, limit).map_err(|e| VmError::Spawn { bin: bin.to_path_buf(), source: e })
}

/// Reads what was appended to a file since the last call.
pub struct Tail {
    path: PathBuf,
    pos: u64,
}

impl Tail {
    pub fn new(path: &Path) -> Tail {
        Tail { path: path.to_path_buf(), pos: 0 }
    }

    pub fn read_new(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&self.path) {
            if f.seek(SeekFrom::Start(self.pos)).is_ok() && f.read_to_end(&mut out).is_ok() {
                self.pos += out.len() as u64;
            }
        }
        out
    }
}

/// The last lines the guest printed on its console.
#[derive(Default)]
pub struct ConsoleTail {
    lines: VecDeque<String>,
    partial: String,
    /// The first kernel oops (its `Oops:` line and the `RIP:` after it),
    /// kept whatever scrolls by: a crash inside the kernel rather than a
    /// panic the kernel chose (no root filesystem, init exited).
    oops: Option<String>,
}

impl ConsoleTail {
    const KEEP: usize = 30;

    pub fn push(&mut self, bytes: &[u8]) {
        self.partial.push_str(&String::from_utf8_lossy(bytes).replace('\r', ""));
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            let line = line.trim_end().to_string();
            match &mut self.oops {
                None if line.contains("Oops:") => self.oops = Some(console_text(&line).to_string()),
                Some(o) if !o.contains("RIP:") && line.contains("RIP:") => {
                    o.push_str(", ");
                    o.push_str(console_text(&line));
                }
                _ => {}
            }
            self.lines.push_back(line);
            if self.lines.len() > Self::KEEP {
                self.lines.pop_front();
            }
        }
    }

    /// The first oops seen, e.g. `Oops: int3: 0000 [#1] PREEMPT SMP NOPTI, RIP: 0010:sched_clock_cpu+0x9/0x190`.
    pub fn oops(&self) -> Option<&str> {
        self.oops.as_deref()
    }

    pub fn render(&self) -> String {
        let mut all: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.partial.trim().is_empty() {
            all.push(self.partial.trim_end());
        }
        if all.is_empty() {
            return "    (the console printed nothing)".into();
        }
        all.iter().map(|l| format!("    | {l}\n")).collect::<String>().trim_end().to_string()
    }
}

/// What the monitor loop is waiting for.
pub enum Wait {
    /// Keep going; the deadline stays.
    Continue,
    /// Keep going with a new deadline from now, named for the error.
    Deadline(Duration, String),
}

/// Watch a running QEMU: feed channel frames to `on_frame`, keep the
/// console's tail, enforce the current deadline. Returns QEMU's exit
/// status, or an error naming the phase that timed out.
pub fn monitor(
    child: &mut Helper,
    data: &Path,
    console: &Path,
    first: (Duration, String),
    tail: &mut ConsoleTail,
    on_frame: &mut dyn FnMut(Frame) -> Result<Wait, VmError>,
) -> Result<std::process::ExitStatus, VmError> {
    let mut data_tail = Tail::new(data);
    let mut console_tail = Tail::new(console);
    let mut decoder = Decoder::default();
    let (mut deadline, mut phase) = (Instant::now() + first.0, first.1);
    let mut drain = |tail: &mut ConsoleTail, deadline: &mut Instant, phase: &mut String| -> Result<(), VmError> {
        tail.push(&console_tail.read_new());
        decoder.feed(&data_tail.read_new());
        while let Some(frame) = decoder.next_frame()? {
            if let Wait::Deadline(d, p) = on_frame(frame)? {
                *deadline = Instant::now() + d;
                *phase = p;
            }
        }
        Ok(())
    };
    loop {
        if let Err(e) = drain(tail, &mut deadline, &mut phase) {
            child.kill();
            return Err(e);
        }
        if let Some(status) = child.try_wait().map_err(VmError::Wait)? {
            drain(tail, &mut deadline, &mut phase)?;
            return Ok(status);
        }
        if Instant::now() > deadline {
            child.kill();
            drain(tail, &mut deadline, &mut phase)?;
            return Err(VmError::Timeout { phase, console: tail.render() });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_oops_is_kept_however_far_it_scrolls() {
        let mut tail = ConsoleTail::default();
        tail.push(b"[    2.75] Kernel panic - not syncing: VFS: Unable to mount root fs\n");
        assert_eq!(tail.oops(), None, "a panic the kernel chose is not an oops");
        tail.push(b"[    2.756401] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI\n[    2.756437] CPU: 3 UID: 0\n");
        tail.push(b"[    2.756438] RIP: 0010:sched_clock_cpu+0x9/0x190\n[    2.8] RIP: 0010:later\n");
        tail.push(b"[    2.9] Oops: general protection fault\n");
        for _ in 0..100 {
            tail.push(b"[    3.0] filler\n");
        }
        assert_eq!(tail.oops(), Some("Oops: int3: 0000 [#2] PREEMPT SMP NOPTI, RIP: 0010:sched_clock_cpu+0x9/0x190"));
        assert!(!tail.render().contains("Oops"), "the tail itself keeps only the last lines");
    }

    #[test]
    fn console_tail_keeps_the_last_lines() {
        let mut t = ConsoleTail::default();
        for i in 0..40 {
            t.push(format!("line {i}\r\n").as_bytes());
        }
        t.push(b"Kernel panic - not syncing: Attempted to kill init!");
        let r = t.render();
        assert!(!r.contains("line 9\n") && r.contains("line 10") && r.contains("line 39"));
        assert!(r.ends_with("Attempted to kill init!"));
        assert_eq!(ConsoleTail::default().render(), "    (the console printed nothing)");
    }

    #[test]
    fn tcg_and_icount_command_lines() {
        let m = MachineSpec {
            kernel: "/k/vmlinuz".into(),
            initramfs: "/k/init.cpio".into(),
            cmdline: "console=ttyS0 nowatchdog".into(),
            cpus: 4,
            memory_mb: 2048,
            kvm: false,
            icount: false,
            console: "/k/console.log".into(),
            data: "/k/data".into(),
        };
        let s = shown(Path::new("qemu-system-x86_64"), &qemu_args(&m));
        assert!(s.contains("-accel tcg,thread=multi -cpu max -smp 4 -m 2048M"), "{s}");
        assert!(s.contains("-append 'console=ttyS0 nowatchdog'"), "{s}");
        assert!(s.contains("virtserialport,chardev=schedlab,name=schedlab"), "{s}");
        let s = shown(Path::new("q"), &qemu_args(&MachineSpec { icount: true, ..m.clone() }));
        assert!(s.contains("-accel tcg -icount shift=0,sleep=off,align=off"), "{s}");
        let s = shown(Path::new("q"), &qemu_args(&MachineSpec { kvm: true, ..m }));
        assert!(s.contains("-accel kvm -cpu host"), "{s}");
    }
}
