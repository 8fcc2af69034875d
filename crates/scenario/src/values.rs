//! Turning spanned TOML values into model values, with errors that point at
//! the value and say what was expected.

use schedlab_topology::{parse_cpulist, parse_duration, CpuSet, InputError, Topology};
use toml::{Spanned, Value};

use crate::Spanned as Pos;

/// The file being read: every error is located in it.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub lines: &'a schedlab_topology::diag::LineIndex,
    /// The text is an rt-app JSON file (messages show its syntax).
    pub rtapp: bool,
}

impl<'a> Ctx<'a> {
    /// How a duration is set in this file's syntax, for messages.
    pub fn duration_hint(&self) -> &'static str {
        if self.rtapp {
            "\"global\": { \"duration\": 10 } (seconds)"
        } else {
            "`duration = \"10s\"`"
        }
    }

    /// An error at a byte offset of the file.
    pub fn at(&self, offset: usize, message: impl Into<String>) -> InputError {
        let (line, col) = self.lines.line_col(self.text, offset);
        InputError::new(self.path, line, col, message)
    }

    /// An error at the start of a spanned value.
    pub fn err<T>(&self, v: &Spanned<T>, message: impl Into<String>) -> InputError {
        self.at(v.span().start, message)
    }

    /// Our position-carrying wrapper from a TOML span.
    pub fn pos<T: Clone>(&self, v: &Spanned<T>) -> Pos<T> {
        let (line, col) = self.lines.line_col(self.text, v.span().start);
        Pos { value: v.get_ref().clone(), line, col }
    }

    pub fn line_of(&self, offset: usize) -> usize {
        self.lines.line_col(self.text, offset).0
    }
}

/// TOML's word for a value's type, with an article, for messages.
pub(crate) fn a_type(v: &Value) -> String {
    let t = v.type_str();
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {t}")
    } else {
        format!("a {t}")
    }
}

/// Which durations may be zero.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zero {
    Allowed,
    Refused,
}

/// Where a bare integer is ambiguous: the keys that the tools scenario
/// files are written from (rt-app, schbench, the cgroup files) count in
/// another unit, so `run = 10` meant microseconds and would run 10 ns.
/// Returns what the number means there and the unit to suggest. Keys not
/// listed keep integer nanoseconds (the kernel's own unit for `slice`,
/// `timer_slack`, `fair_server_runtime`; schedlab's for `stall_threshold`,
/// `within`, `op_time`), and 0 is 0 in every unit.
fn bare_integer_elsewhere(key: &str) -> Option<(&'static str, &'static str)> {
    match key {
        "run" | "run_wall" | "timer" | "delay" | "after" => {
            Some(("a program's durations come from rt-app, whose bare numbers are microseconds", "us"))
        }
        "sleep" => Some(("rt-app's `sleep` and schbench's -s count microseconds", "us")),
        "duration" => Some(("rt-app's `duration` and schbench's -r are seconds", "s")),
        "runtime" => Some(("schbench's -r is seconds", "s")),
        "max" | "period" => Some(("cpu.max and cpu.cfs_*_us count microseconds", "us")),
        _ => None,
    }
}

/// A duration: a string with a unit (`"10us"`, `"1.5ms"`, `"30s"`) or integer
/// nanoseconds, as topology files accept them — except where a bare
/// integer is ambiguous ([`bare_integer_elsewhere`]), which is refused
/// with the unit to write.
pub(crate) fn duration(ctx: Ctx, v: &Spanned<Value>, key: &str, zero: Zero) -> Result<u64, InputError> {
    let ns = match v.get_ref() {
        Value::String(s) => parse_duration(s).map_err(|m| ctx.err(v, format!("`{key}`: {m}")))?,
        Value::Integer(n) if *n > 0 && bare_integer_elsewhere(key).is_some() => {
            let (why, unit) = bare_integer_elsewhere(key).expect("matched");
            return Err(ctx.err(
                v,
                format!(
                    "`{key}` = {n}: a bare number here would be nanoseconds, but {why}: write a duration with \
                     its unit, such as \"{n}{unit}\" (or \"{n}ns\" if nanoseconds were meant)"
                ),
            ));
        }
        // Integer nanoseconds, as in topology files (`DurationNs`).
        Value::Integer(n) => u64::try_from(*n)
            .map_err(|_| ctx.err(v, format!("`{key}`: negative duration {n} (expected a duration >= 0)")))?,
        Value::Float(f) => {
            return Err(ctx.err(
                v,
                format!("`{key}`: bare number {f} is not a duration (expected integer nanoseconds, or a string with a unit like \"{f}ms\")"),
            ))
        }
        other => {
            return Err(ctx.err(
                v,
                format!("`{key}`: expected a duration such as \"1ms\" or \"10us\", found {}", a_type(other)),
            ))
        }
    };
    if ns == 0 && zero == Zero::Refused {
        return Err(ctx.err(v, format!("`{key}` must be longer than zero")));
    }
    Ok(ns)
}

