//! The views of a trace that kernel developers read from `perf sched`,
//! computed as perf 6.1 (`tools/perf/builtin-sched.c`, the version on this
//! project's host) computes them, from the same events, so that a capture
//! read by `schedlab analyze` prints what `perf sched` prints for it, and a
//! simulated run prints what perf would print for its trace:
//!
//! * [`SchedLatency`]: `perf sched latency`, per comm or (`-p`) per thread;
//! * [`Timehist`]: `perf sched timehist` (with `-w`, `-M`, `-V`, `-n`, `-C`,
//!   `--time`);
//! * [`SchedMap`]: `perf sched map`.
//!
//! Each type's doc says which rules of perf it follows, in this project's
//! words. Comms are as of each event ([`TaskTable::comm_at`]). Where
//! schedlab differs (an exited task that perf names `:-1`, a thread perf
//! never learned the comm of), docs/real-traces.md lists it. The switches schedlab's repair puts back (`schedlab_trace::repair`)
//! are not perf's: the views skip them and say how many there were.

use std::collections::BTreeMap;
use std::io::{self, Write};

use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState, TaskTable};

/// `timestamp__scnprintf_usec()`: seconds with the microseconds truncated.
fn secs_usec(ns: Nanos) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// `print_sched_time()`: milliseconds right-aligned in `width`, then the
/// microseconds truncated, then a space.
fn sched_time(ns: Nanos, width: usize) -> String {
    format!("{:>width$}.{:03} ", ns / 1_000_000, ns % 1_000_000 / 1000)
}

/// The comm perf prints for a task: its last known comm, cut to perf's
/// 31 characters.
fn perf_comm(table: &TaskTable, pid: Pid) -> String {
    table.comm(pid).chars().take(31).collect()
}

/// `timehist_get_commstr()` (perf 6.1): `comm[tid]` for a process's main
/// thread, `comm[tid/pid]` for another thread, the bare comm for the idle
/// task (pid 0), with the comm the task had at `ts`; cut to 31 characters
/// as perf's buffer does.
fn commstr(table: &TaskTable, tid: Pid, ts: Nanos) -> String {
    let comm: String = table.comm_at(tid, ts).chars().take(31).collect();
    let pid = if tid == 0 { 0 } else { table.tgid(tid) };
    let s = if pid == 0 {
        comm
    } else if pid != tid {
        format!("{comm}[{tid}/{pid}]")
    } else {
        format!("{comm}[{tid}]")
    };
    s.chars().take(31).collect()
}

/// `perf sched latency` as perf 6.1 computes it (`latency_switch_event`,
/// `latency_runtime_event`, `latency_wakeup_event`, `add_sched_in_event`),
/// per thread (merged by comm in [`SchedLatency::rows_by`]):
///
/// * a switch-out opens a new period for the task; it is runnable from that
///   moment only when `prev_state` is plain `R` (perf 6.1 reads the state
///   as an index into its state letters, so a preempted task's `R+`, the
///   kernel's `TASK_REPORT_MAX`, does not read as runnable and its next
///   switch-in measures nothing);
/// * `sched_wakeup` / `sched_wakeup_new` (not `sched_waking`) make a
///   sleeping period runnable at the wakeup's time, unless the wakeup is
///   older than the switch-out;
/// * a switch-in of a runnable period counts one switch and a delay from
///   runnable to running; a task first seen being switched in counts a
///   delay of zero;
/// * run time is the sum of `sched_stat_runtime`, not of switches.
///
/// Rows are sorted as perf's default `avg,max,switch,runtime` (descending,
/// ties in descending tid order as perf's tree gives them). Events the
/// switch repair put back are not perf's and are skipped.
#[derive(Default)]
pub struct SchedLatency {
    tasks: BTreeMap<Pid, LatTask>,
    /// The task perf believes runs on each CPU (for its "context switch
    /// bugs" count).
    curr: BTreeMap<u32, Pid>,
    /// Wakeups that reached a period's state check, and those older than
    /// the switch-out they would end (perf's unordered timestamps).
    timestamps: u64,
    unordered: u64,
    switch_bugs: u64,
    /// Events of the switch repair, skipped.
    skipped_repaired: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LatState {
    Sleeping,
    WaitCpu,
    SchedIn,
    Ignore,
}

/// A thread's last period and its totals (perf's `work_atoms`).
struct LatTask {
    state: LatState,
    out_at: Nanos,
    ready_at: Nanos,
    runtime: u64,
    switches: u64,
    total_delay: u64,
    max_delay: u64,
    max_start: Nanos,
    max_end: Nanos,
}

impl LatTask {
    /// A new period from `at`: runnable (`R`) or sleeping.
    fn new(runnable: bool, at: Nanos) -> LatTask {
        let mut t = LatTask {
            state: LatState::Sleeping,
            out_at: 0,
            ready_at: 0,
            runtime: 0,
            switches: 0,
            total_delay: 0,
            max_delay: 0,
            max_start: 0,
            max_end: 0,
        };
        t.period(runnable, at);
        t
    }

