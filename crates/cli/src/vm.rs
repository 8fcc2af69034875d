//! `schedlab vm`: boot a real kernel under QEMU (Debian's 6.12 or your own
//! bzImage), set `sched_features` and knobs inside it, run the scenario
//! there with the real runner and report it as `schedlab real` does, one
//! row per run when there are several.

use clap::Args;
use schedlab_runner::{assemble, RealRun};
use schedlab_scenario::Scenario;
use schedlab_sweep::measures::{measure_infos, MeasureRun};
use schedlab_topology::parse_duration;
use schedlab_vm::{run_vm, Accel, VmOptions, VmResult};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::real::{analyze_run, load, options, RealSettings};
use crate::report::{print_report, Report, ReportArgs};

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
pub struct VmArgs {
    #[command(flatten)]
    pub settings_real: RealSettings,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub vm: VmSettings,
    /// sched_features settings in debugfs syntax, written in the guest after
    /// the scenario's own: --features NO_RT_PUSH_IPI,NO_DELAY_DEQUEUE.
    #[arg(long, value_delimiter = ',')]
    pub features: Vec<String>,
    /// Alternate between feature sets in one boot (repeatable): each round of
    /// --runs runs the scenario once under each, in turn, and the report has a
    /// row per set. A set is a comma list (`-` for none: the base state); a
    /// feature only another set names is put back to its base state, e.g.
    /// --setting NO_RT_PUSH_IPI --setting RT_PUSH_IPI.
    #[arg(long = "setting", value_name = "FEATURES")]
    pub settings: Vec<String>,
    /// Print the results as JSON instead of tables (guest, settings, and per
    /// run its setting, features read back, metrics, measures, causes).
    #[arg(long)]
    pub json: bool,
    /// Write each run's captured tracefs text (FILE, or FILE with .runN before
    /// the extension when there are several runs).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// `--setting` values as feature lists (`-` is the empty set).
pub(crate) fn parse_settings(raw: &[String]) -> Vec<Vec<String>> {
    raw.iter()
        .map(|s| if s.trim() == "-" { Vec::new() } else { s.split(',').map(|f| f.trim().to_string()).collect() })
        .collect()
}

/// How a setting is named in tables.
pub(crate) fn setting_label(set: &[String]) -> String {
    if set.is_empty() {
        "(base)".into()
    } else {
        set.join(",")
    }
}

/// The trace file of run `i` (0-based) of `n`.
pub(crate) fn trace_path(base: &Path, i: usize, n: usize) -> PathBuf {
    if n == 1 {
        return base.to_path_buf();
    }
    let stem = base.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.run{}.{}", i + 1, ext.to_string_lossy()),
        None => format!("{stem}.run{}", i + 1),
    };
    base.with_file_name(name)
}

/// One line per run's trace file written with `--trace base`: `what` and
/// the run's number name it.
pub(crate) fn print_trace_paths(base: &Path, n: usize, what: &str) {
    for i in 0..n {
        println!("trace     {} ({what} {}, tracefs text)", trace_path(base, i, n).display(), i + 1);
    }
}

/// A guest run and its analysis.
pub(crate) type AnalysedRun = (RealRun, Report);

/// Boot, run, and analyse each run as a real one (work conservation with
/// `grace_ns`); with `trace`, run `i` of `n` is written to [`trace_path`].
pub(crate) fn vm_runs(
    settings: &RealSettings,
    vm: &VmSettings,
    features: &[String],
    alternate: &[Vec<String>],
    trace: Option<&Path>,
    grace_ns: u64,
) -> Result<(Scenario, VmResult, Vec<AnalysedRun>), String> {
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
    let result = run_vm(&scenario, &opts, &mut |line| eprintln!("vm: {line}")).map_err(|e| e.to_string())?;
    let n = result.runs.len();
    let mut runs = Vec::new();
    for (i, r) in result.runs.iter().enumerate() {
        let mut o = opts.real.clone();
        o.kernel_settings_applied = true;
        o.trace_out = trace.map(|t| trace_path(t, i, n));
        let run = assemble(&scenario, &o, r.capture.clone()).map_err(|e| format!("run {}: {e}", i + 1))?;
        let report = analyze_run(&scenario, &run.trace, run.end_ns, run.allowed.clone(), &run.tids(), grace_ns);
        runs.push((run, report));
    }
    Ok((scenario, result, runs))
}

