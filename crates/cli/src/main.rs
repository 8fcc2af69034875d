//! The `schedlab` binary: the command line of `lib.rs`.

fn main() -> std::process::ExitCode {
    schedlab::main()
}
