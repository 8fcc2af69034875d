//! The two views of a run that kernel developers read from `perf sched`,
//! made from this crate's own accounting so that a simulated run, a capture
//! read by `schedlab analyze` and a perf.data print the same table:
//!
//! * [`render_sched_latency`]: `perf sched latency -p`: per task, its run
//!   time, switches, and the average and longest delay from runnable (a
//!   wakeup or a preemption) to running, with when the longest began and
//!   ended. `Switches` is what perf counts there: the switch-ins it
//!   measured a delay for (one per wakeup or preemption; on this project's
//!   host perf's figures and these agree to the microsecond, see
//!   docs/real-traces.md). Unlike perf, rows are per thread (perf merges
//!   equal comms unless `-p`), run time comes from the switches (perf needs
//!   `sched_stat_runtime`), and delays that end at a switch the trace was
//!   missing (`schedlab_trace::repair`) are not counted.
//! * [`Timehist`]: `perf sched timehist`: one line per switch, for the task
//!   switched out: its wait (switch-out to wakeup), scheduling delay
//!   (wakeup or preemption to switch-in) and run time. A `*` marks a line
//!   whose switch in or out was put back.

use std::collections::BTreeMap;
use std::io::{self, Write};

use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState, TaskTable};

use crate::table::ms;
use crate::{pad_left, pad_right, RunMetrics};

fn secs(ns: Nanos) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// `perf sched latency`'s table of the rows `shown` keeps, sorted as perf
/// sorts by default (average delay, then maximum, switches, run time; all
/// descending), with the total line.
pub fn render_sched_latency(m: &RunMetrics, shown: impl Fn(Pid) -> bool) -> String {
    // As perf, only the tasks with a delay measured.
    let mut rows: Vec<_> = m.tasks.iter().filter(|t| shown(t.pid) && t.delays > 0).collect();
    let avg = |t: &crate::TaskMetrics| t.delay_total_ns.checked_div(t.delays).unwrap_or(0);
    rows.sort_by(|a, b| {
        (avg(b), b.max_delay_ns, b.delays, b.runtime_ns)
            .cmp(&(avg(a), a.max_delay_ns, a.delays, a.runtime_ns))
            .then(a.pid.cmp(&b.pid))
    });
    let rule = |n: usize| format!(" {}\n", "-".repeat(n));
    let mut out = String::new();
    out.push_str(&rule(139));
    out.push_str(
        "  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | Max delay start           | Max delay end          |\n",
    );
    out.push_str(&rule(139));
    let (mut runtime, mut switches) = (0u64, 0u64);
    for t in &rows {
        runtime += t.runtime_ns;
        switches += t.delays;
        let name = format!("{}:{}", t.comm, t.pid);
        let (start, end) =
            (format!("{} s", secs(t.max_delay_end_ts - t.max_delay_ns)), format!("{} s", secs(t.max_delay_end_ts)));
        out.push_str(&format!(
            "  {} | {} ms | {} | avg: {} ms | max: {} ms | max start: {} | max end: {}\n",
            pad_right(&name, 21),
            pad_left(&ms(t.runtime_ns), 9),
            pad_left(&t.delays.to_string(), 8),
            pad_left(&ms(avg(t)), 7),
            pad_left(&ms(t.max_delay_ns), 7),
            pad_left(&start, 14),
            pad_left(&end, 14),
        ));
    }
    out.push_str(&rule(113));
    out.push_str(&format!(
        "  TOTAL:                | {} ms | {} |\n",
        pad_left(&ms(runtime), 9),
        pad_left(&switches.to_string(), 8)
    ));
    out.push_str(&rule(51));
    let unknown: u64 = rows.iter().map(|t| t.delays_unknown).sum();
    if unknown > 0 {
        out.push_str(&format!(
            "  {unknown} delays end at a switch the trace was missing: not counted (docs/real-traces.md)\n"
        ));
    }
    out
}

/// One task's last switch-out, wakeup and switch-in, for [`Timehist`].
#[derive(Clone, Copy, Default)]
struct Times {
    out: Option<Nanos>,
    /// Runnable since: its wakeup, or its preemption.
    ready: Option<Nanos>,
    woken: Option<Nanos>,
    in_at: Option<Nanos>,
    /// The switch-in was put back by the repair.
    in_repaired: bool,
}

