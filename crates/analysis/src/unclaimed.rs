//! One CPU's unclaimed idle time, accounted as the events arrive: the
//! stretches during which the CPU is idle and some task that may run on
//! it is in a *qualified* violation (one that lasts at least `lag`; a lag
//! of 0 takes every violation, the strict figure).
//!
//! Whether a violation qualifies is known only `lag` after it began, so
//! the CPU's changes are kept for that long and replayed once final: at
//! time `now` nothing before `now - lag` can change any more (a violation
//! that began earlier has either ended, and is known, or has lasted `lag`
//! and qualified). Memory is the changes of the last `lag` of time.
//!
//! At a lag of 0 every change is final when its instant closes: the
//! strict figure keeps no log and evaluates a CPU at the instant it
//! changes ([`Stretches::set`]); on a large machine a violation of a task
//! allowed everywhere touches every idle CPU, and a log replayed per CPU
//! was most of the collector's cost (issue 39).

use std::collections::VecDeque;

use schedlab_trace::Nanos;

use crate::workcons::ViolationStats;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// The CPU's idle state after the events at this instant.
    Idle(bool),
    /// A qualified violation of a claimant began or ended.
    Start,
    End,
}

/// One CPU's stretches of unclaimed idle time, from its state after each
/// instant that may have changed it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stretches {
    /// The stretch in progress.
    open: Option<Nanos>,
    pub stats: ViolationStats,
}

impl Stretches {
    /// After the changes at `ts` the CPU is unclaimed (idle while a
    /// claimant's qualified violation is in progress), or not.
    pub fn set(&mut self, ts: Nanos, unclaimed: bool) {
        match (unclaimed, self.open) {
            (true, None) => self.open = Some(ts),
            (false, Some(since)) => {
                self.close(since, ts);
                self.open = None;
            }
            _ => {}
        }
    }

    fn close(&mut self, since: Nanos, end: Nanos) {
        if end > since {
            self.stats.add(end - since);
        }
    }

    /// Close the stretch in progress at `end`.
    pub fn finish(&mut self, end: Nanos) {
        if let Some(since) = self.open.take() {
            self.close(since, end);
        }
    }
}

/// The accounting of one CPU at a lag above 0.
#[derive(Clone, Debug)]
pub(crate) struct Unclaimed {
    /// Changes at or after `cursor`, in time order.
    log: VecDeque<(Nanos, Change)>,
    /// Everything before this is final and replayed.
    cursor: Nanos,
    idle: bool,
    /// Qualified violations in progress at the cursor.
    active: u32,
    /// The stretches replayed so far (one may be open at the cursor).
    pub stretches: Stretches,
}

impl Unclaimed {
    pub fn new(start: Nanos, idle: bool) -> Self {
        Unclaimed { log: VecDeque::new(), cursor: start, idle, active: 0, stretches: Stretches::default() }
    }

    fn insert(&mut self, ts: Nanos, c: Change) {
        debug_assert!(ts >= self.cursor, "a change before the final cursor");
        // After every change at the same instant: the log keeps arrival
        // order within an instant, and replay evaluates an instant whole.
        // Most changes are the latest yet: appended without the search and
        // `VecDeque::insert`'s general path.
        if self.log.back().is_none_or(|&(t, _)| t <= ts) {
            self.log.push_back((ts, c));
            return;
        }
        let at = self.log.partition_point(|&(t, _)| t <= ts);
        self.log.insert(at, (ts, c));
    }

    pub fn idle_changed(&mut self, ts: Nanos, idle: bool) {
        self.insert(ts, Change::Idle(idle));
    }

    /// A claimant's violation from `start` qualified (now or at its end).
    pub fn qualified(&mut self, start: Nanos) {
        self.insert(start, Change::Start);
    }

    /// A qualified violation ended at `end`.
    pub fn ended(&mut self, end: Nanos) {
        self.insert(end, Change::End);
    }

    /// Replay every change before `until`.
    pub fn advance(&mut self, until: Nanos) {
        while let Some(&(ts, _)) = self.log.front() {
            if ts >= until {
                break;
            }
            while let Some(&(t, c)) = self.log.front() {
                if t != ts {
                    break;
                }
                self.log.pop_front();
                match c {
                    Change::Idle(b) => self.idle = b,
                    Change::Start => self.active += 1,
                    Change::End => self.active -= 1,
                }
            }
            self.stretches.set(ts, self.idle && self.active > 0);
        }
        self.cursor = self.cursor.max(until);
    }

    /// Replay everything and close the stretch in progress at `end`.
    pub fn finish(&mut self, end: Nanos) {
        self.advance(Nanos::MAX);
        self.stretches.finish(end);
    }
}
