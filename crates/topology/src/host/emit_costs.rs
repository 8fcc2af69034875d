//! The measured half of a `--host` file: `[costs]`, `[costs.kernel]`, the
//! jitter note and `[[noise]]`, each value with the probe it came from
//! (split from [`super::emit`], which writes the sysfs half and the file).

use std::fmt::Write as _;

use super::emit::{dur, points};
use super::measured::{
    idle_exit_tail_from_probes, ipi_from_probes, ipi_send_busy_from_probes, ipi_send_curve, irq_shares, split_noise,
    switch_from_probes, switch_net_of_futex, timer_irq_exit_from_probes, timer_irq_from_probes, Measured, NoiseFigures,
};
use super::HostMachine;
use crate::Costs;

pub(super) fn costs_section(o: &mut String, host: &HostMachine, measured: Option<&Measured>) {
    let d = Costs::default();
    let switch = measured.and_then(|m| m.switch);
    let nearest = measured.and_then(|m| m.wake.iter().find(|w| w.busy.is_some()));
    let _ = writeln!(o, "\n[costs]");
    match nearest.and_then(|w| ipi_from_probes(w, switch.as_ref()).map(|v| (w, v))) {
        Some((w, v)) => {
            let _ = writeln!(
                o,
                "# [measured: probe wake {}->{} onto a busy CPU (p50) minus context_switch_ns; the nearest level]\nipi_ns = {}",
                w.waker,
                w.wakee,
                dur(v)
            );
        }
        None => {
            let (v, why) = if host.guest {
                (5_000, "a guest's IPI is a VM exit on the sender and a posted interrupt or exit on the target")
            } else {
                (d.ipi_ns, "the model's bare-metal default")
            };
            let _ = writeln!(o, "# [assumed: {why}]\nipi_ns = {}", dur(v));
        }
    }
    let syscall = measured.and_then(|m| m.syscall);
    let marker = measured.and_then(|m| m.marker);
    let futex = measured.and_then(|m| m.futex_costs());
    let net_switch = |s: &super::measured::Percentiles| {
        let sw = switch_from_probes(s, syscall.as_ref());
        futex.map_or(sw, |f| switch_net_of_futex(sw, f.futex_wait_ns, f.schedule_entry_ns, f.futex_wake_ns))
    };
    match switch {
        Some(s) => {
            let _ = writeln!(
                o,
                "# [measured: probe switch: two threads on one CPU ping-pong through futexes; round trip / 2,\n\
                 # median of {} batches (p99 {}) = {}, minus its two syscalls (2 x syscall_ns below){}, which the\n\
                 # model charges on the ops that make them]\ncontext_switch_ns = {}",
                s.n,
                dur(s.p99).trim_matches('"'),
                dur(s.p50).trim_matches('"'),
                if futex.is_some() {
                    " and the wait's and wake's\n# futex_wait, schedule_entry and futex_wake ([costs.kernel] below)"
                } else {
                    ""
                },
                dur(net_switch(&s))
            );
        }
        None => {
            let _ = writeln!(o, "# [assumed: the model's default]\ncontext_switch_ns = {}", dur(d.context_switch_ns));
        }
    }
    match syscall {
        Some(s) => {
            let _ = writeln!(
                o,
                "# [measured: probe syscall: an eventfd write() with no waiter, median of {} batches (p99 {})]\nsyscall_ns = {}",
                s.n,
                dur(s.p99).trim_matches('"'),
                dur(s.p50)
            );
        }
        None => {
            let _ = writeln!(o, "# syscall_ns: not measured (0: the ops' syscalls are free)");
        }
    }
    match marker {
        Some(m) => {
            let _ = writeln!(
                o,
                "# [measured: probe capture: a write() to trace_marker with the real runner's capture configured,\n\
                 # median of {} batches (p99 {}); charged per workload marker in runs that model a captured one]\n\
                 trace_marker_ns = {}",
                m.n,
                dur(m.p99).trim_matches('"'),
                dur(m.p50)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "# trace_marker_ns: not measured (see the notes above); captured runs are modeled without it"
            );
        }
    }
    match (measured.and_then(|m| m.tracepoint), measured.and_then(|m| m.events_per_handoff)) {
        (Some(t), Some(per)) => {
            let _ = writeln!(
                o,
                "# [measured: probe capture: the same-CPU switch probe with the runner's six sched events enabled,\n\
                 # minus without, per event ({per:.2} events counted per handoff)]\ntracepoint_ns = {}",
                dur(t.p50)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "# tracepoint_ns: not measured (see the notes above); captured runs are modeled without it"
            );
        }
    }
    let model_switch = switch.as_ref().map_or(d.context_switch_ns, net_switch);
    let tracepoint = measured.and_then(|m| m.tracepoint.as_ref());
    let irq_exit = match measured.and_then(|m| m.timer_wake_to_switch.as_ref()) {
        Some(w) => {
            let v = timer_irq_exit_from_probes(w, tracepoint);
            let _ = writeln!(
                o,
                "# [measured: probe capture: timer wakeups onto a busy CPU with the capture recording, each\n\
                 # sched_wakeup to the sched_switch into the woken task (p50 {}, p99 {}, {} pairs){}; floor 0]\n\
                 timer_irq_exit_ns = {}",
                dur(w.p50).replace('"', ""),
                dur(w.p99).replace('"', ""),
                w.n,
                if tracepoint.is_some() { ", minus one tracepoint_ns" } else { "" },
                dur(v)
            );
            v
        }
        None => {
            let _ = writeln!(
                o,
                "# timer_irq_exit_ns: not measured (0: the CPU switches as the timer's callback wakes the task)"
            );
            0
        }
    };
    match measured.and_then(|m| Some((m.timer_idle_wake_to_switch.as_ref()?, m.timer_wake_to_switch.as_ref()?))) {
        Some(((cpu, idle), busy)) => {
            let (p50, p99) = idle_exit_tail_from_probes(idle, busy);
            let _ = writeln!(
                o,
                "# [measured: probe capture: the same from idle (1 ms sleeps on CPU {cpu}, the sched_switch out of the idle\n\
                 # task; p50 {}, p99 {}, {} pairs) minus the busy CPU's p50; floor 0. Held back from the idle exit the\n\
                 # curves give until after the timer's handler]\n\
                 idle_exit_tail_ns = {}\nidle_exit_tail_p99_ns = {}",
                dur(idle.p50).replace('"', ""),
                dur(idle.p99).replace('"', ""),
                idle.n,
                dur(p50),
                dur(p99)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "# idle_exit_tail_ns: not measured (0: all of an idle exit comes before the timer's handler)"
            );
        }
    }
    match measured
        .and_then(|m| m.timer.as_ref())
        .and_then(|t| timer_irq_from_probes(t, model_switch, irq_exit).map(|v| (t, v)))
    {
        Some((t, v)) => {
            let _ = writeln!(
                o,
                "# [measured: probe timer on CPU {}: the oversleep while a nice-19 spinner keeps the CPU busy\n\
                 # (p50 {}) minus context_switch_ns and timer_irq_exit_ns, which the model charges for the rest\n\
                 # of it; floor 0]\n\
                 timer_irq_ns = {}",
                t.cpu,
                t.busy.map_or(String::new(), |b| dur(b.p50).replace('"', "")),
                dur(v)
            );
        }
        None => {
            let _ = writeln!(o, "# timer_irq_ns: not measured (0: a timer's handler runs at its expiry)");
        }
    }
    let _ = writeln!(
        o,
        "# [assumed: the model's default; no probe measures cache refill]\nmigration_cold_ns = {}",
        dur(d.migration_cold_ns)
    );
    let smt = host.cpus.iter().any(|c| host.cpus.iter().filter(|o| o.core == c.core).count() > 1);
    if smt {
        let _ = writeln!(o, "# [assumed: the model's default, ~1.2x per core]\nsmt_speed_pct = {}", d.smt_speed_pct);
    } else {
        let _ = writeln!(o, "# no SMT siblings in sysfs: unused\nsmt_speed_pct = 100");
    }
    let _ = writeln!(o, "# newidle_balance_ns_per_cpu: the model's default (not measured)");
    if let Some(m) = measured {
        kernel_costs(o, m);
        for w in &m.wake {
            if let Some(v) = ipi_from_probes(w, switch.as_ref()) {
                let _ = writeln!(
                    o,
                    "\n[costs.{}]\n# [measured: probe wake {}->{} onto a busy CPU (p50 {}) minus context_switch_ns; floor 0]\n\
                     # migration_cold: not measured, the flat migration_cold_ns applies\nipi = {}",
                    w.level.as_str(),
                    w.waker,
                    w.wakee,
                    w.busy.map_or(String::new(), |b| dur(b.p50).replace('"', "")),
                    dur(v)
                );
            }
        }
        // No [jitter]: its uniform IPI delay would count twice what the
        // measured [[noise]] and exit curves already hold (a busy wakeup's
        // p99 on a shared machine is a tick, not IPI spread).
        let _ = writeln!(o, "\n# [jitter]: none; the measured [[noise]] and exit_latency_by_idle tails stand for it");
    }
}

