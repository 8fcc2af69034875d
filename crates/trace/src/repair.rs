//! Who ran on each CPU, checked against every event's header, and the
//! `sched_switch` events a real capture is missing put back.
//!
//! Every event a tracer records names, in its header, the task that was
//! current on the recording CPU (`comm-pid` in ftrace text, the sample's
//! pid in perf, `pid` in Perfetto's `FtraceEvent`), whatever context the
//! event came from: an interrupt names the task it interrupted. So a CPU's
//! state as the `sched_switch` events tell it can be checked at every event:
//! after a switch into task A, an event whose header names B proves the
//! trace is missing the switch from A to B somewhere between the last event
//! that named A and this one.
//!
//! Captures on some kernels do miss switches without reporting any loss.
//! On this project's host (Linux 6.18, a Firecracker guest), neither tracefs
//! nor perf ever sees a switch out of CPU 1's idle task, or out of one
//! thread of the VM's agent, while the ring buffer reports no overrun; see
//! `docs/real-traces.md`. An analysis that trusts the switches alone then
//! keeps such a CPU idle while tasks run on it (and those tasks waiting),
//! which turns into large, wrong idle, latency and work-conservation figures.
//!
//! [`SwitchRepair`] passes the events through in order and, at each
//! mismatch, inserts a switch from the task it believed current to the one
//! the header names. The inserted switch goes right after the last event
//! that proved the old task current (the latest time the old state is known
//! to hold): a wakeup onto an idle CPU is followed within microseconds by
//! the switch, while the woken task's first own event can come much later.
//! The time between the two proofs is *uncertain*: nothing says when in it
//! the switch happened. Its total per CPU is reported ([`RepairStats`]), and
//! analysis leaves out figures it cannot support (an inserted switch carries
//! [`Event::REPAIRED_FLAGS`]: a wakeup latency ending at one is unknown).
//!
//! To place a switch in the past the events are held in a window of
//! [`REPAIR_WINDOW`] events; when the proof is older than that, the switch
//! goes before the oldest event still held, and the uncertainty still
//! counts from the proof.

use std::collections::{BTreeMap, VecDeque};

use crate::event::{Event, EventKind, Nanos, Pid, PrevState};

/// Events held back so that a missing switch can be placed before them.
/// Each held event with its sequence number takes 64 bytes: 4 MiB.
pub const REPAIR_WINDOW: usize = 1 << 16;

impl Event {
    /// The flags of a `sched_switch` that [`SwitchRepair`] inserted: no
    /// tracer wrote it, so its time is only the earliest it could have been.
    pub const REPAIRED_FLAGS: [u8; 5] = *b"?rpr?";

    /// Whether [`SwitchRepair`] inserted this event.
    pub fn is_repaired(&self) -> bool {
        self.flags == Self::REPAIRED_FLAGS
    }
}

/// What [`SwitchRepair`] found on one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuRepairs {
    /// Switches inserted (a header named a task the switches had not put there).
    pub inserted: u64,
    /// Of those, switches out of the idle task.
    pub out_of_idle: u64,
    /// The sum over inserted switches of the time between the last event
    /// proving the old task and the first proving the new one, ns.
    pub uncertain_ns: u64,
    /// The longest such stretch, ns, and where it ended.
    pub max_uncertain_ns: u64,
    pub max_uncertain_at: Nanos,
    /// The first inserted switch's time.
    pub first_at: Option<Nanos>,
    /// `sched_switch` events whose `prev_pid` is not the task their own
    /// header names (counted; the header is trusted).
    pub prev_not_header: u64,
}

/// What [`SwitchRepair`] found, by CPU (only CPUs with something to say).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairStats {
    pub cpus: BTreeMap<u32, CpuRepairs>,
    /// Switches whose old task's last proof had left the window (placed
    /// before the oldest held event instead).
    pub placed_late: u64,
}

impl RepairStats {
    pub fn inserted(&self) -> u64 {
        self.cpus.values().map(|c| c.inserted).sum()
    }

    pub fn is_clean(&self) -> bool {
        self.cpus.values().all(|c| c.inserted == 0 && c.prev_not_header == 0)
    }

    /// One phrase per CPU with inserted switches, for reports and notes:
    /// `CPU 1: 1304 (1303 out of idle), 126.456 ms uncertain, the longest
    /// 863 us at 48097.696508 s`.
    pub fn per_cpu(&self) -> Vec<String> {
        let secs = |ns: Nanos| format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000);
        let ms = |ns: u64| format!("{}.{:03}", ns / 1_000_000, ns / 1000 % 1000);
        self.cpus
            .iter()
            .filter(|(_, c)| c.inserted > 0)
            .map(|(cpu, c)| {
                format!(
                    "CPU {cpu}: {} ({} out of idle), {} ms uncertain, the longest {} us at {} s",
                    c.inserted,
                    c.out_of_idle,
                    ms(c.uncertain_ns),
                    c.max_uncertain_ns / 1000,
                    secs(c.max_uncertain_at)
                )
            })
            .collect()
    }
}

/// One CPU as the events so far tell it.
#[derive(Clone, Copy)]
struct Track {
    current: Pid,
    /// Sequence number and time of the last event proving `current`.
    proof_seq: u64,
    proof_ts: Nanos,
}

/// Checks and repairs a time-ordered event stream; see the module doc.
pub struct SwitchRepair {
    tracks: BTreeMap<u32, Track>,
    /// Events held, with their sequence numbers (`None`: an inserted
    /// switch placed before the oldest held event).
    held: VecDeque<(Option<u64>, Event)>,
    /// Inserted switches to emit right after the event of that sequence number.
    after: BTreeMap<u64, Vec<Event>>,
    next_seq: u64,
    window: usize,
    stats: RepairStats,
}

