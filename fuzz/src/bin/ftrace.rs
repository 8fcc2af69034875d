//! AFL++ entry point of the `ftrace` harness (crates/fuzz).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        schedlab_fuzz::ftrace(data);
    });
}