/// The guest's header lines: kernel, machine, accelerator, command line,
/// settings as read back, timing.
pub(crate) fn print_vm_header(r: &VmResult) {
    println!(
        "guest     {} (uname -r {}), {} vCPUs, {} MB; {}",
        r.kernel_label, r.guest.kernel, r.cpus, r.memory_mb, r.accel.why
    );
    if r.icount {
        println!("          -icount shift=0,sleep=off,align=off: guest time is virtual (1 instruction per ns)");
    }
    println!("cmdline   {}", r.kernel_cmdline);
    for a in &r.guest.applied {
        println!("applied   {a}");
    }
    if r.guest.applied.is_empty() {
        println!("applied   nothing: the guest kernel's defaults");
    }
    println!("features  {}", r.guest.features_after);
    println!(
        "          changed from the kernel's boot defaults: {}",
        feature_changes(&r.guest.features_before, &r.guest.features_after)
    );
    for n in &r.notes {
        println!("note      {n}");
    }
    let walls: Vec<String> = r.runs.iter().map(|r| format!("{:.1}", r.wall_s)).collect();
    println!(
        "time      boot {:.1} s (init at guest uptime {:.1} s), run{} {} s, total {:.1} s wall",
        r.boot_s,
        r.guest.uptime_at_init_s,
        if walls.len() > 1 { "s" } else { "" },
        walls.join(" "),
        r.total_s
    );
    println!("qemu      {}", r.qemu_command);
}

/// `NO_RT_PUSH_IPI (was RT_PUSH_IPI)` for each feature whose state differs.
pub(crate) fn feature_changes(before: &str, after: &str) -> String {
    let was: Vec<&str> = before.split_whitespace().collect();
    let changed: Vec<String> = after
        .split_whitespace()
        .filter(|f| !was.contains(f))
        .map(|f| {
            let old = f.strip_prefix("NO_").map_or_else(|| format!("NO_{f}"), str::to_string);
            format!("{f} (was {old})")
        })
        .collect();
    if changed.is_empty() {
        "none".into()
    } else {
        changed.join(", ")
    }
}

fn ms(ns: u64) -> String {
    format!("{}.{:03} ms", ns / 1_000_000, ns / 1000 % 1000)
}

/// One line per run: capture size, handoffs, stalls, each measure.
/// `labels`: each run's setting, when there are several.
pub(crate) fn render_runs(scenario: &Scenario, runs: &[(RealRun, Report)], labels: &[String]) -> String {
    let mut out = String::new();
    let width = labels.iter().map(String::len).max().unwrap_or(0);
    for (i, (run, r)) in runs.iter().enumerate() {
        let mut cols = vec![format!("run {:>2}", i + 1)];
        if let Some(l) = labels.get(i) {
            cols.push(format!("{l:<width$}"));
        }
        cols.push(format!("{} events", run.trace.events.len()));
        if run.lost_events > 0 {
            cols.push(format!("{} lost", run.lost_events));
        }
        let handoffs = r.handoffs();
        if handoffs > 0 {
            let mut all: Vec<u64> = r.metrics.tasks.iter().flat_map(|t| t.handoff_samples.iter().copied()).collect();
            all.sort_unstable();
            let pct = |p: u32| schedlab_analysis::percentile(&all, p).map_or("-".into(), |v| format!("{}", v / 1000));
            cols.push(format!(
                "{} handoffs (p50 {} us, p99 {} us), {} stalls >= {} us ({:.1} %)",
                handoffs,
                pct(500),
                pct(990),
                r.metrics.stalls.len(),
                scenario.stall_threshold_ns / 1000,
                100.0 * r.metrics.stalls.len() as f64 / handoffs as f64
            ));
        }
        for m in &r.measures {
            let vals: Vec<String> = m.intervals_ns.iter().map(|&v| ms(v)).collect();
            let open = m.unfinished_ns.map(|v| format!(" (open at end: {})", ms(v))).unwrap_or_default();
            let shown = if vals.is_empty() { "-".to_string() } else { vals.join(", ") };
            cols.push(format!("{}: {shown}{open}, moved {}", m.name, m.moved));
        }
        out.push_str(&cols.join("  "));
        out.push('\n');
    }
    out
}

/// The measures of each run as the sweep keeps them.
pub(crate) fn measure_runs(reports: &[&Report]) -> Vec<Vec<MeasureRun>> {
    reports.iter().map(|r| r.measures.iter().map(MeasureRun::from).collect()).collect()
}

