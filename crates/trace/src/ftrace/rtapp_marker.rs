//! rt-app's own `trace_marker` lines, read as workload markers: the pass
//! markers of master (`rtapp_loop`) and 1.0 (`[N] begins loop ...`) and
//! master's per-pass `rtapp_stats`.

use super::payload::{num, perr, tokens, PErr};
use crate::event::UserOp;

/// rt-app's pass and statistics markers, in master's format
/// (`rtapp_loop: event=start thread_loop=0 phase=1 phase_loop=2`,
/// `rtapp_stats: period=.. run=.. wu_lat=.. slack=.. c_period=.. c_run=..`)
/// or 1.0's (`[0] begins loop 0 phase 1 step 2`, `[0] end loop ...`). Its
/// other markers (`rtapp_main`, `rtapp_task`, `rtapp_event`, 1.0's
/// `[N] starts`) are not needed and are left out.
pub(super) fn parse_rtapp_marker(text: &str, base: usize) -> Result<Option<UserOp>, PErr> {
    let text = text.trim_end();
    if let Some(rest) = text.strip_prefix("rtapp_loop:") {
        let f = rtapp_fields(rest, base + "rtapp_loop:".len(), &["event", "thread_loop", "phase", "phase_loop"])?;
        let start = match f[0].0 {
            "start" => true,
            "end" => false,
            other => return Err(perr(f[0].1, format!("`rtapp_loop: event={other}`: expected start or end"))),
        };
        let n = |i: usize, what: &str| num::<u32>((f[i].0, f[i].1), what);
        return Ok(Some(UserOp::RtAppLoop {
            start,
            thread_loop: n(1, "thread_loop")?,
            phase: n(2, "phase")?,
            phase_loop: n(3, "phase_loop")?,
        }));
    }
    if let Some(rest) = text.strip_prefix("rtapp_stats:") {
        let keys = ["period", "run", "wu_lat", "slack", "c_period", "c_run"];
        let f = rtapp_fields(rest, base + "rtapp_stats:".len(), &keys)?;
        // rt-app writes them with `%d`: a value past a C int is not its.
        let n = |i: usize| {
            let v = num::<i64>((f[i].0, f[i].1), keys[i])?;
            i32::try_from(v).map_err(|_| {
                perr(f[i].1, format!("`{}={v}` is out of range: rt-app prints it as a C int (%d)", keys[i]))
            })
        };
        return Ok(Some(UserOp::RtAppStats {
            period: n(0)?,
            run: n(1)?,
            wu_lat: n(2)?,
            slack: n(3)?,
            c_period: n(4)?,
            c_run: n(5)?,
        }));
    }
    // 1.0: `[N] begins loop L phase P step S` / `[N] end loop L phase P step S`.
    let Some(after) = text.strip_prefix('[') else { return Ok(None) };
    let Some((idx, rest)) = after.split_once("] ") else { return Ok(None) };
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let start = if rest.starts_with("begins loop ") {
        true
    } else if rest.starts_with("end loop ") {
        false
    } else {
        return Ok(None);
    };
    // Text that only looks like 1.0's marker is someone else's: not ours to refuse.
    let words: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| words.get(i).and_then(|w| w.parse::<u32>().ok());
    match (words.len(), words.get(3), words.get(5), n(2), n(4), n(6)) {
        (7, Some(&"phase"), Some(&"step"), Some(thread_loop), Some(phase), Some(phase_loop)) => {
            Ok(Some(UserOp::RtAppLoop { start, thread_loop, phase, phase_loop }))
        }
        _ => Ok(None),
    }
}

/// The values of `keys`, in that order, from `key=value` tokens (each
/// with its offset); a missing key is an error at the marker's end.
fn rtapp_fields<'a>(rest: &'a str, base: usize, keys: &[&str]) -> Result<Vec<(&'a str, usize)>, PErr> {
    let toks = tokens(rest, base);
    keys.iter()
        .map(|k| {
            toks.iter()
                .find_map(|&(t, off)| {
                    t.strip_prefix(k).and_then(|r| r.strip_prefix('=')).map(|v| (v, off + k.len() + 1))
                })
                .ok_or_else(|| perr(base + rest.len(), format!("rt-app marker: expected `{k}=`")))
        })
        .collect()
}
