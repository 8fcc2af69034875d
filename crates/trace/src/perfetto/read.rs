//! Reading a Perfetto protobuf trace back: its ftrace events written as
//! `trace-cmd report -R` text lines, which the ftrace reader then parses
//! like any capture (so a Perfetto trace gets the same checks, repair and
//! analysis as text, and this module stays a translation).
//!
//! Read: `FtraceEventBundle`s (`TracePacket.ftrace_events`) with
//! `sched_switch`, `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task`, `sched_pi_setprio`, `generic` events named
//! `sched_stat_runtime` or `sched_wake_idle_without_ipi`, and `print`
//! (atrace `I|tgid|text` instants carrying schedlab's markers and decision
//! events, as [`super::write_perfetto`] writes them); `process_tree`
//! threads for comms; a bundle's `lost_events` flag becomes a lost-events
//! line (a gap, as in any capture); `compact_sched` (traced's default
//! encoding of sched_switch and sched_waking, see [`compact_sched`]). That
//! covers this crate's own traces and what `traced`'s ftrace data source
//! records of the scheduler. Other ftrace events are counted and skipped.
//!
//! Errors name the byte offset of the packet and what was malformed; a
//! packet longer than [`MAX_PACKET_BYTES`] is refused rather than held.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use super::field as f;

/// The largest packet read (traced writes packets of a few hundred KB).
pub const MAX_PACKET_BYTES: u64 = 64 << 20;

/// A malformed Perfetto trace, located by byte offset.
#[derive(Debug)]
pub struct PerfettoReadError {
    pub offset: u64,
    pub message: String,
}

impl std::error::Error for PerfettoReadError {}

impl std::fmt::Display for PerfettoReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

/// What [`perfetto_to_text`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    pub packets: u64,
    pub events: u64,
    /// Ftrace events of kinds not read, by field number.
    pub skipped: BTreeMap<u32, u64>,
}

/// One protobuf field: number and value.
enum Val<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

/// The fields of one message, in order; `Err` with the offset in `buf` of
/// what is malformed.
fn fields(buf: &[u8]) -> Result<Vec<(u32, Val<'_>)>, (usize, String)> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < buf.len() {
        let at = p;
        let key = varint(buf, &mut p).ok_or((at, "truncated field key".to_string()))?;
        let (num, wire) = ((key >> 3) as u32, key & 7);
        if num == 0 {
            return Err((at, "field number 0".into()));
        }
        let v = match wire {
            0 => Val::Int(varint(buf, &mut p).ok_or((at, format!("field {num}: truncated varint")))?),
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                let b = buf.get(p..p + n).ok_or((at, format!("field {num}: truncated fixed{}", n * 8)))?;
                p += n;
                Val::Int(b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)))
            }
            2 => {
                let len = varint(buf, &mut p).ok_or((at, format!("field {num}: truncated length")))? as usize;
                let b = p
                    .checked_add(len)
                    .and_then(|end| buf.get(p..end))
                    .ok_or((at, format!("field {num}: length {len} runs past the message")))?;
                p += len;
                Val::Bytes(b)
            }
            w => return Err((at, format!("field {num}: wire type {w} is not one Perfetto writes"))),
        };
        out.push((num, v));
    }
    Ok(out)
}

fn varint(buf: &[u8], p: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*p)?;
        *p += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn int(fs: &[(u32, Val)], n: u32) -> Option<i64> {
    fs.iter().rev().find_map(|(k, v)| match v {
        Val::Int(x) if *k == n => Some(*x as i64),
        _ => None,
    })
}

fn text<'a>(fs: &'a [(u32, Val)], n: u32) -> Option<&'a str> {
    fs.iter().rev().find_map(|(k, v)| match v {
        Val::Bytes(b) if *k == n => std::str::from_utf8(b).ok(),
        _ => None,
    })
}

