//! Why a VM run failed: on the host (options, kernel, guest binary, QEMU,
//! the results channel) or in the guest (its settings, its real runs).
//!
//! A guest error reaches the host as the text of an `Error` frame, so the
//! host holds it as [`VmError::Guest`] text.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use schedlab_runner::RunnerError;
use schedlab_scenario::InputError;

use crate::guest::FEATURES;
use crate::guest_bin::TARGET;
use crate::kernel::DEBIAN_612;
use crate::wire::MAX_FRAME;
use crate::{JOB_PATH, PORT_NAME};

/// What to do when Debian's kernel cannot be found or fetched.
const DOWNLOAD_HINT: &str = "run scripts/install-vm-deps.sh on a Debian machine, or pass --kernel PATH/bzImage";

/// A failed VM run, with what it concerns.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("--cpus {0}: expected 1 to 64")]
    Cpus(usize),
    #[error("--runs 0: expected at least one run")]
    NoRuns,
    #[error("--setting: `{0}` is not a sched_features name (expected e.g. NO_DELAY_DEQUEUE)")]
    BadSetting(String),
    #[error("--icount needs TCG: pass --accel tcg (or auto where KVM is not usable)")]
    IcountNeedsTcg,
    /// The scenario cannot run on the guest's CPUs `0..cpus`.
    #[error("{source} (in a guest with --cpus {cpus})")]
    Plan { source: Box<RunnerError>, cpus: usize },

    /// A host file or directory the run needs.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// As [`VmError::Io`], with the path kept for callers but not shown.
    #[error("{source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{0}")]
    Encode(serde_json::Error),

    #[error(
        "--kernel {spec}: no such file (expected `{DEBIAN_612}` or the path of a bzImage, e.g. arch/x86/boot/bzImage)"
    )]
    NoKernel { spec: String },
    #[error("--kernel {}: {source}", path.display())]
    KernelRead { path: PathBuf, source: io::Error },
    #[error(
        "--kernel {}: not an x86 bzImage (no \"HdrS\" boot header at offset 0x202); pass arch/x86/boot/bzImage, not vmlinux",
        path.display()
    )]
    NotBzImage { path: PathBuf },
    /// A helper program (`apt-cache`, `apt-get`, `dpkg-deb`) could not start.
    #[error("{what}: {source}")]
    Command { what: &'static str, source: schedlab_helper::HelperError },
    #[error("{what} failed ({status}): {stderr}")]
    CommandFailed { what: &'static str, status: ExitStatus, stderr: String },
    #[error("finding Debian's 6.12 kernel: {source} ({DOWNLOAD_HINT})")]
    FindKernel { source: Box<VmError> },
    #[error("apt knows no linux-image-6.12.*+deb*-amd64-unsigned package ({DOWNLOAD_HINT})")]
    NoDebianKernel,
    #[error("apt-get download left no .deb")]
    NoDeb,
    #[error("fetching {package}: {source} ({DOWNLOAD_HINT})")]
    Fetch { package: String, source: Box<VmError> },

    /// `what` says where the path came from (`--guest-bin`, ...).
    #[error("{what} {}: {source}", path.display())]
    GuestBinRead { what: &'static str, path: PathBuf, source: io::Error },
    #[error(
        "{what} {}: not a statically linked x86-64 ELF (the guest has no libc); build one with \
         RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target {TARGET} -p schedlab",
        path.display()
    )]
    NotStatic { what: &'static str, path: PathBuf },
    #[error("this schedlab is dynamically linked and its source tree is gone: pass --guest-bin with a static build")]
    NoSourceTree,
    #[error("running cargo to build the guest binary: {0} (or pass --guest-bin)")]
    Cargo(schedlab_helper::HelperError),
    #[error("building the guest binary failed ({0}); pass --guest-bin with a static build")]
    GuestBuild(ExitStatus),
    #[error("copying {}: {source}", path.display())]
    Copy { path: PathBuf, source: io::Error },

    #[error("qemu-system-x86_64 not found: run scripts/install-vm-deps.sh (Debian's qemu-system-x86)")]
    NoQemu,
    #[error("starting {}: {source}", bin.display())]
    Spawn { bin: PathBuf, source: schedlab_helper::HelperError },
    #[error("waiting for qemu: {0}")]
    Wait(schedlab_helper::HelperError),
    /// `console` is the rendered tail of the guest's console.
    #[error("the guest timed out {phase}; killed it. Its console's last lines:\n{console}")]
    Timeout { phase: String, console: String },
    #[error("the guest's channel does not start with the schedlab header (got {got:?}): a different guest binary?")]
    BadMagic { got: String },
    #[error("byte {offset}: unknown frame kind {kind} (expected 1-7)")]
    UnknownFrame { offset: u64, kind: u8 },
    #[error("byte {offset}: frame of {len} bytes (at most {MAX_FRAME} expected)")]
    FrameTooLong { offset: u64, len: usize },
    #[error("the guest's hello frame: {0}")]
    HelloFrame(serde_json::Error),
    #[error("the guest's run frame: {0}")]
    RunFrame(serde_json::Error),
    #[error("the guest's run frame names setting index {index} but there are {nsettings} (a different guest binary?)")]
    SettingIndex { index: usize, nsettings: usize },
    #[error("the guest sent trace text outside a run")]
    TraceOutsideRun,
    #[error("the guest ended a run it had not started")]
    EndWithoutRun,
    #[error("the guest's trace text is not UTF-8: {0}")]
    TraceNotUtf8(std::string::FromUtf8Error),
    /// The error the guest reported, under `kernel`'s label.
    #[error("in the guest ({kernel}): {message}")]
    Guest { kernel: String, message: String },
    /// QEMU exited before the guest said goodbye; `console` is the rendered
    /// console tail, `qemu_stderr` what QEMU printed (trimmed).
    #[error(
        "{} before finishing ({done} of {total} runs done; qemu exited with {status}). \
         Its console's last lines:\n{console}{}",
        if console.contains("Kernel panic") { "the guest kernel panicked" } else { "the guest stopped" },
        if qemu_stderr.is_empty() { String::new() } else { format!("\nqemu said: {qemu_stderr}") }
    )]
    GuestStopped {
        done: usize,
        total: u32,
        status: ExitStatus,
        console: String,
        qemu_stderr: String,
        /// The guest's init had reported in (its settings applied).
        booted: bool,
        /// The first kernel oops on the console, if the kernel crashed.
        oops: Option<String>,
    },
    #[error("the guest finished without reporting its settings")]
    NoGuestInfo,

    #[error("opening {}: {source}", dev.display())]
    OpenPort { dev: PathBuf, source: io::Error },
    #[error("writing {}: {source}", dev.display())]
    WritePort { dev: PathBuf, source: io::Error },
    #[error("no virtio-serial port named `{PORT_NAME}` in /sys/class/virtio-ports")]
    NoPort,
    #[error("writing the results port: {0}")]
    Send(io::Error),
    #[error("mount -t {fstype} {target}: {source}")]
    Mount { fstype: String, target: String, source: io::Error },
    #[error("{JOB_PATH}: {0} (not a schedlab initramfs?)")]
    JobRead(io::Error),
    #[error("{JOB_PATH}: {0}")]
    JobParse(serde_json::Error),
    #[error("{0}")]
    Scenario(#[from] InputError),
    /// Writing a sched_features setting the guest kernel does not have.
    #[error("{source}: this kernel has no sched_feature `{name}`")]
    NoFeatureWrite { source: Box<RunnerError>, name: String },
    #[error("this kernel has no sched_feature `{0}`")]
    NoFeature(String),
    #[error("wrote {setting} to {FEATURES} but it reads back: {now}")]
    FeatureReadBack { setting: String, now: String },
    #[error("{0}")]
    Runner(Box<RunnerError>),
}

impl From<RunnerError> for VmError {
    fn from(e: RunnerError) -> VmError {
        VmError::Runner(Box::new(e))
    }
}
