//! rt-app's per-thread log rows for a simulated run of an rt-app file: one
//! row per pass over a phase's events, with the columns rt-app 1.0's
//! `thread_body()` and `run_event()` fill in (src/rt-app.c).
//!
//! `run` is the wall time of the `run`/`runtime` events (rt-app reads the
//! clock around each), `period` the pass's wall time, `slack` the last
//! timer's boundary less the time it was reached (negative when late),
//! `wu_lat` the sum of the timers' wakeup latencies (the boundary to the
//! thread running again; a timer that did not sleep resets it to 0, as
//! rt-app does), `c_duration` and `c_period` the configured run and timer
//! totals. rt-app's `perf` (calibrated loops executed) has no meaning in
//! the model and is left out.

use schedlab_scenario::Op;

/// One row of an rt-app log, in nanoseconds of the simulated clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtAppRow {
    pub start_ns: u64,
    pub end_ns: u64,
    pub run_ns: u64,
    pub slack_ns: i64,
    pub c_duration_ns: u64,
    pub c_period_ns: u64,
    pub wu_lat_ns: u64,
}

/// A thread's rows so far and the one being filled.
#[derive(Clone, Debug, Default)]
pub struct RowLog {
    pub rows: Vec<RtAppRow>,
    open: Option<RtAppRow>,
    /// The row start (op index) of the open row.
    open_pc: Option<usize>,
    /// The op in progress and when it was first executed.
    op_began: Option<(usize, u64)>,
    /// A timer (the op index) slept until this boundary; the thread's next
    /// op (or the end of its pass) is its wakeup. The timer's own syscall
    /// time re-enters its op before it sleeps, which is not one.
    timer_due: Option<(usize, u64)>,
}

impl RowLog {
    /// Before the op at `pc` executes at `now`: a woken timer's latency, a
    /// new row where one begins, the op's start.
    pub(crate) fn before_op(&mut self, pc: usize, now: u64, row_starts: &[usize]) {
        if let Some((timer_pc, due)) = self.timer_due {
            if timer_pc != pc {
                self.timer_due = None;
                if let Some(row) = &mut self.open {
                    row.wu_lat_ns += now.saturating_sub(due);
                }
            }
        }
        if self.open_pc != Some(pc) && row_starts.binary_search(&pc).is_ok() {
            self.close(now);
            self.open = Some(RtAppRow { start_ns: now, ..Default::default() });
            self.open_pc = Some(pc);
        }
        if self.op_began.map(|(p, _)| p) != Some(pc) {
            self.op_began = Some((pc, now));
        }
    }

    /// `op` (begun at the recorded time) completed at `now`.
    pub(crate) fn op_done(&mut self, op: &Op, now: u64) {
        let (Some(row), Some((_, began))) = (&mut self.open, self.op_began.take()) else { return };
        match *op {
            Op::Run { ns } | Op::RunWall { ns } => {
                row.run_ns += now.saturating_sub(began);
                row.c_duration_ns += ns;
            }
            _ => {}
        }
    }

    /// The timer at op `pc`, reached at `now`, whose boundary is `next`;
    /// `sleeps` unless passed.
    pub(crate) fn timer(&mut self, pc: usize, next: u64, now: u64, period_ns: u64, sleeps: bool) {
        let Some(row) = &mut self.open else { return };
        row.c_period_ns += period_ns;
        row.slack_ns = next as i64 - now as i64;
        if sleeps {
            self.timer_due = Some((pc, next));
        } else {
            row.wu_lat_ns = 0;
        }
    }

    /// The pass ends at `now` (the next row begins, or the program's end);
    /// a timer that ended it was woken now.
    pub(crate) fn close(&mut self, now: u64) {
        if let Some((_, due)) = self.timer_due.take() {
            if let Some(row) = &mut self.open {
                row.wu_lat_ns += now.saturating_sub(due);
            }
        }
        if let Some(mut row) = self.open.take() {
            row.end_ns = now;
            self.rows.push(row);
        }
        self.open_pc = None;
    }
}

/// A thread's rows as rt-app 1.0 writes its log file (`log_timing()`'s
/// columns and widths, times in microseconds; `idx` is the thread's index,
/// `perf` is 0, `start`/`end` are on the simulated clock, which starts at 0
/// where the threads start).
pub fn render_log(idx: usize, policy: &str, priority: i64, rows: &[RtAppRow]) -> String {
    use std::fmt::Write;
    let us = |ns: u64| ns / 1_000;
    let mut out = format!("# Policy : {policy} priority : {priority}\n");
    let _ = writeln!(
        out,
        "#idx {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
        "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration", "c_period", "wu_lat"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{idx:>4} {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
            0,
            us(r.run_ns),
            us(r.end_ns.saturating_sub(r.start_ns)),
            us(r.start_ns),
            us(r.end_ns),
            us(r.start_ns),
            r.slack_ns / 1_000,
            us(r.c_duration_ns),
            us(r.c_period_ns),
            us(r.wu_lat_ns)
        );
    }
    out
}

/// A log file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct RtAppLogError {
    pub path: std::path::PathBuf,
    pub source: std::io::Error,
}

/// `--rtapp-log DIR`: one file per thread of `result`, named as rt-app
/// names them (`<basename>-<task>-<index>.log`). A forked thread's log is
/// named as rt-app names it, `<task>-<index>-<nnnn>` (its index among all
/// threads, then the fork's number).
pub fn write_logs(
    dir: &std::path::Path,
    basename: &str,
    scenario: &schedlab_scenario::Scenario,
    result: &crate::SimResult,
) -> Result<(), RtAppLogError> {
    let rows = &result.rtapp_log;
    let failed = |path: &std::path::Path, source| RtAppLogError { path: path.to_path_buf(), source };
    std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
    for (i, t) in scenario.threads.iter().enumerate() {
        let priority = if t.policy.is_rt() { i64::from(t.rt_priority) } else { i64::from(t.nice) };
        let text = render_log(i, t.policy.name(), priority, rows.get(i).map_or(&[][..], |r| r));
        let path = dir.join(format!("{basename}-{}-{i}.log", t.group));
        std::fs::write(&path, text).map_err(|e| failed(&path, e))?;
    }
    for (i, outcome) in result.threads.iter().enumerate().skip(scenario.threads.len()) {
        let Some(t) = scenario.forked_spec(&outcome.name) else { continue };
        let Some(r) = rows.get(i).filter(|r| !r.is_empty()) else { continue };
        let n = outcome.name.rsplit('-').next().and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
        let n = n.saturating_sub(u64::from(t.instance));
        let priority = if t.policy.is_rt() { i64::from(t.rt_priority) } else { i64::from(t.nice) };
        let text = render_log(i, t.policy.name(), priority, r);
        let path = dir.join(format!("{basename}-{}-{i}-{n:04}.log", t.group));
        std::fs::write(&path, text).map_err(|e| failed(&path, e))?;
    }
    Ok(())
}
