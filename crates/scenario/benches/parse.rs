//! Reading a scenario with many threads (issue 21: 40 000 `[[thread]]`
//! tables took 86 s, each value located by scanning the file from its
//! start). The time per thread should stay flat as the count grows. Run
//! with `cargo bench -p schedlab-scenario --bench parse`.

use std::path::Path;

use schedlab_scenario::Scenario;

fn main() {
    divan::main();
}

fn file(threads: usize) -> String {
    let mut s = String::from("name = \"many\"\ntopology = \"smt-2x2\"\nduration = \"1ms\"\nseed = 1\n");
    for i in 0..threads {
        s.push_str(&format!("[[thread]]\nname = \"t{i}\"\nprogram = [{{ run = \"1us\" }}]\n"));
    }
    s
}

#[divan::bench(args = [1_000, 4_000, 16_000])]
fn threads(bencher: divan::Bencher, n: usize) {
    let text = file(n);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| Scenario::from_toml_str("many.toml", divan::black_box(&text), Path::new(".")).expect("valid"));
}