    fn period(&mut self, runnable: bool, at: Nanos) {
        self.out_at = at;
        self.ready_at = 0;
        self.state = LatState::Sleeping;
        if runnable {
            self.state = LatState::WaitCpu;
            self.ready_at = at;
        }
    }
}

/// One row of [`SchedLatency`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LatencyRow {
    pub comm: String,
    /// The thread's tid; for a row of several threads merged by comm, the
    /// highest tid among them (perf prints `comm:(N)` instead).
    pub tid: Pid,
    /// How many threads the row merges (1: a thread's own row). perf counts
    /// every thread of that comm it saw, with or without a switch measured.
    pub threads: u32,
    pub runtime_ns: u64,
    pub switches: u64,
    pub avg_delay_ns: u64,
    pub max_delay_ns: u64,
    pub max_delay_start_ns: Nanos,
    pub max_delay_end_ns: Nanos,
    #[serde(skip)]
    total_delay_ns: u64,
}

impl LatencyRow {
    /// perf's first column: `comm:tid`, or `comm:(N)` for N threads merged.
    pub fn label(&self) -> String {
        if self.threads > 1 {
            format!("{}:({})", self.comm, self.threads)
        } else {
            format!("{}:{}", self.comm, self.tid)
        }
    }
}

/// Rows of [`SchedLatency`]: one per comm, as `perf sched latency` prints
/// by default, or one per thread, as with its `-p`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LatencyRows {
    #[default]
    ByComm,
    PerThread,
}

impl SchedLatency {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the next event (in time order).
    pub fn observe(&mut self, ev: &Event) {
        if ev.is_repaired() {
            self.skipped_repaired += 1;
            return;
        }
        match ev.kind {
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                if let Some(&c) = self.curr.get(&ev.cpu) {
                    if c != prev_pid {
                        self.switch_bugs += 1;
                    }
                }
                self.curr.insert(ev.cpu, next_pid);
                let runnable = prev_state == PrevState::Running { preempt: false };
                match self.tasks.get_mut(&prev_pid) {
                    Some(t) => t.period(runnable, ev.ts),
                    None => {
                        self.tasks.insert(prev_pid, LatTask::new(runnable, ev.ts));
                    }
                }
                let t = self.tasks.entry(next_pid).or_insert_with(|| LatTask::new(true, ev.ts));
                if t.state == LatState::WaitCpu {
                    if ev.ts < t.ready_at {
                        t.state = LatState::Ignore;
                    } else {
                        t.state = LatState::SchedIn;
                        let d = ev.ts - t.ready_at;
                        t.total_delay += d;
                        if d > t.max_delay {
                            (t.max_delay, t.max_start, t.max_end) = (d, t.ready_at, ev.ts);
                        }
                        t.switches += 1;
                    }
                }
            }
            EventKind::SchedStatRuntime { pid, runtime } => {
                self.tasks.entry(pid).or_insert_with(|| LatTask::new(true, ev.ts)).runtime += runtime;
            }
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } => {
                let t = self.tasks.entry(pid).or_insert_with(|| LatTask::new(false, ev.ts));
                if t.state != LatState::Sleeping {
                    return;
                }
                self.timestamps += 1;
                if t.out_at > ev.ts {
                    self.unordered += 1;
                    return;
                }
                t.state = LatState::WaitCpu;
                t.ready_at = ev.ts;
            }
            _ => {}
        }
    }

    /// The per-thread rows `shown` keeps, in perf's order (idle and rows
    /// without a switch measured are left out, as perf does): `perf sched
    /// latency -p`.
    pub fn rows(&self, table: &TaskTable, shown: impl Fn(Pid) -> bool) -> Vec<LatencyRow> {
        self.rows_by(table, shown, LatencyRows::PerThread)
    }

    /// The rows `shown` keeps, one per thread or one per comm, in perf's
    /// order. Merged by comm as perf 6.1 merges (its comm at the end of the
    /// trace): run times, switches and delays are summed, the average is
    /// the summed delay over the summed switches, and the longest delay is
    /// the longest of any thread with its start and end (on a tie, the
    /// thread of higher tid). Rows sort by average, maximum, switches, run
    /// time, all descending; equal rows by descending tid per thread, by
    /// descending comm (byte order) per comm.
    pub fn rows_by(&self, table: &TaskTable, shown: impl Fn(Pid) -> bool, by: LatencyRows) -> Vec<LatencyRow> {
        // Highest tid first: the order perf merges its threads in.
        let threads = self.tasks.iter().rev().filter(|(&pid, _)| pid != 0 && shown(pid)).map(|(&pid, t)| LatencyRow {
            comm: perf_comm(table, pid),
            tid: pid,
            threads: 1,
            runtime_ns: t.runtime,
            switches: t.switches,
            avg_delay_ns: 0,
            max_delay_ns: t.max_delay,
            max_delay_start_ns: t.max_start,
            max_delay_end_ns: t.max_end,
            total_delay_ns: t.total_delay,
        });
        let mut rows: Vec<LatencyRow> = match by {
            LatencyRows::PerThread => threads.collect(),
            LatencyRows::ByComm => {
                let mut merged: BTreeMap<String, LatencyRow> = BTreeMap::new();
                for r in threads {
                    match merged.get_mut(&r.comm) {
                        None => {
                            merged.insert(r.comm.clone(), r);
                        }
                        Some(m) => {
                            m.threads += 1;
                            m.runtime_ns += r.runtime_ns;
                            m.switches += r.switches;
                            m.total_delay_ns += r.total_delay_ns;
                            if r.max_delay_ns > m.max_delay_ns {
                                (m.max_delay_ns, m.max_delay_start_ns, m.max_delay_end_ns) =
                                    (r.max_delay_ns, r.max_delay_start_ns, r.max_delay_end_ns);
                            }
                        }
                    }
                }
                // Descending comm: the order ties keep.
                merged.into_values().rev().collect()
            }
        };
        // perf leaves out its idle task (comm `swapper`) and rows with no switch.
        rows.retain(|r| r.switches > 0 && r.comm != "swapper");
        for r in &mut rows {
            r.avg_delay_ns = r.total_delay_ns / r.switches;
        }
        // Stable: ties keep the order above.
        rows.sort_by(|a, b| {
            (b.avg_delay_ns, b.max_delay_ns, b.switches, b.runtime_ns).cmp(&(
                a.avg_delay_ns,
                a.max_delay_ns,
                a.switches,
                a.runtime_ns,
            ))
        });
        rows
    }

    /// perf's table of `rows` with its total line and notes.
    pub fn render(&self, rows: &[LatencyRow]) -> String {
        let rule = |n: usize| format!(" {}\n", "-".repeat(n));
        let f = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let mut out = String::from("\n");
        out.push_str(&rule(139));
        out.push_str(
            "  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | Max delay start           | Max delay end          |\n",
        );
        out.push_str(&rule(139));
        let (mut runtime, mut switches) = (0u64, 0u64);
        for r in rows {
            runtime += r.runtime_ns;
            switches += r.switches;
            let name = format!("  {} ", r.label());
            out.push_str(&format!(
                "{name:<24}|{:>11} ms |{:>9} | avg:{:>8} ms | max:{:>8} ms | max start: {:>12} s | max end: {:>12} s\n",
                f(r.runtime_ns),
                r.switches,
                f(r.avg_delay_ns),
                f(r.max_delay_ns),
                secs_usec(r.max_delay_start_ns),
                secs_usec(r.max_delay_end_ns),
            ));
        }
        out.push_str(&rule(113));
        out.push_str(&format!("  TOTAL:                |{:>11} ms |{:>9} |\n", f(runtime), switches));
        out.push_str(&rule(51));
        if self.unordered > 0 && self.timestamps > 0 {
            out.push_str(&format!(
                "  INFO: {:.3}% unordered timestamps ({} out of {})\n",
                self.unordered as f64 / self.timestamps as f64 * 100.0,
                self.unordered,
                self.timestamps
            ));
        }
        if self.switch_bugs > 0 && self.timestamps > 0 {
            out.push_str(&format!(
                "  INFO: {:.3}% context switch bugs ({} out of {})\n",
                self.switch_bugs as f64 / self.timestamps as f64 * 100.0,
                self.switch_bugs,
                self.timestamps
            ));
        }
        out.push('\n');
        if self.skipped_repaired > 0 {
            out.push_str(&format!(
                "note: {} switches the capture was missing (put back by schedlab's repair) are not counted, \
                 as perf never sees them (docs/real-traces.md)\n",
                self.skipped_repaired
            ));
        }
        out
    }
}

