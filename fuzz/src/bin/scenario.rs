//! AFL++ entry point of the `scenario` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::scenario(data);
    });
}
