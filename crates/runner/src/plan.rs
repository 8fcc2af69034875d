//! From a scenario to what runs on this host: which host CPUs each thread may
//! use (identity, or `--remap`), how long the run lasts, and what the host
//! run cannot honour (features, kernel profile, fair server), said up front.

use std::collections::BTreeMap;

use schedlab_scenario::{Background, Repeat, Scenario};
use schedlab_topology::CpuSet;
use serde::{Deserialize, Serialize};

use crate::RunnerError;

/// Run-time choices for a real run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RealOptions {
    /// Overrides the scenario's `duration`.
    pub duration_ns: Option<u64>,
    /// Limit for a scenario without a duration (run until every program ends).
    pub max_duration_ns: u64,
    /// Map the scenario's CPUs onto the host's when they do not exist here.
    pub remap: bool,
    /// Per-CPU ring buffer size; default from the duration.
    pub buffer_kb: Option<u64>,
    /// Also capture `sched_stat_runtime`.
    pub stat_runtime: bool,
    /// Apply the scenario's `sched_rt_runtime_us` (saved and restored).
    pub set_rt_runtime: bool,
    /// Skip calibration: busy-loop iterations per microsecond.
    pub loops_per_us: Option<f64>,
    /// Extra feature settings given on the command line (only reported: the
    /// host's sched_features are not changed).
    pub features: Vec<String>,
    /// Write the captured tracefs text here (before it is parsed).
    pub trace_out: Option<std::path::PathBuf>,
    /// The caller applied the scenario's features, fair server runtime and
    /// `sched_rt_runtime_us` itself (a VM guest's init does): the plan does
    /// not note them as left alone.
    #[serde(default)]
    pub kernel_settings_applied: bool,
}

impl Default for RealOptions {
    fn default() -> Self {
        RealOptions {
            duration_ns: None,
            max_duration_ns: 60_000_000_000,
            remap: false,
            buffer_kb: None,
            stat_runtime: false,
            set_rt_runtime: false,
            loops_per_us: None,
            features: Vec::new(),
            trace_out: None,
            kernel_settings_applied: false,
        }
    }
}

/// One scenario thread as it will run here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlan {
    /// Host CPUs it may use.
    pub cpus: Vec<usize>,
    /// Host CPU it starts on (pinned there until the start barrier opens).
    pub start_cpu: Option<usize>,
}

/// The run as planned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The CPUs this process may use.
    pub host_cpus: Vec<usize>,
    /// Scenario CPU → host CPU for every CPU a thread is pinned to (the
    /// identity unless `--remap` moved them).
    pub cpu_map: BTreeMap<usize, usize>,
    pub threads: Vec<ThreadPlan>,
    /// One per [`Scenario::templates`]: the CPUs a forked thread sets.
    #[serde(default)]
    pub templates: Vec<ThreadPlan>,
    /// How long the workload runs (at most [`MAX_DURATION_NS`]). Without a
    /// duration in the scenario the run ends when every program has, or at
    /// this limit at the latest.
    pub duration_ns: u64,
    /// What the host run does not honour, and other facts to print.
    pub notes: Vec<String>,
}

/// The longest run a plan accepts: 24 h. Longer ones are refused up front
/// rather than overflowing the supervisor's and the worker's deadlines.
pub const MAX_DURATION_NS: u64 = 24 * 3600 * 1_000_000_000;

/// `90000 s` for `90_000_000_000_000` ns.
pub(crate) fn seconds(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 / 1e9);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} s")
}

fn cpulist(cpus: &[usize]) -> String {
    cpus.iter().copied().collect::<CpuSet>().to_cpulist()
}

