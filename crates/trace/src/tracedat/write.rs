//! The file: header sections, then each CPU's pages.
//!
//! Written in the order trace-cmd.dat.v6(5) gives: the magic and version
//! `6`, little endian, 8-byte longs, the page size; `header_page` and
//! `header_event`; no ftrace-internal event formats; the event systems of
//! [`format`](super::format); an empty kallsyms and printk section; the
//! cmdlines (`pid comm` per task the run had, forked ones included); the
//! CPU count; an options section holding no option; and `flyrecord`: per
//! CPU the offset and size of its pages, then the pages at page-aligned
//! offsets, each CPU's one after the other.
//!
//! While the run goes, full pages go to a spool file in the order they
//! fill, whatever their CPU; memory holds one page per CPU and a 4-byte
//! page number per spooled page. [`TraceDatWriter::finish`] copies each
//! CPU's pages out of the spool in its order.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::format::{all_formats, encode};
use super::page::{Page, PAGE_SIZE};
use crate::event::{Event, Pid, TaskInfo, TaskTable, Trace};

/// `trace.dat` version 6 built as the events arrive (in time order) and
/// written by [`finish`](Self::finish).
pub struct TraceDatWriter {
    table: TaskTable,
    /// The page being filled, per CPU.
    pages: Vec<Page>,
    /// Per CPU, its full pages' numbers in the spool.
    spooled: Vec<Vec<u32>>,
    spool: BufWriter<File>,
    spool_pages: u32,
    record: Vec<u8>,
    text: String,
}

impl TraceDatWriter {
    /// A writer for a run on `nr_cpus` CPUs, spooling pages to `spool` (an
    /// empty file open for reading and writing, e.g. a temporary file next
    /// to the output).
    pub fn new(table: TaskTable, nr_cpus: u32, spool: File) -> Self {
        let n = nr_cpus.max(1) as usize;
        TraceDatWriter {
            table,
            pages: (0..n).map(|_| Page::default()).collect(),
            spooled: vec![Vec::new(); n],
            spool: BufWriter::new(spool),
            spool_pages: 0,
            record: Vec::with_capacity(256),
            text: String::with_capacity(256),
        }
    }

    /// [`new`](Self::new) with an anonymous temporary file in the system's
    /// temporary directory as the spool.
    pub fn with_temp_spool(table: TaskTable, nr_cpus: u32) -> io::Result<Self> {
        Ok(Self::new(table, nr_cpus, tempfile::tempfile()?))
    }

    /// A task created mid-run: its comm for the records and the cmdlines.
    pub fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        self.table.tasks.insert(pid, info.clone());
    }

    /// The next event, on its CPU's page.
    pub fn event(&mut self, ev: &Event) -> io::Result<()> {
        let cpu = ev.cpu as usize;
        if cpu >= self.pages.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("an event on CPU {} of a {}-CPU run", ev.cpu, self.pages.len()),
            ));
        }
        encode(ev, &self.table, &mut self.record, &mut self.text);
        if self.pages[cpu].push(ev.ts, &self.record) {
            return Ok(());
        }
        self.spool_page(cpu)?;
        if self.pages[cpu].push(ev.ts, &self.record) {
            Ok(())
        } else {
            // Strings are capped well below a page, so this cannot happen.
            Err(io::Error::new(io::ErrorKind::InvalidInput, "an event larger than a ring-buffer page"))
        }
    }

    fn spool_page(&mut self, cpu: usize) -> io::Result<()> {
        self.spool.write_all(self.pages[cpu].bytes())?;
        self.spooled[cpu].push(self.spool_pages);
        self.spool_pages += 1;
        self.pages[cpu].clear();
        Ok(())
    }

    /// Write the file to `out`.
    pub fn finish(mut self, out: &mut impl Write) -> io::Result<()> {
        for cpu in 0..self.pages.len() {
            if !self.pages[cpu].is_empty() {
                self.spool_page(cpu)?;
            }
        }
        let mut spool = self.spool.into_inner().map_err(|e| e.into_error())?;
        let head = header(&self.table, self.pages.len() as u32);
        // The CPU table follows the header; the pages start at the next page boundary.
        let table_end = head.len() + 16 * self.pages.len();
        let data_start = table_end.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        out.write_all(&head)?;
        let mut offset = data_start as u64;
        for pages in &self.spooled {
            let size = (pages.len() * PAGE_SIZE) as u64;
            out.write_all(&offset.to_le_bytes())?;
            out.write_all(&size.to_le_bytes())?;
            offset += size;
        }
        out.write_all(&vec![0; data_start - table_end])?;
        let mut page = vec![0u8; PAGE_SIZE];
        for pages in &self.spooled {
            for &n in pages {
                spool.seek(SeekFrom::Start(u64::from(n) * PAGE_SIZE as u64))?;
                spool.read_exact(&mut page)?;
                out.write_all(&page)?;
            }
        }
        out.flush()
    }
}