/// perf's timehist options schedlab does not offer, each with why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotOffered {
    /// `-s`/`-S`: the per-task summary.
    #[error(
        "-s/--summary and -S/--with-summary (perf sched timehist's per-task summary) are not offered: perf's \
         summary has a parent column it takes from its own fork records and from /proc when recording, which \
         no trace schedlab reads holds, so its rows could not equal perf's; --view latency gives the per-task \
         delays and the report (no --view) the run times"
    )]
    Summary,
    /// `-I`: the idle-time lines.
    #[error(
        "-I/--idle-hist (perf sched timehist's idle-time lines) is not offered: it is built on the idle task's \
         switches, which the kernel of this project's host does not trace (docs/real-traces.md), so it could \
         not be checked against perf; the report (no --view) gives each CPU's idle time"
    )]
    IdleHist,
    /// `--state`: the kernel's state letter of each switched-out task.
    #[error(
        "--state is not offered: perf prints the kernel's state letter of each switched-out task (I, Z, T, ...), \
         and schedlab keeps only the states its analysis uses (R, R+, S, D, X), so its column could not equal \
         perf's"
    )]
    State,
}

/// What [`Timehist`] prints beyond perf's default lines, and where.
#[derive(Clone, Debug, Default)]
pub struct TimehistOptions {
    /// `-w`: a line per wakeup.
    pub wakeups: bool,
    /// `-M`: a line per migration.
    pub migrations: bool,
    /// `-C`: only these CPUs' lines (and run-time figures).
    pub cpus: Option<Vec<u32>>,
    /// `--time START,END`.
    pub time: schedlab_trace::TimeWindow,
    /// One JSON object per line instead of perf's text.
    pub json: bool,
    /// `-V`: a column per CPU marking the one the line is on (`s` a
    /// switch, `i` the idle task's, `m` a migration).
    pub cpu_visual: bool,
    /// `-n`: the task switched in, as the switch names it.
    pub next: bool,
}