impl Plan {
    /// Plan `scenario` on a host whose usable CPUs are `host_cpus`.
    pub fn new(scenario: &Scenario, opts: &RealOptions, host_cpus: &[usize]) -> Result<Plan, RunnerError> {
        if host_cpus.is_empty() {
            return Err(RunnerError::NoCpus);
        }
        let topo_all = scenario.topology.all_cpus();
        let specs = || scenario.threads.iter().chain(&scenario.templates);
        let pinned: Vec<bool> = specs().map(|t| t.affinity != topo_all).collect();
        let mut used: Vec<usize> = Vec::new();
        for (t, &p) in specs().zip(&pinned) {
            if p {
                used.extend(t.affinity.iter());
            }
            used.extend(t.start_cpu);
            // A `setaffinity` mid-run pins it too (to all CPUs: nothing to map).
            for op in &t.program.ops {
                if let schedlab_scenario::Op::SetAffinity { cpus } = op {
                    if *cpus != topo_all {
                        used.extend(cpus.iter());
                    }
                }
            }
        }
        // A cgroup's cpuset is written on host CPUs too.
        for g in &scenario.cgroups {
            if let Some(c) = g.cpus.filter(|c| *c != topo_all) {
                used.extend(c.iter());
            }
        }
        used.sort_unstable();
        used.dedup();
        let missing: Vec<usize> = used.iter().copied().filter(|c| !host_cpus.contains(c)).collect();
        let mut notes = scenario.notes.clone();
        let cpu_map: BTreeMap<usize, usize> = if missing.is_empty() {
            used.iter().map(|&c| (c, c)).collect()
        } else if opts.remap {
            let map: BTreeMap<usize, usize> =
                used.iter().enumerate().map(|(i, &c)| (c, host_cpus[i % host_cpus.len()])).collect();
            let pairs: Vec<String> = map.iter().map(|(s, h)| format!("{s}->{h}")).collect();
            let shared = if used.len() > host_cpus.len() {
                format!("; {} scenario CPUs share {} host CPUs", used.len(), host_cpus.len())
            } else {
                String::new()
            };
            notes.push(format!("--remap: scenario CPU -> host CPU {}{shared}", pairs.join(", ")));
            map
        } else {
            return Err(RunnerError::CpusMissing {
                scenario: scenario.path.clone(),
                pinned: cpulist(&used),
                allowed: cpulist(host_cpus),
                missing: cpulist(&missing),
                nr_allowed: host_cpus.len(),
            });
        };
        let mut threads: Vec<ThreadPlan> = specs()
            .zip(&pinned)
            .map(|(t, &p)| {
                let mut cpus: Vec<usize> =
                    if p { t.affinity.iter().map(|c| cpu_map[&c]).collect() } else { host_cpus.to_vec() };
                cpus.sort_unstable();
                cpus.dedup();
                ThreadPlan { start_cpu: t.start_cpu.map(|c| cpu_map[&c]), cpus }
            })
            .collect();
        let templates = threads.split_off(scenario.threads.len());

        let (duration_ns, source) = match (opts.duration_ns, scenario.duration_ns) {
            (Some(d), _) => (d, "--duration".to_string()),
            (None, Some(d)) => (d, format!("{}: duration", scenario.path)),
            (None, None) => {
                let forever = scenario.threads.iter().any(|t| t.program.repeat == Repeat::Forever);
                if forever {
                    notes.push(format!(
                        "the scenario has no duration but a thread loops forever: stopping after {} ms",
                        opts.max_duration_ns / 1_000_000
                    ));
                }
                (opts.max_duration_ns, "--max-duration".to_string())
            }
        };
        if duration_ns > MAX_DURATION_NS {
            return Err(RunnerError::TooLong { what: source, duration_ns, max_ns: MAX_DURATION_NS });
        }

        let topo = &scenario.topology;
        if topo.nr_cpus() != host_cpus.len() {
            notes.push(format!(
                "the scenario's topology `{}` has {} CPUs; this run uses the host's {} (CPUs {})",
                topo.name,
                topo.nr_cpus(),
                host_cpus.len(),
                cpulist(host_cpus)
            ));
        }
        let features: Vec<String> =
            scenario.features.iter().map(|f| f.value.clone()).chain(opts.features.iter().cloned()).collect();
        if !features.is_empty() && !opts.kernel_settings_applied {
            notes.push(format!(
                "features {} are not applied: a real run uses the host kernel's sched_features as they are",
                features.join(" ")
            ));
        }
        if scenario.kernel_profile.line != 0 {
            notes.push(format!(
                "kernel profile `{}` is the model's; this run is on the {} kernel {}",
                scenario.kernel_profile.value,
                if opts.kernel_settings_applied { "guest" } else { "host" },
                crate::sys::kernel_release()
            ));
        }
        if scenario.fair_server_runtime_ns.is_some() && !opts.kernel_settings_applied {
            notes.push("fair_server_runtime is not applied (debugfs sched/fair_server is not changed)".into());
        }
        if scenario.background == Background::Kernel {
            notes.push("background = \"kernel\" is the model's; the host has whatever background it has".into());
        }
        if let Some(v) = scenario.sched_rt_runtime_us {
            if !opts.set_rt_runtime && !opts.kernel_settings_applied {
                let now = std::fs::read_to_string(crate::tracefs::RT_RUNTIME).unwrap_or_default();
                if now.trim() != v.to_string() {
                    notes.push(format!(
                        "the scenario sets sched_rt_runtime_us={v} but the host has {}: not changed \
                         (pass --set-rt-runtime to set it for the run)",
                        now.trim()
                    ));
                }
            }
        }
        Ok(Plan { host_cpus: host_cpus.to_vec(), cpu_map, threads, templates, duration_ns, notes })
    }

