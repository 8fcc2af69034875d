//! `schedlab vm`: boot a real kernel under QEMU (Debian's 6.12 or your own
//! bzImage), set `sched_features` and knobs inside it, run the scenario
//! there with the real runner and report it as `schedlab real` does, one
//! row per run when there are several.

use clap::Args;
use schedlab_fidelity::sides::analyze_real;
use schedlab_report::{
    setting_label, trace_path, AnalysisJson, GuestHeader, GuestRun, Report, RunLine, VmJson, VmRunJson, VmText,
};
use schedlab_runner::{assemble, RealRun};
use schedlab_scenario::Scenario;
use schedlab_sweep::feature_sets;
use schedlab_topology::parse_duration;
use schedlab_vm::{run_vm, Accel, VmOptions, VmResult};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::{FeaturesArg, JsonArg, ReportArgs, TraceArg};
use crate::error::{CliError, Result};
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
#[command(after_help = crate::examples::VM)]
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

/// A guest run and its analysis.
pub(crate) type AnalysedRun = (RealRun, Report);

/// The runs as the runs table takes them.
pub(crate) fn run_lines(runs: &[AnalysedRun]) -> Vec<RunLine<'_>> {
    runs.iter()
        .map(|(run, r)| RunLine { events: run.trace.events.len(), lost_events: run.lost_events, report: r })
        .collect()
}

/// The session's runs as the report takes them: the VM's record of each
/// beside its analysis.
pub(crate) fn guest_runs<'a>(scenario: &Scenario, result: &'a VmResult, runs: &'a [AnalysedRun]) -> Vec<GuestRun<'a>> {
    result
        .runs
        .iter()
        .zip(runs)
        .map(|(r, (run, report))| GuestRun {
            cgroups: crate::real::cgroup_rows(scenario, run, report),
            setting: r.setting,
            events: run.trace.events.len(),
            lost_events: run.lost_events,
            notes: &run.notes,
            table: &run.trace.table,
            report,
        })
        .collect()
}

/// The feature sets of `--setting`.
pub(crate) fn alternate_sets(raw: &[String]) -> Result<Vec<Vec<String>>> {
    Ok(feature_sets("--setting", raw)?)
}

/// Boot, run, and analyse each run as a real one (work conservation with
/// `grace_ns`); with `trace`, run `i` of `n` is written to [`trace_path`].
pub(crate) fn vm_runs(
    settings: &RealSettings,
    vm: &VmSettings,
    features: &[String],
    alternate: &[Vec<String>],
    trace: Option<&Path>,
    grace_ns: u64,
) -> Result<(Scenario, VmResult, Vec<AnalysedRun>)> {
    if trace.is_some_and(crate::output::is_stdout) {
        return Err(CliError::TraceToStdout.into());
    }
    let scenario = load(settings)?;
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
        real: options(settings, None),
    };
    let result = run_vm(&scenario, &opts, &mut |line| stderr_line!("vm: {line}")).map_err(|e| e.to_string())?;
    let n = result.runs.len();
    let mut runs = Vec::new();
    for (i, r) in result.runs.iter().enumerate() {
        let mut o = opts.real.clone();
        o.kernel_settings_applied = true;
        o.trace_out = trace.map(|t| trace_path(t, i, n));
        let run =
            assemble(&scenario, &o, r.capture.clone()).map_err(|e| CliError::Run { run: i + 1, why: e.to_string() })?;
        let report = analyze_real(&scenario, &run, grace_ns);
        runs.push((run, report));
    }
    Ok((scenario, result, runs))
}

/// The guest's header lines: kernel, machine, accelerator, command line,
/// settings as read back, timing.
pub(crate) fn vm_header(r: &VmResult) -> GuestHeader<'_> {
    GuestHeader {
        kernel_label: &r.kernel_label,
        kernel: &r.guest.kernel,
        cpus: r.cpus,
        memory_mb: r.memory_mb,
        accel: &r.accel.why,
        icount: r.icount,
        kernel_cmdline: &r.kernel_cmdline,
        applied: &r.guest.applied,
        features_before: &r.guest.features_before,
        features_after: &r.guest.features_after,
        notes: &r.notes,
        boot_s: r.boot_s,
        uptime_at_init_s: r.guest.uptime_at_init_s,
        run_walls_s: r.runs.iter().map(|r| r.wall_s).collect(),
        total_s: r.total_s,
        qemu_command: &r.qemu_command,
    }
}

pub fn vm(args: VmArgs) -> Result {
    let alternate = alternate_sets(&args.settings)?;
    let (scenario, result, mut runs) = vm_runs(
        &args.settings_real,
        &args.vm,
        &args.features.features,
        &alternate,
        args.trace.trace.as_deref(),
        args.report.grace,
    )?;
    // As a simulated run's report keeps them.
    for (_, report) in &mut runs {
        report.keep_stalls(schedlab_report::kept_stalls(args.report.stalls));
    }
    if args.json.json {
        let runs_json = result
            .runs
            .iter()
            .zip(&runs)
            .map(|(r, (run, report))| VmRunJson {
                setting: alternate.get(r.setting).map(|s| setting_label(s)),
                features: &r.features,
                wall_s: r.wall_s,
                window_ns: [run.start_ns, run.end_ns],
                events: run.trace.events.len(),
                lost_events: run.lost_events,
                notes: &run.notes,
                threads: &run.threads,
                cgroups: crate::real::cgroup_rows(&scenario, run, report),
                analysis: AnalysisJson::from(report),
            })
            .collect();
        let doc = VmJson {
            format: schedlab_report::FORMAT_VERSION,
            scenario: &scenario.name,
            kernel: &result.kernel_label,
            guest: &result.guest,
            accel: &result.accel.why,
            icount: result.icount,
            cpus: result.cpus,
            memory_mb: result.memory_mb,
            kernel_cmdline: &result.kernel_cmdline,
            qemu_command: &result.qemu_command,
            boot_s: result.boot_s,
            total_s: result.total_s,
            notes: &result.notes,
            settings: &alternate,
            runs: runs_json,
        };
        crate::output::emit(&format!("{}\n", schedlab_report::to_json(&doc)?))?;
        return Ok(());
    }
    let text = VmText {
        scenario: &scenario,
        header: vm_header(&result),
        sets: &alternate,
        rounds: args.vm.runs,
        runs: &guest_runs(&scenario, &result, &runs),
        narratives: args.report.stalls,
        trace_file: args.trace.trace.as_deref(),
    };
    crate::output::emit(&text.render())?;
    Ok(())
}
