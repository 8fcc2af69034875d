//! AFL++ entry point of the `perfetto` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::perfetto(data);
    });
}
