//! The fair server (`fair_server_runtime`): a CPU-bound SCHED_FIFO task may
//! not starve a fair task on the same CPU beyond the server's budget, and
//! runtime 0 (the debugfs knob many RT users set) really turns it off.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::Path;

fn scenario(fair_server: &str) -> Scenario {
    let text = format!(
        r#"
name = "fair-server"
topology = "qemu-4"
duration = "2s"
{fair_server}

[[thread]]
name = "hog"
policy = "SCHED_FIFO"
priority = 50
affinity = "0"
program = [{{ run = "10s" }}]

[[thread]]
name = "fair"
affinity = "0"
delay = "1ms"
program = [{{ run = "10s" }}]
"#
    );
    Scenario::from_toml_str("fair-server.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn fair_runtime_ms(fair_server: &str) -> f64 {
    let r = simulate(&scenario(fair_server), &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let ms = r.threads.iter().find(|t| t.name == "fair").unwrap().runtime_ns as f64 / 1e6;
    eprintln!("{fair_server:?}: fair ran {ms:.3} ms");
    ms
}

#[test]
fn default_fair_server_gives_a_starved_fair_task_its_budget_each_period() {
    // 50 ms per 1 s period over 2 s: about 100 ms, never much more.
    let ms = fair_runtime_ms("");
    assert!((80.0..=110.0).contains(&ms), "fair task ran {ms:.1} ms");
}

#[test]
fn fair_server_runtime_scales_the_budget_and_zero_disables_it() {
    let ms = fair_runtime_ms("fair_server_runtime = \"200ms\"");
    assert!((350.0..=410.0).contains(&ms), "fair task ran {ms:.1} ms");
    assert_eq!(fair_runtime_ms("fair_server_runtime = \"0\""), 0.0);
}

#[test]
fn fair_server_runtime_beyond_its_period_is_refused() {
    let text = "name = \"x\"\ntopology = \"qemu-4\"\nfair_server_runtime = \"2s\"\n[[thread]]\nname = \"a\"\nprogram = [{ run = \"1ms\" }]\n";
    let err = Scenario::from_toml_str("x.toml", text, Path::new(".")).unwrap_err().to_string();
    assert!(err.contains("x.toml:3") && err.contains("fair_server_runtime"), "{err}");
}