/// `[costs.kernel]`: what the probes measure of the kernel's own CPU time.
/// Only the IPI's sending is: onto a busy CPU (`ipi_send`) and per idle
/// length of a halted one (`ipi_send_by_idle`). The rest of the paths stay
/// inside the probed switch and syscall costs, and 0 here.
fn kernel_costs(o: &mut String, m: &Measured) {
    let _ = writeln!(o, "\n[costs.kernel]");
    let nearest = m.wake.iter().find(|w| w.send_busy.is_some() || !w.send_by_idle.is_empty());
    let Some(w) = nearest else {
        let _ = writeln!(o, "# ipi_send: not measured (no cross-CPU wakeup probe ran): 0");
        return other_kernel_costs(o, m);
    };
    let busy = w.send_busy.map_or("-".to_string(), |p| {
        format!("p50 {} p99 {}", dur(p.p50).trim_matches('"'), dur(p.p99).trim_matches('"'))
    });
    let _ = writeln!(
        o,
        "# [measured: probe wake {}->{}: how long the waker's FUTEX_WAKE took minus syscall_ns, floor 0: a\n\
         # wakelist add or a direct activation and the IPI, all taken as the IPI's sending, charged to the\n\
         # sender's CPU. Onto the busy CPU (a resched IPI; FUTEX_WAKE {busy}): ipi_send. Onto the CPU idle\n\
         # for each length (the wakee's last step in user space to the waker's call, as for\n\
         # exit_latency_by_idle): ipi_send_by_idle; in a guest the host wakes the halted vCPU inside the\n\
         # sender's exit, dearer the longer it halted. Samples per point: {}]",
        w.waker,
        w.wakee,
        w.send_by_idle.iter().map(|(_, p)| p.n.to_string()).collect::<Vec<_>>().join(", "),
    );
    let futex_wake = m.futex_costs().map_or(0, |f| f.futex_wake_ns);
    match ipi_send_busy_from_probes(w, m.syscall.as_ref(), futex_wake) {
        Some(b) => {
            let _ = writeln!(o, "ipi_send = {}", dur(b));
        }
        None => {
            let _ = writeln!(o, "# ipi_send: not measured (the busy phase failed): 0 onto busy CPUs");
        }
    }
    if let Some(c) = ipi_send_curve(w, m.syscall.as_ref(), futex_wake) {
        points(o, "ipi_send_by_idle", &c);
    }
    other_kernel_costs(o, m);
}