/// Write a whole `trace` as trace.dat (spooling through a temporary file).
pub fn write_tracedat(trace: &Trace, out: &mut impl Write) -> io::Result<()> {
    let mut w = TraceDatWriter::with_temp_spool(trace.table.clone(), trace.nr_cpus)?;
    for ev in trace.in_time_order().iter() {
        w.event(ev)?;
    }
    w.finish(out)
}

fn u32_le(v: usize) -> [u8; 4] {
    (v as u32).to_le_bytes()
}

fn u64_le(v: usize) -> [u8; 8] {
    (v as u64).to_le_bytes()
}

/// What this file's pages look like, in the text form the kernel's
/// `events/header_page` uses (8-byte `commit`: 64-bit kernel).
const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

/// The record header, as `events/header_event` describes it.
const HEADER_EVENT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";

/// Everything before the flyrecord CPU table.
fn header(table: &TaskTable, nr_cpus: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(16 * 1024);
    h.extend_from_slice(&[0x17, 0x08, 0x44]);
    h.extend_from_slice(b"tracing6\0");
    h.push(0); // little endian
    h.push(8); // long size
    h.extend_from_slice(&u32_le(PAGE_SIZE));
    h.extend_from_slice(b"header_page\0");
    h.extend_from_slice(&u64_le(HEADER_PAGE.len()));
    h.extend_from_slice(HEADER_PAGE.as_bytes());
    h.extend_from_slice(b"header_event\0");
    h.extend_from_slice(&u64_le(HEADER_EVENT.len()));
    h.extend_from_slice(HEADER_EVENT.as_bytes());
    // No ftrace-internal event formats.
    h.extend_from_slice(&u32_le(0));
    // Event systems, each with its events' format files.
    let formats: Vec<_> = all_formats().collect();
    let mut systems: Vec<&str> = formats.iter().map(|f| f.system).collect();
    systems.dedup();
    h.extend_from_slice(&u32_le(systems.len()));
    for system in systems {
        h.extend_from_slice(system.as_bytes());
        h.push(0);
        let events: Vec<_> = formats.iter().filter(|f| f.system == system).collect();
        h.extend_from_slice(&u32_le(events.len()));
        for f in events {
            let text = f.text();
            h.extend_from_slice(&u64_le(text.len()));
            h.extend_from_slice(text.as_bytes());
        }
    }
    // kallsyms and printk formats: none.
    h.extend_from_slice(&u32_le(0));
    h.extend_from_slice(&u32_le(0));
    let mut cmdlines = String::new();
    for (pid, info) in &table.tasks {
        if *pid > 0 {
            cmdlines.push_str(&format!("{pid} {}\n", info.comm.replace('\n', " ")));
        }
    }
    h.extend_from_slice(&u64_le(cmdlines.len()));
    h.extend_from_slice(cmdlines.as_bytes());
    h.extend_from_slice(&nr_cpus.to_le_bytes());
    h.extend_from_slice(b"options  \0");
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(b"flyrecord\0");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    /// Each CPU's records as (time, common_pid), read back from the pages
    /// the flyrecord table points at.
    fn records(file: &[u8], nr_cpus: usize) -> Vec<Vec<(u64, i32)>> {
        let fly = file.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
        (0..nr_cpus)
            .map(|cpu| {
                let (offset, size) = (u64_at(file, fly + 16 * cpu) as usize, u64_at(file, fly + 16 * cpu + 8) as usize);
                assert_eq!(offset % PAGE_SIZE, 0, "CPU {cpu}'s data is page-aligned");
                assert_eq!(size % PAGE_SIZE, 0);
                let mut out = Vec::new();
                for page in file[offset..offset + size].chunks(PAGE_SIZE) {
                    let mut ts = u64_at(page, 0);
                    let end = 16 + u64_at(page, 8) as usize;
                    let mut at = 16;
                    while at < end {
                        let head = u32_at(page, at);
                        let (type_len, delta) = (head & 31, u64::from(head >> 5));
                        match type_len {
                            30 => {
                                ts += delta | (u64::from(u32_at(page, at + 4)) << 27);
                                at += 8;
                            }
                            0 => {
                                ts += delta;
                                out.push((ts, u32_at(page, at + 8 + 4) as i32));
                                at += 4 + (u32_at(page, at + 4) as usize).div_ceil(4) * 4;
                            }
                            n => {
                                ts += delta;
                                out.push((ts, u32_at(page, at + 4 + 4) as i32));
                                at += 4 + 4 * n as usize;
                            }
                        }
                    }
                }
                out
            })
            .collect()
    }

    /// Events alternating between two CPUs fill pages of both in turn (the
    /// spool interleaves them); each CPU's data holds its own in order,
    /// gaps over 2^27 ns included, and an idle CPU has none.
    #[test]
    fn each_cpu_gets_its_own_pages_back_in_order() {
        let mut table = TaskTable::default();
        table.tasks.insert(7, TaskInfo { comm: "seven".into(), tgid: 7 });
        let mut events = Vec::new();
        let mut ts = 1_000;
        for i in 0..600 {
            // Now and then a gap only a time extend can carry.
            ts += if i % 97 == 0 { 300_000_000 } else { 1_234 };
            let kind = if i % 3 == 0 {
                EventKind::Resched { cpu: i % 2, ipi: false }
            } else {
                EventKind::SchedWaking { pid: 7, prio: 120, target_cpu: 0 }
            };
            events.push(Event { ts, cpu: i % 2, ctx_pid: i as i32, flags: *b"d..2.", kind });
        }
        let trace = Trace { table, nr_cpus: 3, events };
        let mut file = Vec::new();
        write_tracedat(&trace, &mut file).unwrap();
        assert!(file.starts_with(b"\x17\x08\x44tracing6\0"));
        let got = records(&file, 3);
        for cpu in 0..3 {
            let want: Vec<(u64, i32)> =
                trace.events.iter().filter(|e| e.cpu == cpu).map(|e| (e.ts, e.ctx_pid)).collect();
            assert_eq!(got[cpu as usize], want, "CPU {cpu}");
        }
        assert!(got[0].len() * 40 > 2 * PAGE_SIZE, "several pages per CPU");
        let cmdlines = b"\x08\x00\x00\x00\x00\x00\x00\x007 seven\n";
        assert!(file.windows(cmdlines.len()).any(|w| w == cmdlines), "the cmdlines section");
    }

    #[test]
    fn an_event_on_a_cpu_beyond_the_run_is_an_error() {
        let mut w = TraceDatWriter::with_temp_spool(TaskTable::default(), 2).unwrap();
        let ev = Event { ts: 1, cpu: 2, ctx_pid: 0, flags: *b".....", kind: EventKind::Resched { cpu: 2, ipi: false } };
        let e = w.event(&ev).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("CPU 2 of a 2-CPU run"), "{e}");
    }
}
