//! AFL++ entry point of the `perf-script` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::perf_script(data);
    });
}
