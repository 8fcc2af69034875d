//! The `--json` documents of `run`, `real`, `vm` and `sweep`, each with a
//! `format` version so that a reader can tell a changed layout from a
//! changed result. The real kernel's own records (calibration, threads,
//! the guest) come from the runner and the VM crates, which the report
//! layer does not depend on: they are type parameters here.

use std::collections::BTreeMap;

use schedlab_analysis::{Attribution, MeasureResult, RunMetrics, WorkConservation};
use serde::Serialize;

use crate::run::Report;
use crate::{AbReport, SweepResult};

/// The version every document here carries as `format`.
pub const FORMAT_VERSION: u32 = 1;

/// A run report's analysis, as every document embeds it.
#[derive(Serialize)]
pub struct AnalysisJson<'a> {
    pub metrics: &'a RunMetrics,
    pub work_conservation: &'a WorkConservation,
    pub attribution: &'a Attribution,
    pub measures: &'a [MeasureResult],
    /// Per-phase figures from rt-app's own markers; only when the trace has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtapp: Option<RtAppJson>,
    /// SCHED_DEADLINE tasks' jobs, misses and throttled time; only when
    /// the scenario has deadline tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<&'a schedlab_analysis::DeadlineReport>,
}

impl<'a> From<&'a Report> for AnalysisJson<'a> {
    fn from(r: &'a Report) -> Self {
        AnalysisJson {
            metrics: &r.metrics,
            work_conservation: &r.workcons,
            attribution: &r.attribution,
            measures: &r.measures,
            rtapp: (!r.rtapp.is_empty()).then(|| RtAppJson::from(&r.rtapp)),
            deadline: (!r.deadline.is_empty()).then_some(&r.deadline),
        }
    }
}

/// [`schedlab_analysis::RtAppReport`] as `--json` writes it: the printed
/// table's figures, `null` where the markers cannot support one (rt-app
/// 1.0 writes no `rtapp_stats`, so no wu_lat or slack).
#[derive(Serialize)]
pub struct RtAppJson {
    pub phases: Vec<RtAppPhaseJson>,
    /// End markers without their start, and stats without a pass.
    pub unpaired: u64,
}

#[derive(Serialize)]
pub struct RtAppPhaseJson {
    pub pid: i32,
    pub comm: String,
    pub phase: u32,
    pub passes: u64,
    /// Pass wall time (start marker to end marker), ns.
    pub pass_ns: Quantiles,
    /// From `rtapp_stats`, us as rt-app logs them.
    pub wu_lat_us: Option<Quantiles>,
    /// Slack clamped at 0 for its quantiles, us; `slack_min_us` unclamped.
    pub slack_us: Option<Quantiles>,
    pub slack_min_us: Option<i64>,
    /// Passes whose timer boundary had already passed (negative slack).
    pub late: Option<u64>,
}

#[derive(Serialize)]
pub struct Quantiles {
    pub count: u64,
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    pub max: Option<u64>,
}

impl Quantiles {
    fn of(s: &schedlab_analysis::LatencySketch) -> Self {
        Quantiles {
            count: s.count(),
            p50: s.percentile(500),
            p90: s.percentile(900),
            p99: s.percentile(990),
            max: s.max(),
        }
    }
}

impl From<&schedlab_analysis::RtAppReport> for RtAppJson {
    fn from(r: &schedlab_analysis::RtAppReport) -> Self {
        let phases = r
            .phases
            .iter()
            .map(|p| {
                let stats = p.wu_lat_us.count() > 0;
                RtAppPhaseJson {
                    pid: p.pid,
                    comm: p.comm.clone(),
                    phase: p.phase,
                    passes: p.passes,
                    pass_ns: Quantiles::of(&p.period),
                    wu_lat_us: stats.then(|| Quantiles::of(&p.wu_lat_us)),
                    slack_us: stats.then(|| Quantiles::of(&p.slack_us)),
                    slack_min_us: p.slack_min_us,
                    late: stats.then_some(p.late),
                }
            })
            .collect();
        RtAppJson { phases, unpaired: r.unpaired }
    }
}

/// `schedlab run --json`.
#[derive(Serialize)]
pub struct RunJson<'a> {
    pub format: u32,
    pub scenario: &'a str,
    pub topology: &'a str,
    pub kernel: &'a str,
    pub features_changed: Vec<String>,
    pub seed: u64,
    pub simulated_ns: u64,
    pub notes: &'a [String],
    /// The model's task groups (cgroups and autogroups), as `real` reports them.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub cgroups: &'a [crate::CgroupRow],
    /// The model's schedstats: wakeups by path, CPU classes' busy and newidle time.
    pub why: &'a crate::why::Why,
    #[serde(flatten)]
    pub analysis: AnalysisJson<'a>,
}

/// `schedlab real --json`; `C` is the runner's calibration, `T` its
/// per-thread report, `S` its per-CPU steal.
#[derive(Serialize)]
pub struct RealJson<'a, C: Serialize, T: Serialize, S: Serialize> {
    pub format: u32,
    pub scenario: &'a str,
    pub kernel: &'a str,
    pub host_cpus: &'a [usize],
    pub cpu_map: &'a BTreeMap<usize, usize>,
    pub calibration: &'a C,
    pub notes: &'a [String],
    pub threads: &'a [T],
    pub window_ns: [u64; 2],
    /// Each host CPU's steal over the window, ns (`S`: the runner's row).
    pub steal: &'a [S],
    pub events_captured: usize,
    pub lost_events: u64,
    /// Per scenario cgroup (absent without cgroups).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub cgroups: &'a [crate::real::CgroupRow],
    #[serde(flatten)]
    pub analysis: AnalysisJson<'a>,
}

/// `schedlab vm --json`; `G` is what the guest reported about itself.
#[derive(Serialize)]
pub struct VmJson<'a, G: Serialize, T: Serialize, S: Serialize> {
    pub format: u32,
    pub scenario: &'a str,
    pub kernel: &'a str,
    pub guest: &'a G,
    pub accel: &'a str,
    pub icount: bool,
    pub cpus: usize,
    pub memory_mb: u64,
    pub kernel_cmdline: &'a str,
    pub qemu_command: &'a str,
    pub boot_s: f64,
    pub total_s: f64,
    pub notes: &'a [String],
    pub settings: &'a [Vec<String>],
    pub runs: Vec<VmRunJson<'a, T, S>>,
}

/// One run of `schedlab vm --json`.
#[derive(Serialize)]
pub struct VmRunJson<'a, T: Serialize, S: Serialize> {
    /// The run's feature set, when the runs alternate between several.
    pub setting: Option<String>,
    /// `sched/features` as read back before the run.
    pub features: &'a str,
    pub wall_s: f64,
    pub window_ns: [u64; 2],
    /// Each guest CPU's steal over the window, as the guest counted it.
    pub steal: &'a [S],
    pub events: usize,
    pub lost_events: u64,
    pub notes: &'a [String],
    pub threads: &'a [T],
    /// Per scenario cgroup (absent without cgroups).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<crate::real::CgroupRow>,
    #[serde(flatten)]
    pub analysis: AnalysisJson<'a>,
}

/// `schedlab sweep --json` and `sweep-merge --json`: the result, and the
/// A/B comparison when there is one.
#[derive(Serialize)]
pub struct SweepJson<'a> {
    pub format: u32,
    #[serde(flatten)]
    pub result: &'a SweepResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<&'a AbReport>,
}
