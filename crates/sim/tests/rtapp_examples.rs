//! Every example JSON Debian's rt-app package ships (unpacked into
//! target/rt-app by scripts/install-rtapp-deps.sh) either runs in the model
//! or is refused with a message located at the construct; the table below
//! says which, so a corpus that changes is noticed.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::{Path, PathBuf};

/// Relative path → `None` (runs) or the line and a fragment of its refusal.
const EXPECTED: &[(&str, Option<(usize, &str)>)] = &[
    ("examples/tutorial/example1.json", None),
    ("examples/tutorial/example2.json", None),
    ("examples/tutorial/example3.json", None),
    ("examples/tutorial/example4.json", None),
    ("examples/tutorial/example5.json", None),
    ("examples/tutorial/example6.json", Some((11, "`mem`: memory and I/O load is not modeled"))),
    ("examples/tutorial/example7.json", None),
    ("examples/tutorial/example8.json", None),
    ("examples/browser-long.json", None),
    ("examples/browser-short.json", None),
    ("examples/mp3-long.json", None),
    ("examples/mp3-short.json", None),
    ("examples/spreading-tasks.json", None),
    ("examples/template.json", None),
    ("examples/cpufreq_governor_efficiency/calibration.json", None),
    ("examples/cpufreq_governor_efficiency/dvfs.json", None),
    // `"suspend",` without a value: rt-app 1.0 refuses these files too
    // ("Error while parsing input JSON").
    ("examples/video-long.json", Some((6, "invalid JSON"))),
    ("examples/video-short.json", Some((6, "invalid JSON"))),
    // merge.py's fragments: not whole rt-app files.
    ("examples/merge/global.json", Some((1, "no `tasks` section"))),
    ("examples/merge/resources.json", Some((1, "no `tasks` section"))),
    ("examples/merge/thread0.json", Some((4, "pre-1.0 grammar"))),
    ("examples/merge/thread1.json", Some((4, "pre-1.0 grammar"))),
    ("examples/merge/thread2.json", Some((4, "pre-1.0 grammar"))),
    ("examples/merge/thread3.json", Some((4, "pre-1.0 grammar"))),
    ("taskset.json", Some((4, "pre-1.0 grammar"))),
];

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/rt-app/usr/share/doc/rt-app");
    dir.join("examples").is_dir().then_some(dir)
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

#[test]
fn every_debian_rt_app_example_runs_in_the_model_or_is_refused_at_its_construct() {
    let Some(dir) = corpus() else {
        println!("skipped: Debian's rt-app examples are not in target/rt-app (run scripts/install-rtapp-deps.sh)");
        return;
    };
    let mut files = Vec::new();
    json_files(&dir, &mut files);
    files.sort();
    let listed: Vec<String> = EXPECTED.iter().map(|(p, _)| p.to_string()).collect();
    for f in &files {
        let rel = f.strip_prefix(&dir).unwrap().display().to_string();
        assert!(listed.contains(&rel), "{rel} is new in the corpus: add it to EXPECTED");
    }
    for (rel, want) in EXPECTED {
        let path = dir.join(rel);
        match (Scenario::load(&path), want) {
            (Ok(s), None) => {
                // One simulated second of each (some run for minutes).
                let opts = SimOptions { duration_ns: Some(1_000_000_000), ..Default::default() };
                let r = simulate(&s, &opts).unwrap_or_else(|e| panic!("{rel}: {e}"));
                let ran: u64 = r.threads.iter().map(|t| t.runtime_ns).sum();
                assert!(ran > 0, "{rel}: nothing ran");
            }
            (Err(e), Some((line, fragment))) => {
                assert_eq!(e.line, *line, "{rel}: {e}");
                assert!(e.col > 0 && e.message.contains(fragment), "{rel}: {e}");
                assert!(e.to_string().starts_with(&path.display().to_string()), "{e}");
            }
            (Ok(_), Some(_)) => panic!("{rel} was accepted; expected a refusal"),
            (Err(e), None) => panic!("{rel} was refused: {e}"),
        }
    }
}