/// A task's timehist state (perf's `thread_runtime`).
#[derive(Clone, Copy, Default)]
struct ThTask {
    /// Its last switch-out.
    last_time: Nanos,
    /// Its first wakeup since then (0: none).
    ready_to_run: Nanos,
}

/// Which switched-out tasks [`Timehist`] lists.
type Shown<'a> = dyn Fn(Pid, &TaskTable) -> bool + Send + 'a;

/// `perf sched timehist` as perf 6.1 computes it
/// (`timehist_sched_change_event`, `timehist_update_runtime_stats`,
/// `timehist_sched_wakeup_event`): a line per `sched_switch` for the task
/// switched out (the idle task as `<idle>`), where
///
/// * run time runs from the CPU's previous switch (whoever it was) to this
///   one: perf assumes the task was switched in then;
/// * scheduling delay runs from the task's first wakeup since it was last
///   switched out (`sched_waking` when the capture has it, else
///   `sched_wakeup`; `sched_wakeup_new` for a new task) to that previous
///   switch; time spent preempted is not delay (perf 6.1 forgets the
///   wakeup at every switch-out);
/// * wait time runs from the task's last switch-out, on any CPU, to that
///   previous switch, whatever state it left in (sleep, I/O or preempted);
/// * a CPU's first switch prints zeros: no previous switch is known.
///
/// The pid column is `comm[tid]`, or `comm[tid/pid]` for a thread that is
/// not its process's main thread. Events the switch repair put back are
/// not perf's and are skipped (counted in a closing note).
pub struct Timehist<'a, W: Write> {
    out: W,
    opts: TimehistOptions,
    /// `-V`'s columns.
    ncpus: u32,
    header_done: bool,
    tasks: BTreeMap<Pid, ThTask>,
    idle: BTreeMap<u32, ThTask>,
    /// Each CPU's last switch.
    last_switch: BTreeMap<u32, Nanos>,
    shown: Box<Shown<'a>>,
    comm_width: usize,
    waking_seen: bool,
    skipped_repaired: u64,
}

impl<'a, W: Write> Timehist<'a, W> {
    /// Write the header; lines follow for the tasks `shown` keeps (the idle
    /// task's when it keeps pid 0).
    pub fn new(out: W, shown: impl Fn(Pid, &TaskTable) -> bool + Send + 'a) -> io::Result<Self> {
        Self::with_options(out, shown, TimehistOptions::default())
    }

    pub fn with_options(
        out: W,
        shown: impl Fn(Pid, &TaskTable) -> bool + Send + 'a,
        opts: TimehistOptions,
    ) -> io::Result<Self> {
        let mut th = Timehist {
            out,
            opts,
            ncpus: 0,
            header_done: false,
            tasks: BTreeMap::new(),
            idle: BTreeMap::new(),
            last_switch: BTreeMap::new(),
            shown: Box::new(shown),
            comm_width: 30,
            waking_seen: false,
            skipped_repaired: 0,
        };
        // With -V the header waits for the CPU count ([`Timehist::set_cpus`]).
        if !th.opts.cpu_visual {
            th.header()?;
        }
        Ok(th)
    }

    /// The trace's CPU count, for `-V`'s columns: perf draws one more than
    /// the CPUs (its highest CPU number is the CPU count).
    pub fn set_cpus(&mut self, nr_cpus: u32) {
        if !self.header_done {
            self.ncpus = nr_cpus + 1;
        }
    }

