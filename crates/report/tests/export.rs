//! The CSV export: header and rows, character for character.

use schedlab_report::{render_csv, RunResult, SettingResult, SweepResult, CSV_COLUMNS};

fn run(n: u32, stalls: u64, handoffs: u64, p99: Option<u64>) -> RunResult {
    RunResult {
        run: n,
        seed: 40 + u64::from(n),
        simulated_ns: 10_000_000_000,
        handoffs,
        stalls,
        median_handoff_ns: (handoffs > 0).then_some(5_004),
        p99_handoff_ns: p99,
        max_handoff_ns: p99.map(|p| p * 100),
        breakdown: None,
        burst_starts: None,
        handoff_samples: vec![],
        measures: vec![],
        schbench_rps: None,
        why: None,
    }
}

fn setting(name: &str, topology: &str, runs: Vec<RunResult>) -> SettingResult {
    SettingResult {
        name: name.into(),
        kernel: "mainline".into(),
        features_changed: vec![],
        topology: topology.into(),
        itmt: true,
        allowed_cpus: "4-7".into(),
        top_cpu: None,
        breakdown: false,
        notes: vec![],
        stalls: runs.iter().map(|r| r.stalls).sum(),
        handoffs: runs.iter().map(|r| r.handoffs).sum(),
        median_handoff_ns: None,
        runs,
        reported_rps: vec![],
    }
}

#[test]
fn header_and_rows() {
    let r = SweepResult {
        sweep: "s.toml".into(),
        scenario: "asym_min".into(),
        scenario_path: "asym_min.toml".into(),
        topology: "ryzen-7950x".into(),
        rounds: 2,
        seed: 41,
        seeds: vec![41, 42],
        duration_ns: Some(10_000_000_000),
        wakees: vec!["worker".into()],
        stall_threshold_ns: 500_000,
        measures: vec![],
        settings: vec![
            setting("defaults", "ryzen-7950x", vec![run(1, 156, 19_548, Some(7_938)), run(2, 0, 0, None)]),
            setting(
                "defaults, SMT \"siblings\"",
                "qemu-4",
                vec![run(1, 3, 400, Some(6_000)), run(2, 1, 500, Some(5_000))],
            ),
        ],
    };
    let csv = render_csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    // The header is CSV_COLUMNS, and every row has a cell for each.
    assert_eq!(lines[0].split(',').collect::<Vec<_>>(), CSV_COLUMNS);
    for line in &lines[1..] {
        assert_eq!(fields(line), CSV_COLUMNS.len(), "{line}");
    }
    assert_eq!(
        lines[0],
        "setting,round,seed,topology,kernel,simulated_ns,handoffs,stalls,stall_rate,median_handoff_ns,p99_handoff_ns,max_handoff_ns"
    );
    assert_eq!(
        lines[1],
        "defaults,1,41,ryzen-7950x,mainline,10000000000,19548,156,0.00798035604665439,5004,7938,793800"
    );
    assert_eq!(lines[2], "defaults,2,42,ryzen-7950x,mainline,10000000000,0,0,,,,", "no handoffs: empty cells");
    assert_eq!(
        lines[3],
        "\"defaults, SMT \"\"siblings\"\"\",1,41,qemu-4,mainline,10000000000,400,3,0.0075,5004,6000,600000"
    );
    assert_eq!(lines.len(), 5);
    assert!(csv.ends_with('\n'));
}

/// The number of fields of an RFC 4180 line (commas outside quotes, plus one).
fn fields(line: &str) -> usize {
    let mut quoted = false;
    1 + line
        .chars()
        .filter(|&c| {
            if c == '"' {
                quoted = !quoted;
            }
            c == ',' && !quoted
        })
        .count()
}
