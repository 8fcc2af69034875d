//! Short real measurements of what sysfs cannot say, for
//! `schedlab topologies --host`: how long a wakeup takes after the target
//! CPU idled for a while, the same onto a busy CPU, the same for a wakeup
//! by the CPU's own timer, a same-CPU context
//! switch, and the interference a spinning thread sees.
//!
//! Every probe thread is pinned, SCHED_OTHER (the busy probe's spinner at
//! nice 19), and stops at its own deadline; futex waits time out, so a lost
//! wakeup costs one timeout, not a hang. Nothing outside this process is
//! changed: no RT priority, no knob, no cgroup. No root needed.
//!
//! The arithmetic that turns samples into topology values lives with the
//! topology (`schedlab_topology::host`), where it is tested on synthetic
//! samples.

mod error;
mod futex;
mod line;
mod noise;
mod switch;
mod syscall;
mod timer;
mod wake;
mod window;

use std::time::Instant;

use schedlab_topology::host::{HostMachine, Measured};

pub use error::ProbeError;
pub use line::line_probe;
pub use noise::noise_probe;
pub use switch::switch_probe;
pub use syscall::{capture_cost_probe, futex_probe, syscall_probe, CaptureCosts};
pub use timer::timer_probe;
pub use wake::{wake_probe, IDLE_LENGTHS_NS};
pub use window::window_probe;

/// How much each probe measures.
#[derive(Clone, Debug)]
pub struct ProbeBudget {
    /// Idle lengths to measure after, ns.
    pub idle_lengths_ns: Vec<u64>,
    /// Time each idle length may take, ns (samples = this / (length + 30 us)).
    pub per_length_ns: u64,
    pub min_samples: usize,
    pub max_samples: usize,
    /// Sweeps over the idle lengths the samples are spread over.
    pub passes: usize,
    /// Wakeups onto the busy CPU.
    pub busy_samples: usize,
    /// Context switch: batches x round trips per batch.
    pub switch_batches: usize,
    pub switch_round_trips: usize,
    /// How long the noise spinners run, ns.
    pub noise_ns: u64,
    /// The blocking-window probe's samples per delay (61 delays).
    pub window_samples: usize,
}

impl ProbeBudget {
    /// What `schedlab topologies --host` runs: about 2.5 s per distance
    /// level, 2 s of timer wakeups on one CPU and 1 s of noise.
    pub fn full() -> ProbeBudget {
        ProbeBudget {
            idle_lengths_ns: IDLE_LENGTHS_NS.to_vec(),
            per_length_ns: 300_000_000,
            min_samples: 20,
            max_samples: 500,
            passes: 4,
            busy_samples: 500,
            switch_batches: 21,
            switch_round_trips: 1000,
            noise_ns: 1_000_000_000,
            window_samples: 100,
        }
    }

    /// A few hundred milliseconds in all, for tests.
    pub fn quick() -> ProbeBudget {
        ProbeBudget {
            idle_lengths_ns: vec![5_000, 50_000, 200_000, 1_000_000],
            per_length_ns: 10_000_000,
            min_samples: 5,
            max_samples: 40,
            passes: 1,
            busy_samples: 40,
            switch_batches: 5,
            switch_round_trips: 200,
            noise_ns: 100_000_000,
            window_samples: 10,
        }
    }

    pub(crate) fn samples_for(&self, idle_ns: u64) -> usize {
        ((self.per_length_ns / (idle_ns + 30_000)) as usize).clamp(self.min_samples, self.max_samples)
    }
}

