use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::Path;

#[test]
fn two_hogs_smoke() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/two-hogs.toml");
    let s = Scenario::load(&root).unwrap();
    let r = simulate(&s, &SimOptions { duration_ns: Some(1_000_000_000), ..Default::default() }).unwrap();
    for t in &r.threads {
        eprintln!("{} runtime {} nvcsw {} nivcsw {}", t.name, t.runtime_ns, t.nvcsw, t.nivcsw);
    }
    eprintln!("steps {} events {}", r.steps, r.trace.events.len());
    eprintln!("{:?}", r.notes);
}

#[test]
fn all_bundled_smoke() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for p in names {
        let s = Scenario::load(&p).unwrap();
        let r = simulate(&s, &SimOptions { duration_ns: Some(1_000_000_000), ..Default::default() }).unwrap();
        eprintln!("== {} steps {} events {}", p.display(), r.steps, r.trace.events.len());
        for t in &r.threads {
            eprintln!("  {} runtime {} it {} nvcsw {} nivcsw {}", t.name, t.runtime_ns, t.iterations, t.nvcsw, t.nivcsw);
        }
        let delayed = r.trace.events.iter().filter(|e| matches!(e.kind, schedlab_trace::EventKind::Delayed{..})).count();
        eprintln!("  delayed events {delayed} notes {:?}", r.notes);
    }
}
