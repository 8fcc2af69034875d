//! A cache line's trip between two CPUs: two pinned threads hand a counter
//! back and forth through one atomic word, each spinning until the other
//! has written it (the core-to-core latency tools' ping-pong). One-way
//! latency = round trip / 2, the median and p99 over batches.

use super::error::ProbeError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use schedlab_topology::host::Percentiles;

use crate::sys::{now_ns, set_affinity, set_comm};

const BATCHES: usize = 21;
const TRIPS: u64 = 2_000;

/// One-way cache-line latency from `a` to `b`.
pub fn line_probe(a: usize, b: usize) -> Result<Percentiles, ProbeError> {
    let word = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let deadline = now_ns() + 5_000_000_000;
    std::thread::scope(|s| {
        let partner = s.spawn(|| -> Result<(), ProbeError> {
            set_affinity(&[b]).map_err(|source| ProbeError::Pin { who: "", cpu: b, source })?;
            set_comm("schedlab-pong");
            let mut spins = 0u32;
            loop {
                let v = word.load(SeqCst);
                if v % 2 == 1 {
                    word.store(v + 1, SeqCst);
                    continue;
                }
                // The clock only now and then: a read per spin would be in the trip.
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && (stop.load(SeqCst) || now_ns() >= deadline) {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
        });
        let main = s.spawn(|| -> Result<Vec<u64>, ProbeError> {
            set_affinity(&[a]).map_err(|source| ProbeError::Pin { who: "", cpu: a, source })?;
            set_comm("schedlab-ping");
            let mut per = Vec::with_capacity(BATCHES);
            for batch in 0..=BATCHES {
                let t0 = now_ns();
                for _ in 0..TRIPS {
                    let v = word.load(SeqCst);
                    word.store(v + 1, SeqCst);
                    let mut spins = 0u32;
                    while word.load(SeqCst) == v + 1 {
                        spins = spins.wrapping_add(1);
                        if spins.is_multiple_of(4096) && now_ns() >= deadline {
                            return Err(ProbeError::Timeout("the partner stopped answering (deadline)"));
                        }
                        std::hint::spin_loop();
                    }
                }
                if batch > 0 {
                    per.push((now_ns() - t0) / (2 * TRIPS));
                }
            }
            Ok(per)
        });
        let r = main.join().map_err(|_| ProbeError::Panicked("the ping thread")).and_then(|r| r);
        stop.store(true, SeqCst);
        let p = partner.join().map_err(|_| ProbeError::Panicked("the pong thread")).and_then(|r| r);
        let v = r?;
        p?;
        Percentiles::of(&v).ok_or(ProbeError::Empty("no batch finished"))
    })
}