pub fn vm(args: VmArgs) -> Result<(), String> {
    let alternate = parse_settings(&args.settings);
    let (scenario, result, runs) =
        vm_runs(&args.settings_real, &args.vm, &args.features, &alternate, args.trace.as_deref(), args.report.grace)?;
    let labels: Vec<String> = if alternate.is_empty() {
        Vec::new()
    } else {
        result.runs.iter().map(|r| setting_label(&alternate[r.setting])).collect()
    };
    if args.json {
        let runs_json: Vec<serde_json::Value> = result
            .runs
            .iter()
            .zip(&runs)
            .map(|(r, (run, report))| {
                serde_json::json!({
                    "setting": alternate.get(r.setting).map(|s| setting_label(s)),
                    "features": r.features,
                    "wall_s": r.wall_s,
                    "window_ns": [run.start_ns, run.end_ns],
                    "events": run.trace.events.len(),
                    "lost_events": run.lost_events,
                    "notes": run.notes,
                    "threads": run.threads,
                    "metrics": report.metrics,
                    "work_conservation": report.workcons,
                    "attribution": report.attribution,
                    "measures": report.measures,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "scenario": scenario.name,
            "kernel": result.kernel_label,
            "guest": result.guest,
            "accel": result.accel.why,
            "icount": result.icount,
            "cpus": result.cpus,
            "memory_mb": result.memory_mb,
            "kernel_cmdline": result.kernel_cmdline,
            "qemu_command": result.qemu_command,
            "boot_s": result.boot_s,
            "total_s": result.total_s,
            "notes": result.notes,
            "settings": alternate,
            "runs": runs_json,
        });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!("scenario  {} ({})", scenario.name, scenario.path);
    if !scenario.description.is_empty() {
        println!("          {}", scenario.description);
    }
    print_vm_header(&result);
    if !alternate.is_empty() {
        let sets: Vec<String> = alternate.iter().map(|s| setting_label(s)).collect();
        println!(
            "settings  in turn, {} round{}: {} (each written to sched/features and read back before its run)",
            args.vm.runs,
            if args.vm.runs > 1 { "s" } else { "" },
            sets.join(" | ")
        );
    }
    let mut notes: Vec<&String> = runs.iter().flat_map(|(r, _)| r.notes.iter()).collect();
    notes.sort();
    notes.dedup();
    for n in notes {
        println!("note      {n}");
    }
    println!();
    if runs.len() == 1 {
        let (run, report) = &runs[0];
        print_report(report, &run.trace.table, args.report.stalls);
    } else {
        print!("{}", render_runs(&scenario, &runs, &labels));
        if !scenario.measures.is_empty() {
            let per_run = measure_runs(&runs.iter().map(|(_, r)| r).collect::<Vec<_>>());
            let rows: Vec<(String, Vec<&[MeasureRun]>)> = if alternate.is_empty() {
                vec![(format!("guest {}", result.guest.kernel), per_run.iter().map(Vec::as_slice).collect())]
            } else {
                alternate
                    .iter()
                    .enumerate()
                    .map(|(k, set)| {
                        let mine = result.runs.iter().zip(&per_run).filter(|(r, _)| r.setting == k);
                        (setting_label(set), mine.map(|(_, m)| m.as_slice()).collect())
                    })
                    .collect()
            };
            println!();
            print!("{}", schedlab_sweep::render_measure_table(&measure_infos(&scenario), &rows));
        }
    }
    if let Some(t) = &args.trace {
        println!();
        print_trace_paths(t, runs.len(), "run");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_changes_name_old_and_new_state() {
        assert_eq!(feature_changes("A NO_B C", "A NO_B C"), "none");
        assert_eq!(
            feature_changes("RT_PUSH_IPI DELAY_DEQUEUE", "NO_RT_PUSH_IPI DELAY_DEQUEUE"),
            "NO_RT_PUSH_IPI (was RT_PUSH_IPI)"
        );
        assert_eq!(feature_changes("NO_HRTICK", "HRTICK"), "HRTICK (was NO_HRTICK)");
    }

    #[test]
    fn settings_parse_and_label() {
        let sets = parse_settings(&["NO_RT_PUSH_IPI".into(), "-".into(), "A, NO_B".into()]);
        assert_eq!(sets, vec![vec!["NO_RT_PUSH_IPI".to_string()], vec![], vec!["A".to_string(), "NO_B".to_string()]]);
        assert_eq!(setting_label(&sets[1]), "(base)");
        assert_eq!(setting_label(&sets[2]), "A,NO_B");
    }

    #[test]
    fn trace_paths_per_run() {
        assert_eq!(trace_path(Path::new("/t/x.txt"), 0, 1), Path::new("/t/x.txt"));
        assert_eq!(trace_path(Path::new("/t/x.txt"), 2, 5), Path::new("/t/x.run3.txt"));
        assert_eq!(trace_path(Path::new("x"), 0, 2), Path::new("x.run1"));
    }
}