/// The blocking handoff's own steps when their probes ran, then the rest (0).
fn other_kernel_costs(o: &mut String, m: &Measured) {
    if let (Some(f), Some(eagain), Some(win)) = (m.futex_costs(), m.futex_wait_eagain, m.window) {
        let _ = writeln!(
            o,
            "# [measured: probe futex: a FUTEX_WAIT whose word changed (-EAGAIN: hash, bucket lock, read), median of\n\
             # {} batches ({}), minus syscall_ns; a FUTEX_WAKE with nobody queued took {}]\nfutex_wait = {}",
            eagain.n,
            dur(eagain.p50).trim_matches('"'),
            m.futex_wake_none.map_or("-".into(), |p| dur(p.p50).trim_matches('"').to_string()),
            dur(f.futex_wait_ns)
        );
        let _ = writeln!(
            o,
            "# [derived: the waker's bucket lock and unqueue, the same work as futex_wait's]\nfutex_wake = {}",
            dur(f.futex_wake_ns)
        );
        let _ = writeln!(
            o,
            "# [measured: probe window: FUTEX_WAKE from another CPU at a delay after the waiter's call; half of\n\
             # the waits returned without sleeping at {} (all slept from {}, {} samples). In the model a wake\n\
             # reaches the waiter syscall_ns + futex_wake after its call and finds it from futex_wait until\n\
             # schedule_entry later: schedule_entry = {} + syscall_ns + futex_wake - futex_wait]\nschedule_entry = {}",
            dur(win.p50).trim_matches('"'),
            dur(win.max).trim_matches('"'),
            win.n,
            dur(win.p50).trim_matches('"'),
            dur(f.schedule_entry_ns)
        );
    }
    if let Some(l) = m.line {
        let _ = writeln!(
            o,
            "# [measured: probe line: one-way latency of a cache line between the nearest CPUs probed, an atomic\n\
             # ping-pong: p50 {}, p99 {}; not a cost of its own, the unit of the remote paths below]",
            dur(l.p50).trim_matches('"'),
            dur(l.p99).trim_matches('"')
        );
    }
    let _ = writeln!(
        o,
        "# enqueue, dequeue, select, select_per_cpu, wakelist, remote_rq, balance_per_cpu, ipi_receive,\n\
         # hrtimer: 0\n\
         # [assumed: inside the probed context_switch_ns and syscall_ns, or not measured]"
    );
}

