//! `schedlab vm`: boot a real kernel under QEMU (Debian's 6.12 or your own
//! bzImage), set `sched_features` and knobs inside it, run the scenario
//! there with the real runner and report it as `schedlab real` does, one
//! row per run when there are several.

use clap::Args;
use schedlab_sides::{Guest, Side as _};
use schedlab_sweep::feature_sets;
use schedlab_topology::parse_duration;
use schedlab_vm::{Accel, VmOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::{FeaturesArg, JsonArg, ReportArgs, TraceArg};
use crate::error::Result;
use crate::real::{load, options, RealSettings};
/// The guest machine (shared with `schedlab compare --vm`).
#[derive(Args, Clone)]
pub struct VmSettings {
    /// Kernel to boot: `debian-6.12` (Debian's newest 6.12 image, downloaded
    /// once with apt-get and cached under ~/.cache/schedlab) or the path of a
    /// bzImage, e.g. a patched kernel's arch/x86/boot/bzImage (it needs
    /// SCHED_DEBUG + DEBUG_FS for feature toggles, FTRACE, a built-in 8250
    /// console and VIRTIO_CONSOLE).
    #[arg(long, default_value = "debian-6.12")]
    pub kernel: String,
    /// vCPUs of the guest.
    #[arg(long, default_value_t = 4)]
    pub cpus: usize,
    /// Guest memory in MB (the trace buffers and text live there).
    #[arg(long, default_value_t = 2048, value_name = "MB")]
    pub memory: u64,
    /// auto: KVM where /dev/kvm is a hardware hypervisor (kvm_intel/kvm_amd),
    /// else TCG software emulation; the report says which and why.
    #[arg(long, default_value = "auto", value_parser = clap::value_parser!(Accel))]
    pub accel: Accel,
    /// TCG with -icount (one instruction per virtual ns): much tighter timing,
    /// no host-preemption noise, about 2x slower than real time.
    #[arg(long)]
    pub icount: bool,
    /// Silence kernel background that reschedules CPUs on its own: `nowatchdog`
    /// on the command line (no softlockup stopper every 4 s) and fair-server
    /// runtime 0 (no starved kworker run under RT load), unless the scenario
    /// sets fair_server_runtime. Needed for seed 003's "L waits the whole dwell".
    #[arg(long)]
    pub quiet_kernel: bool,
    /// Extra kernel command-line words (repeatable), e.g. --append nohz_full=1-3.
    #[arg(long, value_name = "WORD")]
    pub append: Vec<String>,
    /// Runs of the scenario in one boot (one row each, then the measures' summary).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// The static schedlab to run as the guest's /init (default: this one if
    /// static, else a crt-static build of this source tree in target/guest).
    #[arg(long, value_name = "PATH")]
    pub guest_bin: Option<PathBuf>,
    /// Limit for the guest to boot and apply its settings.
    #[arg(long, value_parser = parse_duration, default_value = "180s")]
    pub boot_timeout: u64,
}

#[derive(Args)]
#[command(after_help = crate::examples::get("vm"))]
pub struct VmArgs {
    #[command(flatten)]
    pub settings_real: RealSettings,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub vm: VmSettings,
    #[command(flatten)]
    pub features: FeaturesArg,
    /// Alternate between feature sets in one boot (repeatable): each round of
    /// --runs runs the scenario once under each, in turn, and the report has a
    /// row per set. A set is a setting (`schedlab_sweep::setting`) of
    /// sched_features only (`-` for none: the base state); a feature only
    /// another set names is put back to its base state, e.g.
    /// --setting NO_RT_PUSH_IPI --setting RT_PUSH_IPI.
    #[arg(long = "setting", value_name = "FEATURES")]
    pub settings: Vec<String>,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub trace: TraceArg,
}

/// The feature sets of `--setting`.
pub(crate) fn alternate_sets(raw: &[String]) -> Result<Vec<Vec<String>>> {
    Ok(feature_sets("--setting", raw)?)
}

/// The guest side of `vm` and `compare --vm`: `features` set inside it,
/// `alternate` sets taken in turn; with `trace`, run `i` of `n` is written
/// to `schedlab_report::trace_path`.
pub(crate) fn guest(
    settings: &RealSettings,
    vm: &VmSettings,
    features: &[String],
    alternate: &[Vec<String>],
    trace: Option<&Path>,
    grace_ns: u64,
) -> Result<Guest> {
    let opts = VmOptions {
        kernel: vm.kernel.clone(),
        cpus: vm.cpus,
        memory_mb: vm.memory,
        accel: vm.accel,
        icount: vm.icount,
        quiet_kernel: vm.quiet_kernel,
        append: vm.append.clone(),
        features: features.to_vec(),
        runs: vm.runs,
        settings: alternate.to_vec(),
        guest_bin: vm.guest_bin.clone(),
        boot_timeout: Duration::from_nanos(vm.boot_timeout),
        real: options(settings, None, &[]),
    };
    Ok(Guest::new(opts, trace.map(Path::to_path_buf), grace_ns)?)
}

/// The guest's boot log, line by line on stderr.
pub(crate) fn vm_log(line: &str) {
    stderr_line!("vm: {line}");
}

pub fn vm(args: VmArgs) -> Result {
    let alternate = alternate_sets(&args.settings)?;
    let trace = args.trace.trace.as_deref();
    let guest = guest(&args.settings_real, &args.vm, &args.features.features, &alternate, trace, args.report.grace)?;
    let scenario = load(&args.settings_real)?;
    let mut session = guest.run(&scenario, &mut vm_log)?;
    // As a simulated run's report keeps them.
    for a in &mut session.runs {
        a.report.keep_stalls(schedlab_report::kept_stalls(args.report.stalls));
    }
    let out = if args.json.json {
        session.json(&scenario, &alternate)?
    } else {
        session.text(&scenario, &alternate, args.vm.runs, args.report.stalls, trace)
    };
    crate::output::emit(&out)
}