/// Which switched-out tasks [`Timehist`] lists.
type Shown<'a> = dyn Fn(Pid, &TaskTable) -> bool + Send + 'a;

/// `perf sched timehist`, one switch at a time.
pub struct Timehist<'a, W: Write> {
    out: W,
    times: BTreeMap<Pid, Times>,
    /// Idle task per CPU: when it was switched in.
    idle_in: BTreeMap<u32, Nanos>,
    /// Which switched-out tasks get a line (pid, and the table naming it).
    shown: Box<Shown<'a>>,
    /// Lines marked `*`.
    repaired: u64,
}

impl<'a, W: Write> Timehist<'a, W> {
    /// Write the header; lines follow for the tasks `shown` keeps (the idle
    /// task's when it keeps pid 0).
    pub fn new(mut out: W, shown: impl Fn(Pid, &TaskTable) -> bool + Send + 'a) -> io::Result<Self> {
        writeln!(out, "           time    cpu  task name                       wait time  sch delay   run time")?;
        writeln!(out, "                        [tid/pid]                          (msec)     (msec)     (msec)")?;
        writeln!(out, "--------------- ------  ------------------------------  ---------  ---------  ---------")?;
        Ok(Timehist { out, times: BTreeMap::new(), idle_in: BTreeMap::new(), shown: Box::new(shown), repaired: 0 })
    }