pub(super) fn noise_section(o: &mut String, measured: Option<&Measured>, hz: u32) {
    let Some(m) = measured else { return };
    let Some(n) = &m.noise else {
        let _ = writeln!(o, "\n# [[noise]]: none (the noise probe did not run)");
        return;
    };
    let (irq, steal) = split_noise(n);
    let how = format!(
        "probe noise: one spinner per CPU on {} CPUs reads CLOCK_MONOTONIC for {:.2} s; a gap >= {} between\n\
         # two reads is an interruption ({} gaps with an involuntary context switch inside left out: another task ran)",
        n.cpus,
        n.duration_ns as f64 / 1e9,
        dur(n.threshold_ns).replace('"', ""),
        n.preempted
    );
    let entry = |o: &mut String, name: &str, kind: &str, f: &NoiseFigures, what: &str, busy_only: bool| {
        let _ = writeln!(
            o,
            "\n[[noise]]\n# [measured: {how};\n# {what}]\nname = \"{name}\"\nkind = \"{kind}\"\nrate_hz = {:.1}\n\
             duration_p50 = {}\nduration_p99 = {}\nduration_max = {}{}",
            f.rate_hz,
            dur(f.dist.p50),
            dur(f.dist.p99.max(f.dist.p50)),
            dur(f.dist.max.max(f.dist.p99)),
            if busy_only { "\nbusy_only = true" } else { "" }
        );
    };
    match &irq {
        Some(f) => {
            // The spinners keep their CPUs busy, so their gaps include the
            // tick's interrupt (HZ per second), which NOHZ stops on an idle
            // CPU: that share becomes a busy-only source. A gap cannot be
            // told apart as tick or not, so all shares use one distribution.
            let shares = irq_shares(f, n, hz);
            let share = |rate_hz| NoiseFigures { rate_hz, dist: f.dist };
            entry(
                o,
                "tick",
                "irq",
                &share(shares.tick_hz),
                &format!(
                    "{} gaps not counted as steal; HZ = {hz} of their rate are the tick, busy CPUs only",
                    f.dist.n
                ),
                true,
            );
            let counted = n.interrupts.map_or(String::new(), |c| {
                format!(
                    "\n# /proc/interrupts counted {c} on these CPUs over the probe ({:.1}/s per CPU, the tick included)",
                    c as f64 / n.cpu_secs()
                )
            });
            if shares.other_hz >= 1.0 {
                let what = match shares.outside_hz {
                    Some(_) => "the kernel's own interrupts beyond the tick, on busy and idle CPUs",
                    None => {
                        "the rest of the rate, on busy and idle CPUs (/proc/interrupts unread: all taken as interrupts)"
                    }
                };
                entry(o, "irq", "irq", &share(shares.other_hz), &format!("{what}{counted}"), false);
            }
            match shares.outside_hz {
                Some(h) if h >= 1.0 => entry(
                    o,
                    "outside",
                    "steal",
                    &share(h),
                    &format!(
                        "gaps beyond every interrupt the kernel counted: the CPU was outside this kernel (in a VM the\n\
                         # host ran something else; too short for /proc/stat's steal). It wakes no halted vCPU, and\n\
                         # an idle vCPU's share of it is already inside the measured exit curves: busy CPUs only{counted}"
                    ),
                    true,
                ),
                Some(_) => {
                    let _ = writeln!(o, "\n# [[noise]] outside: none (every gap beyond the tick is a counted interrupt){counted}");
                }
                None => {}
            }
        }
        None => {
            let _ = writeln!(
                o,
                "\n# [[noise]] irq: no gap >= {} seen [measured: {how}]",
                dur(n.threshold_ns).replace('"', "")
            );
        }
    }
    match &steal {
        Some(f) => entry(
            o,
            "steal",
            "steal",
            f,
            &format!(
                "/proc/stat steal rose {} over the probe, {} beyond its resolution (one 10 ms tick per CPU):\n\
                 # the longest gaps summing to that are taken as steal ({} gaps)",
                dur(n.steal_raw_ns).replace('"', ""),
                dur(n.steal_ns).replace('"', ""),
                f.dist.n
            ),
            false,
        ),
        None => {
            let _ = writeln!(
                o,
                "\n# [[noise]] steal: none [measured: /proc/stat's steal rose {} over the probe, within its\n\
                 # resolution of one 10 ms tick per CPU; steal that small stays in the short gaps above]",
                dur(n.steal_raw_ns).replace('"', "")
            );
        }
    }
}
