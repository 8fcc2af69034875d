//! The writer: a [`Trace`] as the kernel's `trace` file.

use std::fmt::Write as _;
use std::io;

use super::payload::{event_name, write_payload};
use crate::event::{Event, TaskTable, Trace};

/// Output variations. The default is exactly `/sys/kernel/tracing/trace` with
/// default options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Print `secs.nanoseconds` (9 digits, as `trace-cmd report -t` does)
    /// instead of the kernel's `secs.microseconds`. Lossless.
    pub ns_timestamps: bool,
    /// Add the `(TGID)` column, as with `options/record-tgid=1`.
    pub record_tgid: bool,
}

/// The header the kernel prints above the events (`print_func_help_header_irq()`).
pub fn header(entries: usize, nr_cpus: u32, record_tgid: bool) -> String {
    let prec = if record_tgid { 12 } else { 2 };
    let sp = &"            "[..prec];
    let mut h = String::new();
    h.push_str("# tracer: nop\n#\n");
    let _ = writeln!(h, "# entries-in-buffer/entries-written: {entries}/{entries}   #P:{nr_cpus}");
    h.push_str("#\n");
    for tail in [
        "  _-----=> irqs-off/BH-disabled",
        " / _----=> need-resched",
        "| / _---=> hardirq/softirq",
        "|| / _--=> preempt-depth",
        "||| / _-=> migrate-disable",
        "|||| /     delay",
    ] {
        let _ = writeln!(h, "#                            {sp}{tail}");
    }
    let _ = writeln!(h, "#           TASK-PID  {} CPU#  |||||  TIMESTAMP  FUNCTION", &"     TGID   "[..prec]);
    let _ = writeln!(h, "#              | |    {}   |   |||||     |         |", &"       |    "[..prec]);
    h
}

/// Write `trace` as `/sys/kernel/tracing/trace` prints it with default options.
pub fn write_ftrace(trace: &Trace, out: &mut impl io::Write) -> io::Result<()> {
    write_ftrace_with(trace, out, &WriteOptions::default())
}

/// [`write_ftrace`] with [`WriteOptions`].
pub fn write_ftrace_with(trace: &Trace, out: &mut impl io::Write, opts: &WriteOptions) -> io::Result<()> {
    out.write_all(header(trace.events.len(), trace.nr_cpus, opts.record_tgid).as_bytes())?;
    let mut lines = FtraceWriter::new(out, trace.table.clone(), trace.nr_cpus, *opts);
    for ev in &trace.events {
        lines.event(ev)?;
    }
    Ok(())
}

/// ftrace text written as the events arrive. The kernel's header names how
/// many events follow, so this writes the event lines to `body`, and
/// [`finish`](Self::finish) gives the header that goes above them.
pub struct FtraceWriter<B: io::Write> {
    body: B,
    table: TaskTable,
    nr_cpus: u32,
    opts: WriteOptions,
    events: usize,
    line: String,
}

impl<B: io::Write> FtraceWriter<B> {
    pub fn new(body: B, table: TaskTable, nr_cpus: u32, opts: WriteOptions) -> Self {
        FtraceWriter { body, table, nr_cpus, opts, events: 0, line: String::with_capacity(256) }
    }

    /// A task created mid-run: its comm for the lines that follow.
    pub fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) {
        self.table.tasks.insert(pid, info.clone());
    }

    /// The next event's line.
    pub fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.line.clear();
        push_line(&mut self.line, &self.table, ev, &self.opts);
        self.line.push('\n');
        self.events += 1;
        self.body.write_all(self.line.as_bytes())
    }

    /// The body back, and the header for the lines written.
    pub fn finish(self) -> (B, String) {
        let header = header(self.events, self.nr_cpus, self.opts.record_tgid);
        (self.body, header)
    }
}

pub fn format_line(table: &TaskTable, ev: &Event, opts: &WriteOptions) -> String {
    let mut s = String::with_capacity(160);
    push_line(&mut s, table, ev, opts);
    s
}

fn push_line(s: &mut String, table: &TaskTable, ev: &Event, opts: &WriteOptions) {
    let comm = if ev.ctx_pid == 0 { "<idle>" } else { table.comm(ev.ctx_pid) };
    let _ = write!(s, "{comm:>16}-{:<7} ", ev.ctx_pid);
    if opts.record_tgid {
        match table.tasks.get(&ev.ctx_pid).map(|t| t.tgid) {
            Some(tgid) if tgid > 0 && ev.ctx_pid != 0 => {
                let _ = write!(s, "({tgid:>7}) ");
            }
            _ => s.push_str("(-------) "),
        }
    }
    let _ = write!(s, "[{:03}] ", ev.cpu);
    for &b in &ev.flags {
        s.push(if b.is_ascii_graphic() { b as char } else { '.' });
    }
    let secs = ev.ts / 1_000_000_000;
    let ns = ev.ts % 1_000_000_000;
    if opts.ns_timestamps {
        let _ = write!(s, " {secs:>5}.{ns:09}: ");
    } else {
        let _ = write!(s, " {secs:>5}.{:06}: ", ns / 1000);
    }
    s.push_str(event_name(&ev.kind));
    s.push_str(": ");
    write_payload(s, table, ev);
}