    fn header(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.header_done, true) || self.opts.json {
            return Ok(());
        }
        let w = self.comm_width;
        let n = self.ncpus as usize;
        let (digits, blank, dashes) = if self.opts.cpu_visual {
            let digits: String = (0..n).map(|i| char::from_digit((i % 16) as u32, 16).unwrap()).collect();
            (format!(" {digits} "), format!(" {:n$} ", ""), format!(" {} ", "-".repeat(n)))
        } else {
            Default::default()
        };
        let out = &mut self.out;
        writeln!(
            out,
            "{:>15} {:>6} {digits} {:<w$}  {:>9}  {:>9}  {:>9}",
            "time", "cpu", "task name", "wait time", "sch delay", "run time"
        )?;
        writeln!(
            out,
            "{:>15} {:<6} {blank} {:<w$}  {:>9}  {:>9}  {:>9}",
            "", "", "[tid/pid]", "(msec)", "(msec)", "(msec)"
        )?;
        writeln!(
            out,
            "{} {} {dashes} {}  {}  {}  {}",
            "-".repeat(15),
            "-".repeat(6),
            "-".repeat(w),
            "-".repeat(9),
            "-".repeat(9),
            "-".repeat(9)
        )
    }

    /// `-V`'s columns for a line on `cpu`, marked `c` (none: blank), with
    /// `pad` spaces either side.
    fn visual(&self, cpu: u32, c: Option<char>, pad: usize) -> String {
        if !self.opts.cpu_visual {
            return String::new();
        }
        let cols: String = (0..self.ncpus).map(|i| if i == cpu { c.unwrap_or(' ') } else { ' ' }).collect();
        format!("{:pad$}{cols}{:pad$}", "", "")
    }

    fn cpu_shown(&self, cpu: u32) -> bool {
        self.opts.cpus.as_ref().is_none_or(|c| c.contains(&cpu))
    }

    fn in_window(&self, ts: Nanos) -> bool {
        self.opts.time.contains(ts)
    }

    /// The name column at `ts`, widening it as perf does for a longer name.
    fn name(&mut self, table: &TaskTable, tid: Pid, ts: Nanos) -> String {
        let s = if tid == 0 { "swapper".to_string() } else { commstr(table, tid, ts) };
        self.comm_width = self.comm_width.max(s.chars().count());
        s
    }

    /// A `-w` / `-M` line: who did it, and what.
    fn note_line(&mut self, ev: &Event, table: &TaskTable, what: &str, whom: Pid, tail: &str) -> io::Result<()> {
        if !(self.shown)(ev.ctx_pid, table) && !(self.shown)(whom, table) {
            return Ok(());
        }
        // perf's migration lines draw -V's columns one space wider each side.
        let visual = if what == "migrated" { self.visual(ev.cpu, Some('m'), 2) } else { self.visual(ev.cpu, None, 1) };
        let actor = self.name(table, ev.ctx_pid, ev.ts);
        let target = if whom == 0 { "swapper".to_string() } else { commstr(table, whom, ev.ts) };
        if self.opts.json {
            return writeln!(
                self.out,
                "{{\"time_ns\":{},\"cpu\":{},\"tid\":{},\"task\":{},\"{what}\":{},\"{what}_tid\":{whom}{tail_json}}}",
                ev.ts,
                ev.cpu,
                ev.ctx_pid,
                json_str(&actor),
                json_str(&target),
                tail_json =
                    if tail.is_empty() { String::new() } else { format!(",\"cpus\":{}", json_str(tail.trim())) }
            );
        }
        writeln!(
            self.out,
            "{:>15} [{:04}] {visual} {:<w$}   {:9}  {:9}  {:9} {what}: {target}{tail}",
            secs_usec(ev.ts),
            ev.cpu,
            actor,
            "",
            "",
            "",
            w = self.comm_width
        )
    }

    /// Take the next event (in time order); `table` names the tasks.
    pub fn observe(&mut self, ev: &Event, table: &TaskTable) -> io::Result<()> {
        self.header()?;
        if ev.is_repaired() {
            self.skipped_repaired += 1;
            return Ok(());
        }
        match ev.kind {
            EventKind::SchedWaking { pid, .. }
            | EventKind::SchedWakeup { pid, .. }
            | EventKind::SchedWakeupNew { pid, .. } => {
                match ev.kind {
                    EventKind::SchedWaking { .. } => self.waking_seen = true,
                    // perf prefers sched_waking when the capture has it.
                    EventKind::SchedWakeup { .. } if self.waking_seen => return Ok(()),
                    _ => {}
                }
                let t = self.tasks.entry(pid).or_default();
                if t.ready_to_run == 0 {
                    t.ready_to_run = ev.ts;
                }
                if self.opts.wakeups && self.in_window(ev.ts) {
                    self.note_line(ev, table, "awakened", pid, "")?;
                }
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } if self.opts.migrations => {
                self.note_line(ev, table, "migrated", pid, &format!(" cpu {orig_cpu} => {dest_cpu}"))?;
            }
            EventKind::SchedSwitch { prev_pid, next_pid, .. } => self.switch(ev, prev_pid, next_pid, table)?,
            _ => {}
        }
        Ok(())
    }

    fn switch(&mut self, ev: &Event, prev_pid: Pid, next_pid: Pid, table: &TaskTable) -> io::Result<()> {
        // perf names the task by the sample's tid; the idle task per CPU.
        let tid = if prev_pid == 0 {
            0
        } else if ev.ctx_pid != 0 {
            ev.ctx_pid
        } else {
            prev_pid
        };
        let tprev = self.last_switch.insert(ev.cpu, ev.ts).unwrap_or(0);
        if !(self.shown)(tid, table) {
            return Ok(());
        }
        let mut t = ev.ts;
        let mut tprev = tprev;
        let schedlab_trace::TimeWindow { start, end } = self.opts.time;
        let mut line = None;
        'window: {
            if start.is_some_and(|s| s > t) {
                break 'window;
            }
            if let Some(s) = start {
                if tprev != 0 && s > tprev {
                    tprev = s;
                }
            }
            if let Some(e) = end {
                if tprev == 0 || tprev > e {
                    break 'window;
                }
                t = t.min(e);
            }
            if !self.cpu_shown(ev.cpu) {
                break 'window;
            }
            let r = if tid == 0 { self.idle.entry(ev.cpu).or_default() } else { self.tasks.entry(tid).or_default() };
            let (mut wait, mut delay, mut run) = (0, 0, 0);
            if tprev != 0 {
                run = t - tprev;
                if r.ready_to_run != 0 && r.ready_to_run <= tprev {
                    delay = tprev - r.ready_to_run;
                }
                if r.last_time != 0 && r.last_time <= tprev {
                    wait = tprev - r.last_time;
                }
            }
            line = Some((wait, delay, run));
        }
        if let Some((wait, delay, run)) = line {
            let name = if tid == 0 { "<idle>".to_string() } else { self.name(table, tid, ev.ts) };
            // -n: the switch's own name for the next task, `comm[tid]`.
            let next = if next_pid == 0 {
                format!("swapper/{}[0]", ev.cpu)
            } else {
                format!("{}[{next_pid}]", table.field_comm_at(next_pid, ev.ts))
            };
            if self.opts.json {
                let next_json = if self.opts.next {
                    format!(",\"next\":{},\"next_tid\":{next_pid}", json_str(&next))
                } else {
                    String::new()
                };
                writeln!(
                    self.out,
                    "{{\"time_ns\":{t},\"cpu\":{},\"task\":{},\"tid\":{tid},\"pid\":{},\"wait_ns\":{wait},\"sch_delay_ns\":{delay},\"run_ns\":{run}{next_json}}}",
                    ev.cpu,
                    json_str(&name),
                    if tid == 0 { 0 } else { table.tgid(tid) },
                )?;
            } else {
                let w = self.comm_width;
                let mut pad = String::new();
                if self.opts.next {
                    pad = format!(" {:<w$}", format!("next: {next}"));
                } else if self.opts.wakeups {
                    pad = format!("  {:w$}", "");
                }
                let visual = self.visual(ev.cpu, Some(if tid == 0 { 'i' } else { 's' }), 1);
                writeln!(
                    self.out,
                    "{:>15} [{:04}] {visual} {:<w$} {}{}{}{pad}",
                    secs_usec(t),
                    ev.cpu,
                    name,
                    sched_time(wait, 6),
                    sched_time(delay, 6),
                    sched_time(run, 6),
                )?;
            }
        }
        let r = if tid == 0 { self.idle.entry(ev.cpu).or_default() } else { self.tasks.entry(tid).or_default() };
        r.last_time = ev.ts;
        r.ready_to_run = 0;
        Ok(())
    }

    /// The closing note, if repaired events were skipped.
    pub fn finish(mut self) -> io::Result<W> {
        self.header()?;
        if !self.opts.json {
            note_repaired(&mut self.out, self.skipped_repaired, "listed")?;
        }
        Ok(self.out)
    }
}

