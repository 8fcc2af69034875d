//! AFL++ entry point of the `sweep` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::sweep(data);
    });
}