fn sub<'a>(fs: &'a [(u32, Val<'a>)], n: u32) -> Option<&'a [u8]> {
    fs.iter().find_map(|(k, v)| match v {
        Val::Bytes(b) if *k == n => Some(*b),
        _ => None,
    })
}

/// Translate the Perfetto trace read from `input` into ftrace text on
/// `out`: a `cpus=N` header, then one line per event read, bundle by
/// bundle (per CPU: not in time order across CPUs).
pub fn perfetto_to_text(mut input: impl BufRead, out: &mut impl Write) -> Result<PerfettoStats, PerfettoReadError> {
    let mut st = State::default();
    let mut offset = 0u64;
    let mut packet = Vec::new();
    let mut header = false;
    let io_err = |offset, e: io::Error| PerfettoReadError { offset, message: e.to_string() };
    loop {
        // Trace { repeated TracePacket packet = 1; }: key 0x0a, length, bytes.
        let mut key = [0u8; 1];
        match input.read(&mut key) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(io_err(offset, e)),
        }
        let at = offset;
        if key[0] != 0x0a {
            return Err(PerfettoReadError {
                offset: at,
                message: format!("expected a TracePacket (field 1, 0x0a), found byte {:#04x}", key[0]),
            });
        }
        let mut len = 0u64;
        let mut used = 1u64;
        for shift in (0..64).step_by(7) {
            let mut b = [0u8; 1];
            if input.read(&mut b).map_err(|e| io_err(at, e))? == 0 {
                return Err(PerfettoReadError { offset: at, message: "truncated packet length".into() });
            }
            used += 1;
            len |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                break;
            }
        }
        if len > MAX_PACKET_BYTES {
            return Err(PerfettoReadError {
                offset: at,
                message: format!("a packet of {len} bytes, more than the {MAX_PACKET_BYTES} read"),
            });
        }
        packet.resize(len as usize, 0);
        input.read_exact(&mut packet).map_err(|_| PerfettoReadError {
            offset: at,
            message: format!("the packet's {len} bytes run past the end of the file"),
        })?;
        offset += used + len;
        st.stats.packets += 1;
        let bad = |(o, m): (usize, String)| PerfettoReadError { offset: at + used + o as u64, message: m };
        let fs = fields(&packet).map_err(bad)?;
        if let Some(info) = sub(&fs, f::packet::SYSTEM_INFO) {
            if let Some(n) = int(&fields(info).map_err(bad)?, f::system_info::NUM_CPUS) {
                writeln!(out, "cpus={n}").map_err(|e| io_err(at, e))?;
                header = true;
            }
        }
        if let Some(tree) = sub(&fs, f::packet::PROCESS_TREE) {
            for (k, v) in fields(tree).map_err(bad)? {
                if let (f::process_tree::THREADS, Val::Bytes(b)) = (k, v) {
                    let t = fields(b).map_err(bad)?;
                    if let (Some(tid), Some(name)) =
                        (int(&t, f::process_tree::THREAD_TID), text(&t, f::process_tree::THREAD_NAME))
                    {
                        st.comms.insert(tid, name.to_string());
                    }
                }
            }
        }
        for (k, v) in &fs {
            let (f::packet::FTRACE_EVENTS, Val::Bytes(b)) = (*k, v) else { continue };
            if !header {
                writeln!(out, "cpus=0").map_err(|e| io_err(at, e))?;
                header = true;
            }
            st.bundle(b, out).map_err(|r| match r {
                Bundle::Malformed(e) => bad(e),
                Bundle::Io(e) => io_err(at, e),
            })?;
        }
    }
    Ok(st.stats)
}

/// What the reader knows between packets.
#[derive(Default)]
struct State {
    stats: PerfettoStats,
    comms: BTreeMap<i64, String>,
    /// Each CPU's current task and its priority, from its last switch: a
    /// compact switch's previous task and a compact waking's waker.
    current: BTreeMap<i64, (i64, i64)>,
}

enum Bundle {
    Malformed((usize, String)),
    Io(io::Error),
}

/// `FtraceEventBundle.lost_events` (the kernel's ring buffer overran before
/// this bundle) and `compact_sched`.
const LOST_EVENTS: u32 = 3;
const COMPACT_SCHED: u32 = 4;

