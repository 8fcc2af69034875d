//! The report's views of real runs: the header lines of a host run and of
//! a guest session, and each run as the runs tables take it.

use schedlab_report::{GuestHeader, GuestRun, RealHeader, Report, RunLine};
use schedlab_runner::RealRun;
use schedlab_scenario::Scenario;
use schedlab_vm::VmResult;

use crate::cgroups::cgroup_rows;
use crate::AnalysedRun;

/// The header lines of a real run: host, calibration, notes, capture.
pub fn real_header<'a>(scenario: &Scenario, run: &'a RealRun, report: &Report) -> RealHeader<'a> {
    RealHeader {
        cgroups: cgroup_rows(scenario, run, report),
        kernel: &run.kernel,
        host_cpus: &run.plan.host_cpus,
        worker_pid: run.worker_pid,
        calibration: run.calibration.describe(),
        notes: &run.notes,
        start_ns: run.start_ns,
        end_ns: run.end_ns,
        events_captured: run.events_captured,
        events: run.trace.events.len(),
        lost_events: run.lost_events,
    }
}

/// The guest's header lines: kernel, machine, accelerator, command line,
/// settings as read back, timing.
pub fn vm_header(r: &VmResult) -> GuestHeader<'_> {
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

/// The runs as the runs table takes them.
pub fn run_lines(runs: &[AnalysedRun]) -> Vec<RunLine<'_>> {
    runs.iter()
        .map(|a| RunLine { events: a.run.trace.events.len(), lost_events: a.run.lost_events, report: &a.report })
        .collect()
}

/// A guest session's runs as the report takes them: the VM's record of
/// each beside its analysis.
pub fn guest_runs<'a>(scenario: &Scenario, result: &'a VmResult, runs: &'a [AnalysedRun]) -> Vec<GuestRun<'a>> {
    result
        .runs
        .iter()
        .zip(runs)
        .map(|(r, a)| GuestRun {
            cgroups: cgroup_rows(scenario, &a.run, &a.report),
            setting: r.setting,
            events: a.run.trace.events.len(),
            lost_events: a.run.lost_events,
            notes: &a.run.notes,
            table: &a.run.trace.table,
            report: &a.report,
        })
        .collect()
}
