//! The header lines of a real kernel's run: on this host (`schedlab real`,
//! `compare`) or in a QEMU guest (`schedlab vm`, `compare --vm`). The
//! runner and VM crates' records are copied into plain fields here, so the
//! report layer depends on neither.

use std::fmt::Write as _;
use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_trace::TaskTable;

use crate::run::{cpulist, fmt_secs, render_report, Report};
use crate::runs::feature_changes;

/// `scenario  NAME (PATH)`, and with `description` the scenario's
/// description under it when it has one.
pub fn render_scenario_line(s: &Scenario, description: bool) -> String {
    let mut out = format!("scenario  {} ({})\n", s.name, s.path);
    if description && !s.description.is_empty() {
        let _ = writeln!(out, "          {}", s.description);
    }
    out
}

/// `schedlab real`'s whole text report.
pub struct RealText<'a> {
    pub scenario: &'a Scenario,
    pub header: RealHeader<'a>,
    pub report: &'a Report,
    /// The capture's task names.
    pub table: &'a TaskTable,
    /// Narratives of the first N stalls.
    pub narratives: usize,
    /// Where `--trace` wrote the capture.
    pub trace_file: Option<&'a Path>,
}

impl RealText<'_> {
    pub fn render(&self) -> String {
        let mut out = render_scenario_line(self.scenario, true);
        out.push_str(&self.header.render());
        out.push('\n');
        out.push_str(&render_report(self.report, self.table, self.narratives));
        if let Some(path) = self.trace_file {
            out.push('\n');
            let _ = writeln!(
                out,
                "trace     {} ({} events captured, tracefs text)",
                path.display(),
                self.header.events_captured
            );
        }
        out
    }
}

/// A run on this host's kernel.
pub struct RealHeader<'a> {
    /// `uname -r`, the CPUs the run used, the worker's pid.
    pub kernel: &'a str,
    pub host_cpus: &'a [usize],
    pub worker_pid: i32,
    /// The busy loop's calibration, described.
    pub calibration: String,
    pub notes: &'a [String],
    /// The run's window.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Events in the whole capture, in the window, and lost.
    pub events_captured: usize,
    pub events: usize,
    pub lost_events: u64,
    /// One row per scenario cgroup (empty without cgroups).
    pub cgroups: Vec<CgroupRow>,
}

/// A scenario cgroup in a real run: the CPU time its threads got (from the
/// trace) and the kernel's CFS bandwidth counters (`cpu.stat`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CgroupRow {
    pub name: String,
    pub threads: usize,
    /// Its threads' CPU time as the kernel accounted it (each thread's
    /// `CLOCK_THREAD_CPUTIME_ID` over its program): what shares and
    /// bandwidth are enforced on.
    pub cpu_time_ns: u64,
    /// Its threads' time on a CPU in the trace (switch-in to switch-out),
    /// which also counts steal and IRQ time, and is uncertain where the
    /// capture missed switches.
    pub traced_runtime_ns: u64,
    /// `cpu_time_ns` over the run's window (1.0 = one CPU all the time).
    pub cpus_used: f64,
    /// Of the kernel-accounted CPU time of every workload thread.
    pub share_of_workload: f64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    /// The CPU time is its threads' at the start although a thread moves
    /// between groups (no usage counter to read: cgroup v1).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_starting_group: bool,
}

impl CgroupRow {
    /// `web: 2 threads, 503.2 ms CPU time (0.503 CPUs, 50.1 % of the workload's); 10 periods, 5 throttled (231.0 ms)`
    pub fn line(&self) -> String {
        let bw = if self.nr_periods > 0 {
            format!(
                "; {} periods, {} throttled ({:.1} ms)",
                self.nr_periods,
                self.nr_throttled,
                self.throttled_ns as f64 / 1e6
            )
        } else {
            String::new()
        };
        let start = if self.by_starting_group {
            " [threads counted in their starting group: a thread moves, and cgroup v1 has no usage counter]"
        } else {
            ""
        };
        format!(
            "{}: {} thread{}, {:.1} ms CPU time ({:.3} CPUs, {:.1} % of the workload's){bw}{start}",
            self.name,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.cpu_time_ns as f64 / 1e6,
            self.cpus_used,
            self.share_of_workload * 100.0
        )
    }
}

impl RealHeader<'_> {
    /// Host, calibration, notes, capture.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let cpus = cpulist(self.host_cpus.iter().copied());
        let _ = writeln!(out, "host      Linux {}, CPUs {cpus}, worker pid {}", self.kernel, self.worker_pid);
        let _ = writeln!(out, "calibr.   {}", self.calibration);
        for note in self.notes {
            let _ = writeln!(out, "note      {note}");
        }
        for row in &self.cgroups {
            let _ = writeln!(out, "cgroup    {}", row.line());
        }
        let _ = writeln!(
            out,
            "run       {} on the host kernel; {} events captured, {} in the run's window, {} lost",
            fmt_secs(self.end_ns - self.start_ns),
            self.events_captured,
            self.events,
            self.lost_events
        );
        out
    }
}

/// A QEMU guest's session.
pub struct GuestHeader<'a> {
    /// How the kernel was named, its `uname -r`, the guest's size.
    pub kernel_label: &'a str,
    pub kernel: &'a str,
    pub cpus: usize,
    pub memory_mb: u64,
    /// Why KVM or TCG.
    pub accel: &'a str,
    pub icount: bool,
    pub kernel_cmdline: &'a str,
    /// What the guest applied, and `sched/features` before and after.
    pub applied: &'a [String],
    pub features_before: &'a str,
    pub features_after: &'a str,
    pub notes: &'a [String],
    /// Seconds: the boot, init's guest uptime, each run, the whole session.
    pub boot_s: f64,
    pub uptime_at_init_s: f64,
    pub run_walls_s: Vec<f64>,
    pub total_s: f64,
    pub qemu_command: &'a str,
}

impl GuestHeader<'_> {
    /// Kernel, machine, accelerator, command line, settings as read back,
    /// timing.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "guest     {} (uname -r {}), {} vCPUs, {} MB; {}",
            self.kernel_label, self.kernel, self.cpus, self.memory_mb, self.accel
        );
        if self.icount {
            out.push_str(
                "          -icount shift=0,sleep=off,align=off: guest time is virtual (1 instruction per ns)\n",
            );
        }
        let _ = writeln!(out, "cmdline   {}", self.kernel_cmdline);
        for a in self.applied {
            let _ = writeln!(out, "applied   {a}");
        }
        if self.applied.is_empty() {
            out.push_str("applied   nothing: the guest kernel's defaults\n");
        }
        let _ = writeln!(out, "features  {}", self.features_after);
        let _ = writeln!(
            out,
            "          changed from the kernel's boot defaults: {}",
            feature_changes(self.features_before, self.features_after)
        );
        for n in self.notes {
            let _ = writeln!(out, "note      {n}");
        }
        let walls: Vec<String> = self.run_walls_s.iter().map(|w| format!("{w:.1}")).collect();
        let _ = writeln!(
            out,
            "time      boot {:.1} s (init at guest uptime {:.1} s), run{} {} s, total {:.1} s wall",
            self.boot_s,
            self.uptime_at_init_s,
            if walls.len() > 1 { "s" } else { "" },
            walls.join(" "),
            self.total_s
        );
        let _ = writeln!(out, "qemu      {}", self.qemu_command);
        out
    }
}
