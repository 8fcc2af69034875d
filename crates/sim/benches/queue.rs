//! The engine's event queue (issue 16: with the kernel's paths, most of a
//! schbench step). Run with `cargo bench -p schedlab-sim --bench queue`.

use schedlab_sim::queue::EventQueue;

fn main() {
    divan::main();
}

/// A pseudo-random but fixed sequence of times (xorshift), so every run
/// measures the same work.
fn times(n: usize) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 10_000_000
        })
        .collect()
}

/// Steady state with `n` events pending: pop the earliest, push one a
/// little later (what a step does most often).
#[divan::bench(args = [64, 1024, 16_384])]
fn pop_push(bencher: divan::Bencher, n: usize) {
    let mut q: EventQueue<u32> = EventQueue::with_keys(0);
    for (i, t) in times(n).into_iter().enumerate() {
        q.push(t, i as u32);
    }
    let step = times(4096);
    let mut k = 0usize;
    bencher.bench_local(|| {
        let (at, ev) = q.pop().expect("never empty");
        q.push(at + 1 + step[k & 4095] / 100, ev);
        k += 1;
    });
}

/// As [`pop_push`], but every event is re-armed with one delay, as
/// schbench's workers arm their sleeps: the FIFO lane takes them all.
#[divan::bench(args = [64, 1024, 16_384])]
fn pop_push_fixed_delay(bencher: divan::Bencher, n: usize) {
    let mut q: EventQueue<u32> = EventQueue::with_keys(0);
    for (i, t) in times(n).into_iter().enumerate() {
        q.push(t, i as u32);
    }
    // Drain the random start into the lane's order first.
    for _ in 0..n {
        let (at, ev) = q.pop().expect("never empty");
        q.push(at + 150_000, ev);
    }
    bencher.bench_local(|| {
        let (at, ev) = q.pop().expect("never empty");
        q.push(at + 150_000, ev);
    });
}

/// Keyed re-arming (a CPU's next work boundary or tick moved): the old
/// entry of the key is replaced.
#[divan::bench(args = [64, 1024])]
fn rearm_keyed(bencher: divan::Bencher, keys: usize) {
    let mut q: EventQueue<u32> = EventQueue::with_keys(keys);
    for (i, t) in times(keys).into_iter().enumerate() {
        q.push_keyed(i, t, i as u32);
    }
    let step = times(4096);
    let mut k = 0usize;
    bencher.bench_local(|| {
        let key = k % keys;
        q.push_keyed(key, 5_000_000 + step[k & 4095], key as u32);
        k += 1;
    });
}
