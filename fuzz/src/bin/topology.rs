//! AFL++ entry point of the `topology` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::topology(data);
    });
}
