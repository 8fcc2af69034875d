//! `[[measure]]`: named latencies between two workload markers, the way the
//! seed reports define their metric ("L resumes within 100 ms of W
//! blocking"). The simulator and the real runner both emit the markers; the
//! analysis pairs them.
//!
//! ```toml
//! [[measure]]
//! name = "L resume"
//! from = "W post t_w"          # THREAD OP [OBJECT]
//! to = "L poll_done t_w"
//! within = "100ms"             # optional: report how many intervals end in time
//! ```
//!
//! THREAD is a comm (`worker-3`) or a `[[thread]]` name (every instance).
//! OP is one of the marker operations below; OBJECT names the eventfd, flag
//! or mutex (`*` = any), and is absent for `loop_end`.

use toml::{Spanned, Value};

use crate::values::{self, Ctx, Zero};
use crate::{InputError, ObjId, ThreadSpec};

/// A workload marker a measure can start or end on (the ops the trace
/// records as `schedlab ...` markers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOp {
    Signal,
    WaitDone,
    Post,
    PollDone,
    Lock,
    Unlock,
    LoopEnd,
}

impl MarkerOp {
    pub const ALL: [MarkerOp; 7] = [
        MarkerOp::Signal,
        MarkerOp::WaitDone,
        MarkerOp::Post,
        MarkerOp::PollDone,
        MarkerOp::Lock,
        MarkerOp::Unlock,
        MarkerOp::LoopEnd,
    ];

    /// The name used in files and in the trace markers.
    pub fn as_str(&self) -> &'static str {
        match self {
            MarkerOp::Signal => "signal",
            MarkerOp::WaitDone => "wait_done",
            MarkerOp::Post => "post",
            MarkerOp::PollDone => "poll_done",
            MarkerOp::Lock => "lock",
            MarkerOp::Unlock => "unlock",
            MarkerOp::LoopEnd => "loop_end",
        }
    }
}

/// One end of a measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// Comms of the threads whose marker counts.
    pub threads: Vec<String>,
    pub op: MarkerOp,
    /// `None`: any object (or `loop_end`, which has none).
    pub object: Option<ObjId>,
    /// As written, for output.
    pub text: String,
}

/// A named latency: from each `from` marker (while none is open) to the next
/// `to` marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub name: String,
    pub from: Marker,
    pub to: Marker,
    /// Intervals shorter than this are "timely".
    pub within_ns: Option<u64>,
    pub line: usize,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMeasure {
    pub name: Spanned<String>,
    pub from: Spanned<String>,
    pub to: Spanned<String>,
    pub within: Option<Spanned<Value>>,
}

pub(crate) fn measures(
    ctx: Ctx,
    raw: &[Spanned<RawMeasure>],
    threads: &[ThreadSpec],
    object_id: impl Fn(&str) -> Option<ObjId>,
) -> Result<Vec<Measure>, InputError> {
    let mut out: Vec<Measure> = Vec::new();
    for m in raw {
        let r = m.get_ref();
        let name = r.name.get_ref().trim();
        if name.is_empty() {
            return Err(ctx.err(&r.name, "measure `name` is empty"));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(ctx.err(&r.name, format!("a measure named `{name}` is already defined")));
        }
        let within_ns = match &r.within {
            Some(w) => Some(values::duration(ctx, w, "within", Zero::Refused)?),
            None => None,
        };
        out.push(Measure {
            name: name.to_string(),
            from: marker(ctx, &r.from, "from", threads, &object_id)?,
            to: marker(ctx, &r.to, "to", threads, &object_id)?,
            within_ns,
            line: ctx.line_of(m.span().start),
        });
    }
    Ok(out)
}

fn marker(
    ctx: Ctx,
    v: &Spanned<String>,
    key: &str,
    threads: &[ThreadSpec],
    object_id: &impl Fn(&str) -> Option<ObjId>,
) -> Result<Marker, InputError> {
    let words: Vec<&str> = v.get_ref().split_whitespace().collect();
    let usage = "expected \"THREAD OP OBJECT\", e.g. \"W post t_w\"";
    let (thread, op) = match words.as_slice() {
        [t, o, ..] => (*t, *o),
        _ => return Err(ctx.err(v, format!("measure `{key}` = \"{}\": {usage}", v.get_ref()))),
    };
    let comms: Vec<String> =
        threads.iter().filter(|t| t.name == thread || t.group == thread).map(|t| t.name.clone()).collect();
    if comms.is_empty() {
        let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
        return Err(ctx.err(v, format!("measure `{key}`: no thread `{thread}` (threads: {})", names.join(", "))));
    }
    let Some(op) = MarkerOp::ALL.iter().copied().find(|o| o.as_str() == op) else {
        let ops: Vec<&str> = MarkerOp::ALL.iter().map(|o| o.as_str()).collect();
        return Err(
            ctx.err(v, format!("measure `{key}`: unknown operation `{op}` (expected one of {})", ops.join(", ")))
        );
    };
    let object = match (op, &words[2..]) {
        (MarkerOp::LoopEnd, []) => None,
        (MarkerOp::LoopEnd, _) => {
            return Err(ctx.err(v, format!("measure `{key}`: loop_end takes no object (expected \"THREAD loop_end\")")))
        }
        (_, ["*"]) => None,
        (_, [obj]) => match object_id(obj) {
            Some(id) => Some(id),
            None => return Err(ctx.err(v, format!("measure `{key}`: no eventfd, flag or mutex named `{obj}`"))),
        },
        (_, []) => {
            return Err(
                ctx.err(v, format!("measure `{key}`: `{}` needs an object (a name, or `*` for any)", op.as_str()))
            )
        }
        _ => return Err(ctx.err(v, format!("measure `{key}` = \"{}\": {usage}", v.get_ref()))),
    };
    Ok(Marker { threads: comms, op, object, text: words.join(" ") })
}