/// An integer in `lo..=hi`, with the message naming the key and the range.
pub(crate) fn int_in(ctx: Ctx, v: &Spanned<i64>, key: &str, lo: i64, hi: i64, why: &str) -> Result<i64, InputError> {
    let n = *v.get_ref();
    if n < lo || n > hi {
        let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
        return Err(ctx.err(v, format!("`{key}` = {n} is out of range: expected {lo}..{hi}{why}")));
    }
    Ok(n)
}

/// An affinity: a taskset cpulist string (`"4-7,20-23"`), one CPU number, or an
/// array of CPU numbers (rt-app's `cpus`), all of which must exist on `topo`.
pub(crate) fn affinity(ctx: Ctx, v: &Spanned<Value>, topo: &Topology) -> Result<CpuSet, InputError> {
    cpus_named(ctx, v, topo, "affinity")
}

/// [`affinity`] for a key of another name (a cgroup's `cpus`).
pub(crate) fn cpus_named(ctx: Ctx, v: &Spanned<Value>, topo: &Topology, key: &str) -> Result<CpuSet, InputError> {
    let set = match v.get_ref() {
        Value::String(s) if s.trim() == "all" => topo.all_cpus(),
        Value::String(s) => parse_cpulist(s).map_err(|m| ctx.err(v, format!("`{key}`: {m}")))?,
        Value::Integer(n) => CpuSet::single(cpu_number(ctx, v, *n, key)?),
        Value::Array(items) => {
            if items.is_empty() {
                return Err(ctx.err(v, format!("`{key}` is an empty list: expected at least one CPU")));
            }
            let mut set = CpuSet::empty();
            for item in items {
                match item {
                    Value::Integer(n) => set.insert(cpu_number(ctx, v, *n, key)?),
                    other => {
                        return Err(ctx.err(v, format!("`{key}` list: expected CPU numbers, found {}", a_type(other))))
                    }
                }
            }
            set
        }
        other => {
            return Err(ctx.err(
                v,
                format!(
                    "`{key}`: expected a cpulist string like \"4-7\", a CPU number or a list of CPU numbers, found {}",
                    a_type(other)
                ),
            ))
        }
    };
    let all = topo.all_cpus();
    if !set.is_subset(&all) {
        let outside: CpuSet = set.iter().filter(|c| !all.contains(*c)).collect();
        let n = topo.nr_cpus();
        return Err(ctx.err(
            v,
            format!(
                "`{key}` names CPU {} but topology `{}` has {n} CPU{} ({})",
                outside.to_cpulist(),
                topo.name,
                if n == 1 { "" } else { "s" },
                all.to_cpulist()
            ),
        ));
    }
    Ok(set)
}

fn cpu_number(ctx: Ctx, v: &Spanned<Value>, n: i64, key: &str) -> Result<usize, InputError> {
    if n < 0 || n >= schedlab_topology::MAX_CPUS as i64 {
        return Err(ctx.err(v, format!("`{key}`: {n} is not a CPU number")));
    }
    Ok(n as usize)
}

/// `loop`: `true` forever, `false` once, N > 0 times, -1 forever (rt-app).
pub(crate) fn repeat(ctx: Ctx, v: &Spanned<Value>) -> Result<crate::Repeat, InputError> {
    use crate::Repeat;
    match v.get_ref() {
        Value::Boolean(true) => Ok(Repeat::Forever),
        Value::Boolean(false) => Ok(Repeat::Times(1)),
        Value::Integer(-1) => Ok(Repeat::Forever),
        Value::Integer(n) if *n > 0 => Ok(Repeat::Times(*n as u64)),
        Value::Integer(n) => Err(ctx.err(
            v,
            format!(
                "`loop` = {n}: expected a positive count, true (forever), false (once) or -1 (forever, as in rt-app)"
            ),
        )),
        other => {
            Err(ctx
                .err(v, format!("`loop`: expected true (forever), false (once) or a count, found {}", a_type(other))))
        }
    }
}
