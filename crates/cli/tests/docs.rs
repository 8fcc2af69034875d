//! The console examples of README.md and docs/ run as written, and their
//! output must match what the page shows (`[..]` stands for a figure that
//! varies from run to run, such as wall time; a line `...` for lines the
//! page leaves out). Only ```console blocks run: a plain block holds
//! commands that need root, a VM or files of their own.
//!
//! After a deliberate change of the model, regenerate the pages' output
//! with `TRYCMD=overwrite cargo test -p schedlab --test docs`, then read
//! the diff and put back the `[..]` of wall-clock figures.

#[test]
fn console_examples_in_the_docs_print_what_the_docs_show() {
    // The pages' commands name files relative to the repository root.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::set_current_dir(&root).unwrap();
    trycmd::TestCases::new()
        .register_bin("schedlab", trycmd::cargo::cargo_bin!("schedlab"))
        .env("SCHEDLAB_CHECK_INVARIANTS", "0")
        .case("README.md")
        .case("docs/*.md");
}