/// Run every probe on `host`'s CPUs; `progress` gets one line per step.
/// A probe that cannot run (one CPU, CPUs outside this process's affinity)
/// is skipped with a note in the result.
pub fn run_probes(host: &HostMachine, budget: &ProbeBudget, progress: &mut dyn FnMut(&str)) -> Measured {
    let start = Instant::now();
    let mut m = Measured::default();
    let allowed = crate::sys::allowed_cpus().unwrap_or_default();
    let cpus: Vec<usize> = host.sysfs_ids().into_iter().filter(|c| allowed.contains(c)).collect();
    if cpus.len() < host.cpus.len() {
        m.notes.push(format!(
            "this process may run on CPUs {:?} only (affinity/cpuset): the others were not probed",
            cpus
        ));
    }
    if cpus.len() < 2 {
        m.notes.push("fewer than 2 usable CPUs: no cross-CPU wakeup probe".into());
    }
    for (level, waker, wakee) in host.probe_pairs() {
        if !(cpus.contains(&waker) && cpus.contains(&wakee)) {
            continue;
        }
        progress(&format!(
            "wakeup {waker} -> {wakee} ({} level) after idle lengths 5us..20ms, then onto a busy CPU",
            level.as_str()
        ));
        match wake_probe(level, waker, wakee, budget) {
            Ok(w) => m.wake.push(w),
            Err(e) => m.notes.push(format!("wakeup probe {waker}->{wakee}: {e}")),
        }
    }
    if let Some(&cpu) = cpus.last() {
        progress(&format!(
            "timer wakeup: absolute sleeps on CPU {cpu} after idle lengths 5us..20ms, then with the CPU busy"
        ));
        match timer_probe(cpu, budget) {
            Ok(t) => m.timer = Some(t),
            Err(e) => m.notes.push(format!("timer probe on CPU {cpu}: {e}")),
        }
    }
    if let Some((_, waker, waiter)) =
        host.probe_pairs().into_iter().find(|(_, w, v)| cpus.contains(w) && cpus.contains(v))
    {
        progress(&format!("cache line {waker} <-> {waiter}: one-way latency of an atomic ping-pong"));
        match line_probe(waker, waiter) {
            Ok(p) => m.line = Some(p),
            Err(e) => m.notes.push(format!("cache-line probe {waker}<->{waiter}: {e}")),
        }
        progress(&format!(
            "blocking window: FUTEX_WAIT on CPU {waiter}, FUTEX_WAKE from CPU {waker} 0-3 us after its call"
        ));
        match window_probe(waker, waiter, budget) {
            Ok(w) => match w.end() {
                Some(end) => m.window = Some(end),
                None => m.notes.push(format!(
                    "blocking-window probe {waker}->{waiter}: the waits never all slept within 3 us ({:?})",
                    w.points.last()
                )),
            },
            Err(e) => m.notes.push(format!("blocking-window probe {waker}->{waiter}: {e}")),
        }
    }
    if let Some(&cpu) = cpus.last() {
        progress(&format!("context switch: futex ping-pong on CPU {cpu}"));
        match switch_probe(cpu, budget) {
            Ok(s) => m.switch = Some(s),
            Err(e) => m.notes.push(format!("context switch probe: {e}")),
        }
    }
    if let Some(&cpu) = cpus.last() {
        progress(&format!("syscall cost, and a capture's (trace_marker write, sched tracepoints) on CPU {cpu}"));
        match std::thread::scope(|s| s.spawn(|| syscall_probe(cpu)).join()) {
            Ok(Ok(p)) => m.syscall = Some(p),
            Ok(Err(e)) => m.notes.push(format!("syscall probe: {e}")),
            Err(_) => m.notes.push("syscall probe thread panicked".into()),
        }
        match std::thread::scope(|s| s.spawn(|| futex_probe(cpu)).join()) {
            Ok(Ok((wait, wake))) => {
                m.futex_wait_eagain = Some(wait);
                m.futex_wake_none = Some(wake);
            }
            Ok(Err(e)) => m.notes.push(format!("futex probe: {e}")),
            Err(_) => m.notes.push("futex probe thread panicked".into()),
        }
        let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
        match capture_cost_probe(cpu, &others, budget) {
            Ok(c) => {
                m.marker = Some(c.marker);
                m.tracepoint = c.tracepoint;
                m.events_per_handoff = Some(c.events_per_handoff);
                match c.timer_wake_to_switch {
                    Ok(p) => m.timer_wake_to_switch = Some(p),
                    Err(e) => m.notes.push(format!("timer wakeup-to-switch (capture probe): {e}")),
                }
                match c.timer_idle_wake_to_switch {
                    Ok(p) => m.timer_idle_wake_to_switch = Some(p),
                    Err(e) => m.notes.push(format!("timer wakeup-to-switch from idle (capture probe): {e}")),
                }
            }
            Err(e) => m.notes.push(format!("capture cost probe: {e}")),
        }
    }
    if !cpus.is_empty() {
        progress(&format!(
            "noise: a clock-reading spinner on each of CPUs {cpus:?} for {} ms",
            budget.noise_ns / 1_000_000
        ));
        match noise_probe(&cpus, budget.noise_ns) {
            Ok(n) => m.noise = Some(n),
            Err(e) => m.notes.push(format!("noise probe: {e}")),
        }
    }
    m.elapsed_ns = start.elapsed().as_nanos() as u64;
    m
}

/// Times a round is run at most when it keeps coming back disturbed.
pub const PROBE_ATTEMPTS: usize = 3;