    /// Take the next event; `table` names the tasks.
    pub fn observe(&mut self, ev: &Event, table: &TaskTable) -> io::Result<()> {
        match ev.kind {
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } if pid != 0 => {
                let t = self.times.entry(pid).or_default();
                t.woken = Some(ev.ts);
                t.ready.get_or_insert(ev.ts);
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                let dash = || "-".to_string();
                let mut in_repaired = false;
                let f = |v: Option<u64>| v.map_or_else(dash, ms);
                let (name, wait, delay, run) = if prev_pid == 0 {
                    let run = self.idle_in.remove(&ev.cpu).map(|i| ev.ts.saturating_sub(i));
                    ("<idle>".to_string(), Some(0), Some(0), run)
                } else {
                    let t = self.times.entry(prev_pid).or_default();
                    let wait = match (t.out, t.woken) {
                        (Some(o), Some(w)) if w >= o => Some(w - o),
                        (Some(_), _) => Some(0),
                        _ => None,
                    };
                    let delay = match (t.ready, t.in_at) {
                        (Some(r), Some(i)) if i >= r => Some(i - r),
                        _ => None,
                    };
                    let run = t.in_at.map(|i| ev.ts.saturating_sub(i));
                    in_repaired = t.in_repaired;
                    *t = Times {
                        out: Some(ev.ts),
                        ready: matches!(prev_state, PrevState::Running { .. }).then_some(ev.ts),
                        woken: None,
                        in_at: None,
                        in_repaired: false,
                    };
                    (format!("{}[{prev_pid}/{}]", table.comm(prev_pid), table.tgid(prev_pid)), wait, delay, run)
                };
                if next_pid == 0 {
                    self.idle_in.insert(ev.cpu, ev.ts);
                } else {
                    let t = self.times.entry(next_pid).or_default();
                    t.in_at = Some(ev.ts);
                    t.in_repaired = ev.is_repaired();
                }
                if (self.shown)(prev_pid, table) {
                    let mark = if ev.is_repaired() || in_repaired {
                        self.repaired += 1;
                        " *"
                    } else {
                        ""
                    };
                    writeln!(
                        self.out,
                        "{} [{:04}]  {}  {}  {}  {}{mark}",
                        pad_left(&secs(ev.ts), 15),
                        ev.cpu,
                        pad_right(&name, 30),
                        pad_left(&f(wait), 9),
                        pad_left(&f(delay), 9),
                        pad_left(&f(run), 9),
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The closing note, if any line was marked.
    pub fn finish(mut self) -> io::Result<W> {
        if self.repaired > 0 {
            writeln!(
                self.out,
                "* {} lines have a switch in or out that is missing from the trace, put back at the earliest \
                 time it could have been: their times are bounds (docs/real-traces.md)",
                self.repaired
            )?;
        }
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use schedlab_trace::testing::{process_table, switch, wakeup};

    use super::*;

    const S: PrevState = PrevState::Sleeping;
    const RP: PrevState = PrevState::Running { preempt: true };

    fn scene() -> Vec<Event> {
        // A (2) runs 0-100 us, sleeps; woken at 300, runs at 350 until B (3)
        // preempts it at 500; A runs again at 800 until 900.
        vec![
            switch(0, 0, 0, S, 2),
            switch(100_000, 0, 2, S, 0),
            wakeup(300_000, 0, 0, 2, 0),
            switch(350_000, 0, 0, S, 2),
            switch(500_000, 0, 2, RP, 3),
            switch(800_000, 0, 3, S, 2),
            switch(900_000, 0, 2, S, 0),
        ]
    }

    #[test]
    fn timehist_lines_give_wait_delay_and_run_per_switch() {
        let table = process_table(1, &[(2, "a"), (3, "b")], &[]);
        let mut th = Timehist::new(Vec::new(), |p, _| p == 2).unwrap();
        for e in scene() {
            th.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(th.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(lines.len(), 3, "A is switched out three times: {text}");
        // First switch-out: run from 0, nothing before it known.
        assert!(lines[0].ends_with("        -          -      0.100"), "{text}");
        // Slept 100→300 (wait 0.2), delay 300→350, ran 350→500.
        assert!(lines[1].ends_with("    0.200      0.050      0.150"), "{text}");
        // Preempted at 500, back at 800: no sleep, delay 0.3, ran 0.1.
        assert!(lines[2].ends_with("    0.000      0.300      0.100"), "{text}");
        assert!(lines[2].contains("a[2/1]"), "{text}");
    }

    #[test]
    fn the_latency_table_gives_avg_and_max_delay_with_its_times() {
        let t = schedlab_trace::testing::trace(process_table(1, &[(2, "a"), (3, "b")], &[]), 1, scene());
        let m = crate::analyze(&t, &crate::AnalysisOptions::default());
        let a = m.task(2).unwrap();
        assert_eq!((a.delays, a.delay_total_ns, a.max_delay_ns, a.max_delay_end_ts), (2, 350_000, 300_000, 800_000));
        let text = render_sched_latency(&m, |_| true);
        let row = text.lines().find(|l| l.contains("a:2")).unwrap();
        assert!(row.contains("avg:   0.175 ms | max:   0.300 ms"), "{row}");
        assert!(row.contains("max start:     0.000500 s | max end:     0.000800 s"), "{row}");
        assert_eq!(a.delays_unknown, 0);
        assert!(text.contains("TOTAL:"), "{text}");
        // B (3) was switched in at its first appearance only: no delay measured, no row.
        assert_eq!(m.task(3).unwrap().delays, 0);
        assert!(!text.contains("b:3"), "{text}");
    }

    /// A switch-in the repair put back: the delay it ends is not counted,
    /// and the listing marks the line of the run it starts.
    #[test]
    fn a_repaired_switch_in_is_marked_and_its_delay_left_out() {
        let table = process_table(1, &[(2, "a")], &[]);
        let mut put_back = switch(310_000, 0, 0, S, 2);
        put_back.flags = Event::REPAIRED_FLAGS;
        let evs = vec![
            switch(0, 0, 0, S, 2),
            switch(100_000, 0, 2, S, 0),
            wakeup(300_000, 0, 0, 2, 0),
            put_back,
            switch(400_000, 0, 2, S, 0),
        ];
        let mut th = Timehist::new(Vec::new(), |p, _| p == 2).unwrap();
        for e in &evs {
            th.observe(e, &table).unwrap();
        }
        let text = String::from_utf8(th.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert!(!lines[0].ends_with('*') && lines[1].ends_with(" *"), "{text}");
        assert!(lines[2].starts_with("* 1 lines"), "{text}");
        let t = schedlab_trace::testing::trace(table, 1, evs);
        let a = crate::analyze(&t, &crate::AnalysisOptions::default()).task(2).cloned().unwrap();
        assert_eq!((a.delays, a.delays_unknown), (0, 1));
    }
}
