//! Every input the fuzzer kept (`fuzz/corpus/<target>/`) and every crash
//! it found and that was fixed (`fuzz/crashes/<target>/`) runs through its
//! harness here, in the normal suite: a panic fails the test with the file.

use std::path::Path;

#[test]
fn every_kept_input_runs_through_its_harness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    for (name, harness) in schedlab_fuzz::TARGETS {
        let mut per_target = 0;
        for kind in ["corpus", "crashes"] {
            let Ok(dir) = std::fs::read_dir(root.join(kind).join(name)) else { continue };
            let mut files: Vec<_> = dir.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
            files.sort();
            for f in files {
                let data = std::fs::read(&f).unwrap();
                let r = std::panic::catch_unwind(|| harness(&data));
                assert!(r.is_ok(), "{}: the {name} harness panicked", f.display());
                per_target += 1;
            }
        }
        assert!(per_target > 0, "no corpus for {name} under {}", root.display());
        ran += per_target;
    }
    assert!(ran >= 5);
}