impl Default for SwitchRepair {
    fn default() -> Self {
        Self::new()
    }
}

impl SwitchRepair {
    pub fn new() -> Self {
        Self::with_window(REPAIR_WINDOW)
    }

    /// A repair that holds at most `window` events (at least 1).
    pub fn with_window(window: usize) -> Self {
        SwitchRepair {
            tracks: BTreeMap::new(),
            held: VecDeque::new(),
            after: BTreeMap::new(),
            next_seq: 0,
            window: window.max(1),
            stats: RepairStats::default(),
        }
    }

    /// Take `ev` (not earlier than the events before it); events leave, in
    /// order and with any inserted switches, through `out`.
    pub fn push(&mut self, ev: Event, out: &mut impl FnMut(Event)) {
        let seq = self.next_seq;
        self.next_seq += 1;
        match self.tracks.get(&ev.cpu).copied() {
            None => {
                // A CPU's first event: its header names who ran from the start.
                self.tracks.insert(ev.cpu, Track { current: ev.ctx_pid, proof_seq: seq, proof_ts: ev.ts });
            }
            Some(t) if t.current != ev.ctx_pid => self.insert_switch(t, &ev, seq),
            Some(_) => {}
        }
        let track = self.tracks.get_mut(&ev.cpu).expect("tracked above");
        track.current = ev.ctx_pid;
        track.proof_seq = seq;
        track.proof_ts = ev.ts;
        if let EventKind::SchedSwitch { prev_pid, next_pid, .. } = ev.kind {
            if prev_pid != ev.ctx_pid {
                self.stats.cpus.entry(ev.cpu).or_default().prev_not_header += 1;
            }
            track.current = next_pid;
        }
        self.make_room();
        self.held.push_back((Some(seq), ev));
        while self.held.len() > self.window {
            self.emit_oldest(out);
        }
    }

    /// Room for one more held event, growing the deque to the window and no
    /// further: it holds the window plus the event just taken (and a switch
    /// placed before the oldest), and doubling to make room for those would
    /// hold twice the window's memory for a long trace (the issue 40
    /// `analyze` growth: 4 MiB of window became 8, and 12 while copied).
    fn make_room(&mut self) {
        if self.held.len() == self.held.capacity() {
            // (A window under 64 events, as the tests use, caps the first step too.)
            let cap = (self.held.capacity() * 2).max(64).min(self.window + 2).max(self.held.len() + 1);
            self.held.reserve_exact(cap - self.held.len());
        }
    }

    /// Emit everything held and return what was found.
    pub fn finish(mut self, out: &mut impl FnMut(Event)) -> RepairStats {
        while !self.held.is_empty() {
            self.emit_oldest(out);
        }
        self.stats
    }

    /// `ev`'s header names a task other than `t.current`: put the switch
    /// between them after the last event that proved `t.current`.
    fn insert_switch(&mut self, t: Track, ev: &Event, seq: u64) {
        let oldest = self.held.iter().find_map(|(s, _)| *s).unwrap_or(seq);
        let (after_seq, ts) = if t.proof_seq >= oldest {
            (t.proof_seq, t.proof_ts)
        } else {
            self.stats.placed_late += 1;
            // Before the oldest held event: after the one before it (gone).
            (oldest.wrapping_sub(1), self.held.front().map_or(ev.ts, |(_, e)| e.ts))
        };
        let prev_state = if t.current == 0 { PrevState::Running { preempt: false } } else { PrevState::Sleeping };
        let switch = Event {
            ts,
            cpu: ev.cpu,
            ctx_pid: t.current,
            flags: Event::REPAIRED_FLAGS,
            kind: EventKind::SchedSwitch {
                prev_pid: t.current,
                prev_prio: 120,
                prev_state,
                next_pid: ev.ctx_pid,
                next_prio: 120,
            },
        };
        if after_seq < oldest {
            // The event it belongs after is gone: it leaves first.
            self.make_room();
            self.held.push_front((None, switch));
        } else {
            self.after.entry(after_seq).or_default().push(switch);
        }
        let c = self.stats.cpus.entry(ev.cpu).or_default();
        let uncertain = ev.ts.saturating_sub(t.proof_ts);
        c.inserted += 1;
        c.out_of_idle += u64::from(t.current == 0);
        c.uncertain_ns += uncertain;
        if uncertain > c.max_uncertain_ns {
            c.max_uncertain_ns = uncertain;
            c.max_uncertain_at = ev.ts;
        }
        c.first_at.get_or_insert(ts);
    }

    fn emit_oldest(&mut self, out: &mut impl FnMut(Event)) {
        let Some((seq, ev)) = self.held.pop_front() else { return };
        out(ev);
        if let Some(list) = seq.and_then(|s| self.after.remove(&s)) {
            for e in list {
                out(e);
            }
        }
    }
}

/// Repair a whole trace's events (sorted into time order first, ties kept
/// in file order); see [`SwitchRepair`].
pub fn repair_trace(trace: &mut crate::event::Trace) -> RepairStats {
    let mut events = std::mem::take(&mut trace.events);
    events.sort_by_key(|e| e.ts);
    let mut out = Vec::with_capacity(events.len());
    let mut r = SwitchRepair::new();
    for e in events {
        r.push(e, &mut |e| out.push(e));
    }
    let stats = r.finish(&mut |e| out.push(e));
    trace.events = out;
    stats
}

#[cfg(test)]
mod tests;
