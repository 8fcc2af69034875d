//! CSV for pandas, polars or a spreadsheet: one row per (setting, round),
//! in (setting, round) order, RFC 4180 quoting.

use crate::SweepResult;

/// The header line's columns. `stall_rate` is `stalls / handoffs` (a
/// fraction, in Rust's shortest round-trip notation); empty cells are
/// values that do not exist (no handoffs in that run).
pub const CSV_COLUMNS: [&str; 12] = [
    "setting",
    "round",
    "seed",
    "topology",
    "kernel",
    "simulated_ns",
    "handoffs",
    "stalls",
    "stall_rate",
    "median_handoff_ns",
    "p99_handoff_ns",
    "max_handoff_ns",
];

/// A field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// The whole CSV text, header first, each line ending in `\n`.
pub fn render_csv(r: &SweepResult) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for s in &r.settings {
        for x in &s.runs {
            let rate = if x.handoffs == 0 { String::new() } else { (x.stalls as f64 / x.handoffs as f64).to_string() };
            let row = [
                field(&s.name),
                x.run.to_string(),
                x.seed.to_string(),
                field(&s.topology),
                field(&s.kernel),
                x.simulated_ns.to_string(),
                x.handoffs.to_string(),
                x.stalls.to_string(),
                rate,
                opt(x.median_handoff_ns),
                opt(x.p99_handoff_ns),
                opt(x.max_handoff_ns),
            ];
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}