impl State {
    fn bundle(&mut self, b: &[u8], out: &mut impl Write) -> Result<(), Bundle> {
        let fs = fields(b).map_err(Bundle::Malformed)?;
        let cpu = int(&fs, f::bundle::CPU).unwrap_or(0);
        if int(&fs, LOST_EVENTS).is_some_and(|v| v != 0) {
            // As trace-cmd reports a loss of unknown size: the reader makes it a gap.
            writeln!(out, "CPU:{cpu} [EVENTS DROPPED]").map_err(Bundle::Io)?;
            // Who runs after the loss is unknown until the next switch.
            self.current.remove(&cpu);
        }
        if let Some(c) = sub(&fs, COMPACT_SCHED) {
            compact_sched(c, cpu, self, out)?;
        }
        let State { stats, comms, current } = self;
        for (k, v) in &fs {
            let (f::bundle::EVENT, Val::Bytes(e)) = (*k, v) else { continue };
            let ev = fields(e).map_err(Bundle::Malformed)?;
            let ts = int(&ev, f::event::TIMESTAMP).unwrap_or(0) as u64;
            let pid = int(&ev, f::event::PID).unwrap_or(0);
            let Some((line, name_comms)) = event_line(&ev, stats)? else { continue };
            if line.starts_with("sched_switch:") {
                if let (Some((next, _)), Some(prio)) = (name_comms.last(), sub(&ev, f::event::SCHED_SWITCH)) {
                    let prio = fields(prio).ok().and_then(|m| int(&m, f::switch::NEXT_PRIO)).unwrap_or(120);
                    current.insert(cpu, (*next, prio));
                }
            }
            for (p, c) in name_comms {
                comms.insert(p, c);
            }
            let comm = if pid == 0 { "<idle>" } else { comms.get(&pid).map_or("<...>", String::as_str) };
            writeln!(out, "{comm}-{pid} [{cpu:03}] {}.{:09}: {line}", ts / 1_000_000_000, ts % 1_000_000_000)
                .map_err(Bundle::Io)?;
            stats.events += 1;
        }
        Ok(())
    }
}

