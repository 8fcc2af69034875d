//! trace.dat (trace-cmd's file format, version 6) written from a run, so
//! `trace-cmd report` and KernelShark open it.
//!
//! [`TraceDatWriter`] takes the events as they stream, packs each CPU's
//! into ring-buffer pages ([`page`]) as the kernel would, and on
//! [`finish`](TraceDatWriter::finish) writes the header sections and the
//! pages ([`write`]). The sched tracepoints have the kernel's binary
//! layout; schedlab's own events and the workload markers carry their
//! ftrace payload text ([`format`]), so `trace-cmd report -N` prints the
//! same event lines as `--trace` (trace-cmd's sched plugin, loaded without
//! `-N`, prints `sched_switch`/`sched_wakeup` in its compact form).
//!
//! Not written: kallsyms, printk formats, the tgid map and any option
//! (clock, uname, ...); trace-cmd does without them.

pub mod format;
pub mod page;
pub mod write;

pub use write::{write_tracedat, TraceDatWriter};