/// `perf sched map` as perf 6.1 draws it (`map_switch_event`): a line per
/// `sched_switch` with, per CPU, the short name of the task it runs (`*`
/// marks the CPU that switched; `.` is the idle task), the time, and
/// `XY => comm:tid` when a task gets its short name (A0..Z0, A1.., in order
/// of first switch-in). The columns are the trace's CPUs (perf: the CPUs
/// of the host it runs on; the same for a capture read where it was made).
/// The comm is the task's at that switch, and the note comes again at a
/// task's first switch-in after its comm was set (an exec, a rename), as
/// perf's does.
pub struct SchedMap<W: Write> {
    out: W,
    cpus: u32,
    curr: BTreeMap<u32, Pid>,
    names: BTreeMap<Pid, String>,
    /// Each task's last switch-in.
    last_in: BTreeMap<Pid, Nanos>,
    next: (u8, u8),
    json: bool,
    skipped_repaired: u64,
}

impl<W: Write> SchedMap<W> {
    pub fn new(out: W, cpus: u32, json: bool) -> Self {
        SchedMap {
            out,
            cpus,
            curr: BTreeMap::new(),
            names: BTreeMap::new(),
            last_in: BTreeMap::new(),
            next: (b'A', b'0'),
            json,
            skipped_repaired: 0,
        }
    }

    pub fn observe(&mut self, ev: &Event, table: &TaskTable) -> io::Result<()> {
        if ev.is_repaired() {
            self.skipped_repaired += 1;
            return Ok(());
        }
        let EventKind::SchedSwitch { next_pid, .. } = ev.kind else { return Ok(()) };
        self.cpus = self.cpus.max(ev.cpu);
        let mut new_name = false;
        if !self.names.contains_key(&next_pid) {
            let short = if next_pid == 0 {
                ". ".to_string()
            } else {
                let s = format!("{}{}", self.next.0 as char, self.next.1 as char);
                if self.next.0 < b'Z' {
                    self.next.0 += 1;
                } else {
                    self.next.0 = b'A';
                    self.next.1 = if self.next.1 < b'9' { self.next.1 + 1 } else { b'0' };
                }
                s
            };
            self.names.insert(next_pid, short);
            new_name = true;
        }
        self.curr.insert(ev.cpu, next_pid);
        let short = &self.names[&next_pid];
        // perf notes the name again after the task's comm was set.
        let renamed = self
            .last_in
            .insert(next_pid, ev.ts)
            .is_some_and(|last| next_pid != 0 && table.comm_set_between(next_pid, last, ev.ts));
        let comm = if next_pid == 0 {
            "swapper".to_string()
        } else {
            table.comm_at(next_pid, ev.ts).chars().take(31).collect()
        };
        if self.json {
            let cpus: Vec<String> = (0..self.cpus)
                .map(|c| self.curr.get(&c).map_or("null".to_string(), |p| json_str(self.names[p].trim())))
                .collect();
            return writeln!(
                self.out,
                "{{\"time_ns\":{},\"cpu\":{},\"next_tid\":{next_pid},\"next\":{},\"short\":{},\"new\":{new_name},\"renamed\":{renamed},\"cpus\":[{}]}}",
                ev.ts,
                ev.cpu,
                json_str(&comm),
                json_str(short.trim()),
                cpus.join(",")
            );
        }
        let mut line = String::from("  ");
        for c in 0..self.cpus {
            line.push(if c == ev.cpu { '*' } else { ' ' });
            match self.curr.get(&c) {
                Some(p) => line.push_str(&format!("{:>2} ", self.names[p])),
                None => line.push_str("   "),
            }
        }
        line.push_str(&format!("  {:>12} secs ", secs_usec(ev.ts)));
        if new_name || renamed {
            line.push_str(&format!("{short} => {comm}:{next_pid}"));
        }
        writeln!(self.out, "{line}")
    }