/// Every varint of repeated field `n`, packed or not.
fn repeated(fs: &[(u32, Val)], n: u32) -> Result<Vec<u64>, Bundle> {
    let mut out = Vec::new();
    for (k, v) in fs {
        match v {
            Val::Int(x) if *k == n => out.push(*x),
            Val::Bytes(b) if *k == n => {
                let mut p = 0;
                while p < b.len() {
                    let at = p;
                    out.push(
                        varint(b, &mut p)
                            .ok_or(Bundle::Malformed((at, format!("field {n}: truncated packed varint"))))?,
                    );
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// `CompactSched` field numbers (ftrace_event_bundle.proto).
mod compact {
    pub const SWITCH_TIMESTAMP: u32 = 1;
    pub const SWITCH_PREV_STATE: u32 = 2;
    pub const SWITCH_NEXT_PID: u32 = 3;
    pub const SWITCH_NEXT_PRIO: u32 = 4;
    pub const INTERN_TABLE: u32 = 5;
    pub const SWITCH_NEXT_COMM_INDEX: u32 = 6;
    pub const WAKING_TIMESTAMP: u32 = 7;
    pub const WAKING_PID: u32 = 8;
    pub const WAKING_TARGET_CPU: u32 = 9;
    pub const WAKING_PRIO: u32 = 10;
    pub const WAKING_COMM_INDEX: u32 = 11;
}

/// A bundle's `compact_sched`: parallel packed arrays of switches and of
/// wakings, each list's timestamps absolute for the first entry and then
/// deltas from the one before (traced's `compact_sched.h`, read the same
/// way by trace_processor's `ftrace_tokenizer.cc`); comms by index into
/// `intern_table`. Arrays of unequal lengths or an index past the table
/// are errors (trace_processor counts them and reads the common prefix). A switch does not store its previous task: it is the
/// CPU's current task, from the switch before it (so the first switch seen
/// on a CPU has none and is skipped, counted in `stats.skipped[0]`). A
/// waking does not store its waker: it is the task current on the bundle's
/// CPU at that time, as trace_processor takes it too.
fn compact_sched(b: &[u8], cpu: i64, st: &mut State, out: &mut impl Write) -> Result<(), Bundle> {
    use compact as c;
    let State { stats, comms, current } = st;
    let fs = fields(b).map_err(Bundle::Malformed)?;
    let interned: Vec<&str> = fs
        .iter()
        .filter_map(|(k, v)| match v {
            Val::Bytes(s) if *k == c::INTERN_TABLE => Some(std::str::from_utf8(s).unwrap_or("<...>")),
            _ => None,
        })
        .collect();
    let name = |i: u64| {
        interned.get(i as usize).copied().ok_or_else(|| {
            Bundle::Malformed((
                0,
                format!("compact_sched: comm index {i} beyond the intern table of {}", interned.len()),
            ))
        })
    };
    let absolute = |deltas: Vec<u64>| {
        let mut acc = 0u64;
        deltas
            .into_iter()
            .map(|d| {
                acc = acc.wrapping_add(d);
                acc
            })
            .collect::<Vec<_>>()
    };
    let sw_ts = absolute(repeated(&fs, c::SWITCH_TIMESTAMP)?);
    let sw = [c::SWITCH_PREV_STATE, c::SWITCH_NEXT_PID, c::SWITCH_NEXT_PRIO, c::SWITCH_NEXT_COMM_INDEX]
        .map(|n| repeated(&fs, n));
    let [prev_state, next_pid, next_prio, next_comm] = sw;
    let (prev_state, next_pid, next_prio, next_comm) = (prev_state?, next_pid?, next_prio?, next_comm?);
    let wk_ts = absolute(repeated(&fs, c::WAKING_TIMESTAMP)?);
    let wk = [c::WAKING_PID, c::WAKING_TARGET_CPU, c::WAKING_PRIO, c::WAKING_COMM_INDEX].map(|n| repeated(&fs, n));
    let [wk_pid, wk_cpu, wk_prio, wk_comm] = wk;
    let (wk_pid, wk_cpu, wk_prio, wk_comm) = (wk_pid?, wk_cpu?, wk_prio?, wk_comm?);
    let n = sw_ts.len();
    if [prev_state.len(), next_pid.len(), next_prio.len(), next_comm.len()].iter().any(|&l| l != n) {
        return Err(Bundle::Malformed((
            0,
            format!("compact_sched: {n} switch timestamps but arrays of other lengths"),
        )));
    }
    let m = wk_ts.len();
    if [wk_pid.len(), wk_cpu.len(), wk_prio.len(), wk_comm.len()].iter().any(|&l| l != m) {
        return Err(Bundle::Malformed((
            0,
            format!("compact_sched: {m} waking timestamps but arrays of other lengths"),
        )));
    }
    let line = |out: &mut dyn Write, comms: &BTreeMap<i64, String>, ctx: i64, ts: u64, text: String| {
        let comm = if ctx == 0 { "<idle>" } else { comms.get(&ctx).map_or("<...>", String::as_str) };
        writeln!(out, "{comm}-{ctx} [{cpu:03}] {}.{:09}: {text}", ts / 1_000_000_000, ts % 1_000_000_000)
    };
    // Merge the two lists by time: a waking at a switch's time goes first.
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if j < m && (i == n || wk_ts[j] <= sw_ts[i]) {
            let (pid, c_name) = (wk_pid[j] as i32 as i64, name(wk_comm[j])?);
            comms.insert(pid, c_name.to_string());
            match current.get(&cpu) {
                Some(&(waker, _)) => {
                    let text = format!(
                        "sched_waking: comm={c_name} pid={pid} prio={} target_cpu={:03}",
                        wk_prio[j] as i32, wk_cpu[j] as i32
                    );
                    line(out, comms, waker, wk_ts[j], text).map_err(Bundle::Io)?;
                    stats.events += 1;
                }
                None => *stats.skipped.entry(0).or_default() += 1,
            }
            j += 1;
        } else {
            let (np, n_name) = (next_pid[i] as i32 as i64, name(next_comm[i])?);
            match current.get(&cpu) {
                Some(&(prev, prev_prio)) => {
                    let p_name = if prev == 0 {
                        format!("swapper/{cpu}")
                    } else {
                        comms.get(&prev).cloned().unwrap_or_else(|| "<...>".into())
                    };
                    // The previous task's priority is not stored either: the
                    // one it was switched in with.
                    let text = format!(
                        "sched_switch: prev_comm={p_name} prev_pid={prev} prev_prio={prev_prio} prev_state={} \
                         next_comm={n_name} next_pid={np} next_prio={}",
                        prev_state[i] as i64, next_prio[i] as i32
                    );
                    line(out, comms, prev, sw_ts[i], text).map_err(Bundle::Io)?;
                    stats.events += 1;
                }
                None => *stats.skipped.entry(0).or_default() += 1,
            }
            comms.insert(np, n_name.to_string());
            current.insert(cpu, (np, i64::from(next_prio[i] as i32)));
            i += 1;
        }
    }
    Ok(())
}

/// The `name: payload` text of one `FtraceEvent`, and the comms it names;
/// `None` for an event kind not read (counted).
#[allow(clippy::type_complexity)]
fn event_line(ev: &[(u32, Val)], stats: &mut PerfettoStats) -> Result<Option<(String, Vec<(i64, String)>)>, Bundle> {
    let payload = ev.iter().find(|(k, v)| {
        !matches!(*k, f::event::TIMESTAMP | f::event::PID | f::event::COMMON_FLAGS) && matches!(v, Val::Bytes(_))
    });
    let Some((kind, Val::Bytes(body))) = payload else { return Ok(None) };
    let m = fields(body).map_err(Bundle::Malformed)?;
    let s = |n| text(&m, n).unwrap_or("").to_string();
    let i = |n| int(&m, n).unwrap_or(0);
    // Signed fields are written as int64 varints: negative values arrive as
    // 2^64 - x; `as i64` in `int` restores them.
    let line = match *kind {
        f::event::SCHED_SWITCH => {
            let (pc, nc) = (s(f::switch::PREV_COMM), s(f::switch::NEXT_COMM));
            let (pp, np) = (i(f::switch::PREV_PID), i(f::switch::NEXT_PID));
            let line = format!(
                "sched_switch: prev_comm={pc} prev_pid={pp} prev_prio={} prev_state={} next_comm={nc} next_pid={np} next_prio={}",
                i(f::switch::PREV_PRIO),
                i(f::switch::PREV_STATE),
                i(f::switch::NEXT_PRIO)
            );
            return Ok(Some((line, vec![(pp, pc), (np, nc)])));
        }
        f::event::SCHED_WAKING | f::event::SCHED_WAKEUP | f::event::SCHED_WAKEUP_NEW => {
            let name = match *kind {
                f::event::SCHED_WAKING => "sched_waking",
                f::event::SCHED_WAKEUP => "sched_wakeup",
                _ => "sched_wakeup_new",
            };
            let (c, p) = (s(f::wake::COMM), i(f::wake::PID));
            let line =
                format!("{name}: comm={c} pid={p} prio={} target_cpu={:03}", i(f::wake::PRIO), i(f::wake::TARGET_CPU));
            return Ok(Some((line, vec![(p, c)])));
        }
        f::event::SCHED_MIGRATE_TASK => format!(
            "sched_migrate_task: comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
            s(f::migrate::COMM),
            i(f::migrate::PID),
            i(f::migrate::PRIO),
            i(f::migrate::ORIG_CPU),
            i(f::migrate::DEST_CPU)
        ),
        f::event::SCHED_PI_SETPRIO => format!(
            "sched_pi_setprio: comm={} pid={} oldprio={} newprio={}",
            s(f::pi_setprio::COMM),
            i(f::pi_setprio::PID),
            i(f::pi_setprio::OLDPRIO),
            i(f::pi_setprio::NEWPRIO)
        ),
        f::event::CPU_FREQUENCY => {
            format!("cpu_frequency: state={} cpu_id={}", i(f::cpu_frequency::STATE), i(f::cpu_frequency::CPU_ID))
        }
        f::event::PRINT => {
            let buf = s(f::print::BUF);
            // atrace instant `I|tgid|text`: schedlab's decisions print as
            // their own event lines, markers as trace_marker writes.
            let body = buf.strip_prefix("I|").and_then(|r| r.split_once('|')).map_or(buf.as_str(), |(_, t)| t);
            let body = body.trim_end_matches('\n');
            if body.starts_with("schedlab_") {
                body.to_string()
            } else {
                format!("tracing_mark_write: {body}")
            }
        }
        f::event::GENERIC => {
            let name = s(f::generic::EVENT_NAME);
            let mut parts = Vec::new();
            for (k, v) in &m {
                let (f::generic::FIELD, Val::Bytes(fb)) = (*k, v) else { continue };
                let g = fields(fb).map_err(Bundle::Malformed)?;
                let key = text(&g, f::generic::FIELD_NAME).unwrap_or("");
                let val = text(&g, f::generic::FIELD_STR_VALUE).map(str::to_string).unwrap_or_else(|| {
                    int(&g, f::generic::FIELD_INT_VALUE)
                        .map(|x| x.to_string())
                        .or_else(|| int(&g, f::generic::FIELD_UINT_VALUE).map(|x| (x as u64).to_string()))
                        .unwrap_or_default()
                });
                parts.push(format!("{key}={val}"));
            }
            let unit = if name == "sched_stat_runtime" { " [ns]" } else { "" };
            format!("{name}: {}{unit}", parts.join(" "))
        }
        other => {
            *stats.skipped.entry(other).or_default() += 1;
            return Ok(None);
        }
    };
    Ok(Some((line, Vec::new())))
}