    /// The CPUs each scenario thread (by index) may use, for the analysis.
    pub fn allowed(&self) -> Vec<Vec<u32>> {
        self.threads.iter().map(|t| t.cpus.iter().map(|&c| c as u32).collect()).collect()
    }

    /// A CPU for the watchdog: one that no RT thread may use if there is one,
    /// else the last host CPU.
    pub fn watchdog_cpu(&self, scenario: &Scenario) -> usize {
        self.watchdog_cpu_within(scenario, &self.host_cpus)
    }

    /// [`Self::watchdog_cpu`] among `usable` (the worker's own CPUs once it
    /// joined the run's cgroup: a cpuset partition takes its CPUs from it);
    /// the plan's choice when none of them is usable.
    pub fn watchdog_cpu_within(&self, scenario: &Scenario, usable: &[usize]) -> usize {
        let rt_cpus: Vec<usize> = scenario
            .threads
            .iter()
            .zip(&self.threads)
            .filter(|(s, _)| s.policy.is_rt())
            .flat_map(|(_, p)| p.cpus.iter().copied())
            .collect();
        let usable: Vec<usize> = self.host_cpus.iter().copied().filter(|c| usable.contains(c)).collect();
        let cpus = if usable.is_empty() { &self.host_cpus } else { &usable };
        cpus.iter().rev().copied().find(|c| !rt_cpus.contains(c)).unwrap_or(*cpus.last().unwrap())
    }

    /// Ring-buffer size per CPU: 2 MB per second of run (asym_min-2cpu's
    /// trace text is under 1 MB/s per CPU, the ring's binary records about
    /// half that), at least 8 MB, at most 512 MB.
    pub fn buffer_kb(&self, opts: &RealOptions) -> u64 {
        opts.buffer_kb
            .unwrap_or_else(|| (self.duration_ns / 1_000_000_000 + 1).saturating_mul(2048).clamp(8192, 524_288))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_str("t.toml", text, Path::new(".")).unwrap()
    }

    const ASYM: &str = r#"
topology = "qemu-4"
duration = "1s"
[[thread]]
name = "worker"
instances = 2
affinity = "2-3"
program = [ { run = "1ms" }, { post = "done{i}" }, { wait = "efd{i}" } ]
[[thread]]
name = "waker"
affinity = "1"
program = [ { poll = "done{*}" }, { signal = "efd{*}" } ]
[[thread]]
name = "free"
program = [ { sleep = "1ms" } ]
"#;