/// `rounds` rounds of [`run_probes`] with the full budget, merged
/// (`schedlab topologies --host`, `fidelity --probe`). A round another task
/// or the hypervisor disturbed (a wakeup of 100 ms or more) is run again,
/// at most twice; what is still beyond bounds after that is written as not
/// measured. `log` hears each probe's line (after "round K/N: " when there
/// are several rounds), each rerun, and each note of the merged result.
pub fn measure_rounds(machine: &HostMachine, rounds: usize, log: &mut dyn FnMut(&str)) -> Measured {
    let runs: Vec<Measured> = (1..=rounds)
        .map(|k| {
            let round = if rounds > 1 { format!("round {k}/{rounds}: ") } else { String::new() };
            let probe = |log: &mut dyn FnMut(&str)| {
                run_probes(machine, &ProbeBudget::full(), &mut |line| log(&format!("{round}{line}")))
            };
            let mut m = probe(log);
            for attempt in 2..=PROBE_ATTEMPTS {
                let disturbed = m.disturbed();
                if disturbed.is_empty() {
                    break;
                }
                log(&format!(
                    "{round}disturbed ({}); running it again ({attempt} of {PROBE_ATTEMPTS})",
                    disturbed.join("; ")
                ));
                m = probe(log);
            }
            m
        })
        .collect();
    let m = schedlab_topology::host::merge_rounds(&runs);
    for note in &m.notes {
        log(&format!("skipped/failed: {note}"));
    }
    m
}

/// What `schedlab topologies --host` reads and measures, as its help says:
/// kept beside the code that does it.
pub const HOST_HELP: &str = "\
--host reads:
  /sys/devices/system/cpu/{online,possible}, cpuN/topology/{thread_siblings_list,physical_package_id,
  core_id,die_id}, cpuN/cache/index*/{level,type,shared_cpu_list} (the LLC), cpuN/cpu_capacity,
  cpuN/cpufreq/amd_pstate_prefcore_ranking or cpuN/acpi_cppc/highest_perf (ITMT priorities),
  /sys/devices/system/node/nodeN/cpulist, /proc/sys/kernel/sched_itmt_enabled,
  /sys/devices/system/cpu/cpuidle/{current_driver,current_governor}, cpuN/cpuidle/stateK/
  {name,desc,latency,residency,disable}, /sys/module/haltpoll/parameters/*,
  /boot/config-$(uname -r) or /proc/config.gz (HZ, CONFIG_PREEMPT_*), /proc/cmdline (preempt=, idle=),
  /sys/kernel/debug/sched/preempt if debugfs is mounted (it is never mounted for you).
--host measures (each probe pinned, SCHED_OTHER, with a deadline; no root needed, nothing changed):
  wakeup latency from one CPU to another after 5us..20ms of idle, per distance level (SMT sibling,
    shared LLC, other LLC, other package): -> the halt state's exit_latency_by_idle;
  the same wakeup onto a CPU busy with a nice-19 spinner -> [costs.<level>] ipi;
  same-CPU futex ping-pong (round trip / 2) -> context_switch_ns;
  a clock-reading spinner per CPU for 1 s (gaps >= 2us), /proc/stat steal and /proc/interrupts -> [[noise]]
    (the tick; the kernel's other interrupts; gaps beyond what it counted: time outside the kernel).
Every value in the output says where it came from: [path], [measured: probe ...] or [assumed: why].
Progress goes to stderr.";

/// This machine as a topology TOML (`schedlab topologies --host`,
/// `fidelity --probe`): sysfs and procfs, and unless `no_probe` the probes,
/// `rounds` times. `name` is the file's `name` line (none: the loader names
/// it after the file); the header says it was made by `command`, and when.
/// `log` hears what was read, then each probe's line (after `probe: `).
pub fn host_text(
    no_probe: bool,
    rounds: usize,
    name: Option<&str>,
    command: &str,
    log: &mut dyn FnMut(&str),
) -> Result<String, schedlab_topology::host::HostError> {
    let machine = schedlab_topology::host::read_host(std::path::Path::new("/"))?;
    log(&format!(
        "read {} CPUs, cpuidle driver {}, HZ={}, preempt={}",
        machine.cpus.len(),
        machine.idle.driver.value,
        machine.hz.value,
        machine.preempt.value
    ));
    let measured = if no_probe {
        None
    } else {
        Some(measure_rounds(&machine, rounds, &mut |line| log(&format!("probe: {line}"))))
    };
    let opts = schedlab_topology::host::RenderOptions {
        name: name.map(str::to_string),
        header: vec![format!("Generated by `{command}` on {} (UTC).", today())],
    };
    schedlab_topology::host::host_toml(&machine, measured.as_ref(), &opts)
}

/// Today's UTC date, YYYY-MM-DD (days since the epoch to a civil date).
fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