    pub fn finish(mut self) -> io::Result<W> {
        if !self.json {
            note_repaired(&mut self.out, self.skipped_repaired, "drawn")?;
        }
        Ok(self.out)
    }
}

/// `--view latency --json`: the rows as an array.
pub fn latency_json(rows: &[LatencyRow]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"task\":{},\"tid\":{},\"threads\":{},\"runtime_ns\":{},\"switches\":{},\"avg_delay_ns\":{},\
                             \"max_delay_ns\":{},\"max_delay_start_ns\":{},\"max_delay_end_ns\":{}}}",
                json_str(&r.comm),
                r.tid,
                r.threads,
                r.runtime_ns,
                r.switches,
                r.avg_delay_ns,
                r.max_delay_ns,
                r.max_delay_start_ns,
                r.max_delay_end_ns
            )
        })
        .collect();
    format!("[\n  {}\n]\n", items.join(",\n  "))
}

/// `s` as a JSON string.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The closing note of a text view that left out `n` switches the repair
/// put back (perf never sees them); nothing when there were none.
fn note_repaired(out: &mut impl Write, n: u64, left_out: &str) -> io::Result<()> {
    if n > 0 {
        writeln!(
            out,
            "note: {n} switches the capture was missing (put back by schedlab's repair) are not {left_out}, as perf \
             never sees them (docs/real-traces.md)"
        )?;
    }
    Ok(())
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

    /// perf's scene: A (2) runs from 10 us, sleeps at 100, is woken at 300,
    /// runs at 350 until B (3) preempts it at 500, runs again 800..900.
    fn perf_scene() -> Vec<Event> {
        let mut events = scene();
        events[0] = switch(10_000, 0, 0, S, 2);
        events
    }

    #[test]
    fn timehist_lines_follow_perf_6_1() {
        let table = schedlab_trace::testing::table(&[(2, "a", 1), (3, "b", 3)], &[]);
        let mut th = Timehist::new(Vec::new(), |p, _| p == 2).unwrap();
        for e in perf_scene() {
            th.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(th.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(lines.len(), 3, "A is switched out three times: {text}");
        // Ran since the CPU's previous switch; nothing before it known.
        assert_eq!(
            lines[0],
            "       0.000100 [0000]  a[2/1]                              0.000      0.000      0.090 "
        );
        // Slept 100→350 (wait), woken at 300 (delay 300→350), ran 350→500.
        assert!(lines[1].ends_with("     0.250      0.050      0.150 "), "{text}");
        // Preempted at 500, back at 800: wait, not delay, as perf 6.1 counts it.
        assert!(lines[2].ends_with("     0.300      0.000      0.100 "), "{text}");
        let table = schedlab_trace::testing::table(&[(2, "a", 2)], &[]);
        assert_eq!(commstr(&table, 2, 0), "a[2]");
    }

    #[test]
    fn sched_latency_follows_perf_6_1() {
        let table = schedlab_trace::testing::table(&[(2, "a", 2), (3, "b", 3)], &[]);
        let mut lat = SchedLatency::new();
        for e in perf_scene() {
            lat.observe(&e);
        }
        lat.observe(&schedlab_trace::testing::event(
            950_000,
            0,
            0,
            EventKind::SchedStatRuntime { pid: 2, runtime: 123_456 },
        ));
        let rows = lat.rows(&table, |_| true);
        // A: first switch-in (delay 0) and the wakeup's 50 us; the switch-in
        // after its preemption is not measured (R+ is not runnable to perf 6.1).
        assert_eq!(rows[0].tid, 2);
        assert_eq!((rows[0].switches, rows[0].avg_delay_ns, rows[0].max_delay_ns), (2, 25_000, 50_000));
        assert_eq!(
            (rows[0].max_delay_start_ns, rows[0].max_delay_end_ns, rows[0].runtime_ns),
            (300_000, 350_000, 123_456)
        );
        assert_eq!((rows[1].tid, rows[1].switches, rows[1].avg_delay_ns), (3, 1, 0));
        let text = lat.render(&rows);
        assert!(text.contains("  a:2                   |      0.123 ms |        2 | avg:   0.025 ms | max:   0.050 ms | max start:     0.000300 s | max end:     0.000350 s\n"), "{text}");
        assert!(text.contains("  TOTAL:                |      0.123 ms |        3 |\n"), "{text}");
    }

    /// perf's default: the threads of one comm in one row, `comm:(N)`
    /// counting every thread of that comm seen, switches measured or not.
    #[test]
    fn sched_latency_merges_threads_by_comm_as_perf_does() {
        let table = schedlab_trace::testing::table(&[(2, "a", 2), (3, "a", 3), (9, "a", 9), (4, "b", 4)], &[]);
        let mut lat = SchedLatency::new();
        for e in perf_scene() {
            lat.observe(&e);
        }
        // 9 is woken and never runs; 4 runs once, first seen switched in.
        lat.observe(&wakeup(950_000, 0, 0, 9, 0));
        lat.observe(&switch(960_000, 0, 0, S, 4));
        let rows = lat.rows_by(&table, |_| true, LatencyRows::ByComm);
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!((a.label(), a.threads, a.tid), ("a:(3)".to_string(), 3, 9));
        // A's 2 switches and B's 1, A's 50 us over the 3; A's longest delay.
        assert_eq!((a.switches, a.avg_delay_ns, a.max_delay_ns), (3, 16_666, 50_000));
        assert_eq!((a.max_delay_start_ns, a.max_delay_end_ns), (300_000, 350_000));
        assert_eq!((rows[1].label(), rows[1].switches), ("b:4".to_string(), 1));
        let text = lat.render(&rows);
        assert!(text.contains("\n  a:(3)                 |      0.000 ms |        3 | avg:   0.017 ms |"), "{text}");
        // Per thread (perf's -p): A, then the two single switches, higher tid first.
        let per: Vec<Pid> = lat.rows_by(&table, |_| true, LatencyRows::PerThread).iter().map(|r| r.tid).collect();
        assert_eq!(per, [2, 4, 3]);
    }

    #[test]
    fn sched_map_names_tasks_in_order_of_first_switch_in() {
        let table = schedlab_trace::testing::table(&[(2, "a", 2), (3, "b", 3)], &[]);
        let mut map = SchedMap::new(Vec::new(), 2, false);
        for e in perf_scene() {
            map.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(map.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  *A0           0.000010 secs A0 => a:2");
        assert_eq!(lines[1], "  *.            0.000100 secs .  => swapper:0");
        assert_eq!(lines[3], "  *B0           0.000500 secs B0 => b:3");
        // A (2) exec'd `yes` at 400 us: the comm as of each switch, and the
        // note again at its first switch-in after the change, as perf draws it.
        let mut table = table;
        table.comm_history.insert(2, vec![(0, "a".into()), (400_000, "yes".into())]);
        let mut map = SchedMap::new(Vec::new(), 2, false);
        for e in perf_scene() {
            map.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(map.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "  *A0           0.000350 secs ", "{text}");
        assert_eq!(lines[4], "  *A0           0.000800 secs A0 => yes:2", "{text}");
        let mut th = Timehist::new(Vec::new(), |p, _| p == 2).unwrap();
        for e in perf_scene() {
            th.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(th.finish().unwrap()).unwrap();
        let names: Vec<&str> = text.lines().skip(3).map(|l| l[24..].split_whitespace().next().unwrap()).collect();
        assert_eq!(names, ["a[2]", "yes[2]", "yes[2]"], "switched out at 100, 500, 900 us: {text}");
    }

    /// schedlab's own figures (the report's), unlike perf 6.1, count the time
    /// preempted as delay.
    #[test]
    fn the_metrics_give_avg_and_max_delay_with_its_times() {
        let t = schedlab_trace::testing::trace(process_table(1, &[(2, "a"), (3, "b")], &[]), 1, scene());
        let m = crate::analyze(&t, &crate::AnalysisOptions::default());
        let a = m.task(2).unwrap();
        assert_eq!((a.delays, a.delay_total_ns, a.max_delay_ns, a.max_delay_end_ts), (2, 350_000, 300_000, 800_000));
        assert_eq!(a.delays_unknown, 0);
        // B (3) was switched in at its first appearance only: no delay measured.
        assert_eq!(m.task(3).unwrap().delays, 0);
    }

    /// A switch the repair put back is not perf's: the views skip it.
    #[test]
    fn a_repaired_switch_is_skipped_with_a_note() {
        let table = process_table(1, &[(2, "a")], &[]);
        let mut put_back = switch(310_000, 0, 0, S, 2);
        put_back.flags = Event::REPAIRED_FLAGS;
        let mut th = Timehist::new(Vec::new(), |p, _| p == 2).unwrap();
        for e in [switch(10_000, 0, 0, S, 2), switch(100_000, 0, 2, S, 0), put_back, switch(400_000, 0, 2, S, 0)] {
            th.observe(&e, &table).unwrap();
        }
        let text = String::from_utf8(th.finish().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[2].starts_with("note: 1 switches"), "{text}");
    }
}
