//! The guest side: a kernel booted under QEMU with the scenario's settings
//! applied inside it, the scenario run there by the real runner (several
//! runs in one boot, maybe alternating feature sets), each capture read
//! and analysed here as a host run's is.

use std::path::PathBuf;

use schedlab_report::{setting_label, trace_path, AnalysisJson, VmJson, VmRunJson, VmText};
use schedlab_runner::assemble;
use schedlab_scenario::Scenario;
use schedlab_vm::{run_vm, VmOptions, VmResult};

use crate::headers::{guest_runs, vm_header};
use crate::host::analyze_real;
use crate::{AnalysedRun, Side, SideError};

/// A QEMU guest as a side.
pub struct Guest {
    pub options: VmOptions,
    /// Where run `i` of `n` writes its capture ([`trace_path`]).
    pub trace: Option<PathBuf>,
    /// The analysis's grace window for work conservation.
    pub grace_ns: u64,
}

/// One boot's runs: the VM's record of the session and each run analysed.
pub struct GuestSession {
    pub vm: VmResult,
    pub runs: Vec<AnalysedRun>,
}

impl Guest {
    /// The side, refusing a `--trace -` (stdout carries the report).
    pub fn new(options: VmOptions, trace: Option<PathBuf>, grace_ns: u64) -> Result<Guest, SideError> {
        if trace.as_deref().is_some_and(schedlab_trace::files::is_stdout) {
            return Err(SideError::TraceToStdout);
        }
        Ok(Guest { options, trace, grace_ns })
    }
}

impl Side for Guest {
    type Runs = GuestSession;

    fn run(&self, scenario: &Scenario, log: &mut dyn FnMut(&str)) -> Result<GuestSession, SideError> {
        let vm = run_vm(scenario, &self.options, log)?;
        let n = vm.runs.len();
        let mut runs = Vec::new();
        for (i, r) in vm.runs.iter().enumerate() {
            let mut o = self.options.real.clone();
            o.kernel_settings_applied = true;
            o.trace_out = self.trace.as_deref().map(|t| trace_path(t, i, n));
            let run =
                assemble(scenario, &o, r.capture.clone()).map_err(|source| SideError::Run { run: i + 1, source })?;
            let report = analyze_real(scenario, &run, self.grace_ns);
            runs.push(AnalysedRun { run, report });
        }
        Ok(GuestSession { vm, runs })
    }
}

impl GuestSession {
    /// `schedlab vm --json`: the session, then each run's record beside its
    /// analysis; `sets` are the alternated feature sets.
    pub fn json(&self, scenario: &Scenario, sets: &[Vec<String>]) -> Result<String, SideError> {
        let result = &self.vm;
        let runs = result
            .runs
            .iter()
            .zip(&self.runs)
            .map(|(r, a)| VmRunJson {
                setting: sets.get(r.setting).map(|s| setting_label(s)),
                features: &r.features,
                wall_s: r.wall_s,
                window_ns: [a.run.start_ns, a.run.end_ns],
                steal: &a.run.steal,
                events: a.run.trace.events.len(),
                lost_events: a.run.lost_events,
                notes: &a.run.notes,
                threads: &a.run.threads,
                cgroups: crate::cgroups::cgroup_rows(scenario, &a.run, &a.report),
                analysis: AnalysisJson::from(&a.report),
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
            settings: sets,
            runs,
        };
        Ok(format!("{}\n", schedlab_report::to_json(&doc)?))
    }

    /// `schedlab vm`'s text: the guest's header, a row per run (per set
    /// and round), the first `narratives` stalls told.
    pub fn text(
        &self,
        scenario: &Scenario,
        sets: &[Vec<String>],
        rounds: u32,
        narratives: usize,
        trace_file: Option<&std::path::Path>,
    ) -> String {
        VmText {
            scenario,
            header: vm_header(&self.vm),
            sets,
            rounds,
            runs: &guest_runs(scenario, &self.vm, &self.runs),
            narratives,
            trace_file,
        }
        .render()
    }
}
