//! The engine allocates nothing per event once warmed up: allocations grow
//! with the logarithm of the run (buffer doubling), not with its length.
//! (One test in this binary so the global counter sees only this run.)

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn allocations_do_not_scale_with_simulated_time() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/asym_min.toml");
    let s = Scenario::load(&path).unwrap();
    let count = |ns: u64| {
        let opts = SimOptions { duration_ns: Some(ns), check_invariants: Some(false), ..Default::default() };
        let before = ALLOCS.load(Ordering::Relaxed);
        let r = simulate(&s, &opts).unwrap();
        (ALLOCS.load(Ordering::Relaxed) - before, r.trace.events.len())
    };
    let (short, short_events) = count(1_000_000_000);
    let (long, long_events) = count(8_000_000_000);
    assert!(long_events > 7 * short_events);
    // Eight times the events; only a few more doublings of the trace buffer and queue.
    assert!(long < short + 40, "allocations: {short} for {short_events} events, {long} for {long_events} events");
}