    #[test]
    fn pinned_cpus_missing_on_the_host_are_refused_or_remapped() {
        let s = scenario(ASYM);
        let err = Plan::new(&s, &RealOptions::default(), &[0, 1]).unwrap_err().to_string();
        assert!(err.contains("CPUs 1-3") && err.contains("CPUs 0-1") && err.contains("--remap"), "{err}");

        let opts = RealOptions { remap: true, ..Default::default() };
        let p = Plan::new(&s, &opts, &[0, 1]).unwrap();
        assert_eq!(p.cpu_map, BTreeMap::from([(1, 0), (2, 1), (3, 0)]));
        assert_eq!(p.threads[0].cpus, vec![0, 1]);
        assert_eq!(p.threads[2].cpus, vec![0], "waker on scenario CPU 1 -> host CPU 0");
        assert_eq!(p.threads[3], ThreadPlan { cpus: vec![0, 1], start_cpu: None });
        assert!(p.notes.iter().any(|n| n.contains("1->0, 2->1, 3->0") && n.contains("3 scenario CPUs share 2")));

        let p = Plan::new(&s, &RealOptions::default(), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.cpu_map, BTreeMap::from([(1, 1), (2, 2), (3, 3)]), "the identity without --remap");
        assert_eq!(p.threads[0].cpus, vec![2, 3]);
        assert_eq!(p.duration_ns, 1_000_000_000);
    }

    #[test]
    fn model_only_settings_are_reported_and_the_watchdog_avoids_rt_cpus() {
        let s = scenario(
            r#"
topology = "qemu-4"
kernel = "mainline"
features = ["NO_DELAY_DEQUEUE"]
[[thread]]
name = "rt"
policy = "SCHED_FIFO"
affinity = "3"
loop = 3
program = [ { run = "1ms" } ]
"#,
        );
        let p = Plan::new(&s, &RealOptions::default(), &[0, 1, 2, 3]).unwrap();
        assert_eq!(p.duration_ns, RealOptions::default().max_duration_ns);
        assert!(p.notes.iter().any(|n| n.contains("NO_DELAY_DEQUEUE") && n.contains("not applied")));
        assert!(p.notes.iter().any(|n| n.contains("mainline")));
        assert_eq!(p.watchdog_cpu(&s), 2);
        assert_eq!(p.buffer_kb(&RealOptions::default()), 61 * 2048);
    }

    #[test]
    fn durations_beyond_a_day_are_refused_naming_the_value() {
        let s = scenario(ASYM);
        let host = [0, 1, 2, 3];
        let opts = RealOptions { duration_ns: Some(u64::MAX), ..Default::default() };
        let err = Plan::new(&s, &opts, &host).unwrap_err().to_string();
        assert!(err.contains("--duration") && err.contains(&u64::MAX.to_string()) && err.contains("86400 s"), "{err}");
        let opts = RealOptions { duration_ns: Some(MAX_DURATION_NS + 1), ..Default::default() };
        assert!(Plan::new(&s, &opts, &host).is_err());
        let opts = RealOptions { duration_ns: Some(MAX_DURATION_NS), ..Default::default() };
        assert_eq!(Plan::new(&s, &opts, &host).unwrap().duration_ns, MAX_DURATION_NS);

        let long = scenario(&ASYM.replace("duration = \"1s\"", "duration = \"100000s\""));
        let err = Plan::new(&long, &RealOptions::default(), &host).unwrap_err().to_string();
        assert!(err.contains("t.toml: duration 100000 s"), "{err}");
        let endless =
            scenario("topology = \"qemu-4\"\n[[thread]]\nname = \"t\"\nloop = 3\nprogram = [ { run = \"1ms\" } ]\n");
        let opts = RealOptions { max_duration_ns: 2 * MAX_DURATION_NS, ..Default::default() };
        let err = Plan::new(&endless, &opts, &host).unwrap_err().to_string();
        assert!(err.contains("--max-duration 172800 s"), "{err}");
    }
}
