//! `schedlab fidelity`: the model against this host's kernel on a suite of
//! micro-workloads, one row per case and metric — real, model, their
//! ratio, the band the model must fall in and the verdict — as an aligned
//! table to paste into a mail, and as JSON. The suite itself (cases, bands,
//! verdicts, running both sides) is `schedlab_fidelity`'s; this module only
//! prints what it is handed.

use std::fmt;
use std::fmt::Write as _;

use serde::Serialize;

/// The outcome of one row.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Fail,
    /// No verdict: the reason (too few samples, a capture that lost events, ...).
    NotApplicable(String),
    /// No verdict either way: out of the band against the real median, but
    /// the real rounds themselves spread wider than the band and the model
    /// is in it against one of them. The reason names the spread.
    Unsteady(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable(_) => "n/a",
            Verdict::Unsteady(_) => "UNSTEADY",
        })
    }
}

/// Why a side has no figure for a metric in a round (its capture lost
/// events, too few wakeups for a percentile): the row prints it as the
/// reason for its n/a, so it is a sentence, not a code.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NoFigure(pub String);

/// A side's figure for a metric in one round, or why it has none.
pub type Figure = Result<f64, NoFigure>;

impl From<String> for NoFigure {
    fn from(why: String) -> Self {
        NoFigure(why)
    }
}

impl From<&str> for NoFigure {
    fn from(why: &str) -> Self {
        NoFigure(why.to_string())
    }
}

/// A reason compares with the sentence it is.
impl PartialEq<&str> for NoFigure {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The reason reads as text (`why.contains(..)`, `&why[..]`).
impl std::ops::Deref for NoFigure {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// One row: a case's metric on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct FidelityRow {
    pub case: String,
    /// With its unit, e.g. `wakeup p50 (us)`.
    pub metric: String,
    /// `us`, `/s` or `%`: how the values print.
    pub unit: String,
    /// Medians over the rounds; `None` where a side has no figure.
    pub real: Option<f64>,
    pub model: Option<f64>,
    /// model / real, when both exist and real is not zero.
    pub ratio: Option<f64>,
    /// The band in a few words (`ratio 0.5-1.5`).
    pub band: String,
    pub verdict: Verdict,
    /// Each round's figure, or why it has none.
    pub real_rounds: Vec<Figure>,
    pub model_rounds: Vec<Figure>,
}

/// The rest of the machine during one case's real runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FidelityLoad {
    pub case: String,
    /// CPUs' worth of work that was not the suite's (mean over the rounds).
    pub other_cpus: f64,
    /// Percent of the CPUs' time a hypervisor stole.
    pub steal_pct: f64,
    /// The busy loop's speed (loops/us of thread CPU time) measured before
    /// each real round, lowest and highest: a host whose CPU speed moves
    /// (frequency, a busy SMT sibling or core on the hypervisor) moves the
    /// real figures with no steal or other work to show for it.
    pub cpu_speed_min: Option<f64>,
    pub cpu_speed_max: Option<f64>,
}

/// The suite's whole text report.
pub struct FidelityText<'a> {
    /// `uname -r` of the real side.
    pub kernel: &'a str,
    /// The model's machine: its name and where it came from.
    pub topology: &'a str,
    pub topology_source: &'a str,
    /// The kernel profiles the cases' models ran (usually one).
    pub profiles: &'a [String],
    pub rounds: u32,
    /// The first round's model seed, when `--seed` gave one (else each file's).
    pub seed: Option<u64>,
    /// The bands, one line each, as the suite states them.
    pub bands: &'a str,
    pub rows: &'a [FidelityRow],
    /// The real runs' notes, each once.
    pub notes: &'a [String],
    /// Per case, the machine's other work during its real runs.
    pub loads: &'a [FidelityLoad],
    pub wall_s: f64,
}

/// A value as its unit prints: latencies to 0.1 µs, rates whole, percents to 0.01.
pub fn fidelity_value(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".into(),
        Some(x) if unit == "us" => format!("{x:.1}"),
        Some(x) if unit == "/s" => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// The verdict column: `n/a (why)` for a row without one.
fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::NotApplicable(why) => format!("n/a ({why})"),
        Verdict::Unsteady(why) => format!("UNSTEADY ({why})"),
        v => v.to_string(),
    }
}

/// The aligned table: a header line, then one line per row.
pub fn render_fidelity_table(rows: &[FidelityRow]) -> String {
    let head = ["case", "metric", "real", "model", "ratio", "band", "verdict"];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.case.clone(),
                r.metric.clone(),
                fidelity_value(r.real, &r.unit),
                fidelity_value(r.model, &r.unit),
                ratio_text(r.ratio),
                r.band.clone(),
                verdict_text(&r.verdict),
            ]
        })
        .collect();
    let mut w = head.map(|h| h.chars().count());
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.chars().count());
        }
    }
    // Text columns left, numbers right; the last column is not padded.
    let line = |c: [&str; 7]| {
        let pad = |s: &str, i: usize| " ".repeat(w[i] - s.chars().count());
        let mut l = String::new();
        for (i, s) in c.iter().enumerate() {
            match i {
                2..=4 => l.push_str(&format!("{}{s}", pad(s, i))),
                6 => l.push_str(s),
                _ => l.push_str(&format!("{s}{}", pad(s, i))),
            }
            if i < 6 {
                l.push_str("  ");
            }
        }
        l.push('\n');
        l
    };
    let mut out = line(head);
    for c in &cells {
        out.push_str(&line([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6]]));
    }
    out
}

/// The rows that are not PASS, as `--check` names them; empty when all pass.
pub fn fidelity_failures(rows: &[FidelityRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .map(|r| match &r.verdict {
            Verdict::NotApplicable(why) => format!("{} {} (n/a: {why})", r.case, r.metric),
            Verdict::Unsteady(why) => format!("{} {} (unsteady: {why})", r.case, r.metric),
            _ => format!(
                "{} {} (real {}, model {}, band {})",
                r.case,
                r.metric,
                fidelity_value(r.real, &r.unit),
                fidelity_value(r.model, &r.unit),
                r.band
            ),
        })
        .collect()
}

/// `N PASS, M FAIL, K n/a`, with `, U unsteady` when any row is.
pub fn fidelity_summary(rows: &[FidelityRow]) -> String {
    let n = |f: fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.verdict)).count();
    let unsteady = n(|v| matches!(v, Verdict::Unsteady(_)));
    format!(
        "{} PASS, {} FAIL, {} n/a{}",
        n(|v| *v == Verdict::Pass),
        n(|v| *v == Verdict::Fail),
        n(|v| matches!(v, Verdict::NotApplicable(_))),
        if unsteady > 0 { format!(", {unsteady} unsteady") } else { String::new() }
    )
}

impl FidelityText<'_> {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let rounds = if self.rounds == 1 { "1 round".to_string() } else { format!("{} rounds (medians)", self.rounds) };
        let seed = self.seed.map_or_else(|| "each file's seed".to_string(), |s| format!("seeds from {s}"));
        let _ = writeln!(out, "fidelity  the model against this kernel, {rounds}");
        let _ = writeln!(out, "real      {} (this host)", self.kernel);
        let _ = writeln!(
            out,
            "model     topology {} ({}), kernel profile {}, {seed}",
            self.topology,
            self.topology_source,
            self.profiles.join(", ")
        );
        out.push_str(self.bands);
        out.push('\n');
        out.push_str(&render_fidelity_table(self.rows));
        let _ = writeln!(out, "\n{} (wall {:.1} s)", fidelity_summary(self.rows), self.wall_s);
        if !self.loads.is_empty() {
            // Other work competes with the workload and moves the real figures.
            let per: Vec<String> = self
                .loads
                .iter()
                .map(|l| {
                    let speed = match (l.cpu_speed_min, l.cpu_speed_max) {
                        (Some(lo), Some(hi)) if lo > 0.0 => {
                            format!(", CPU speed {lo:.0}-{hi:.0} loops/us ({:.2}x)", hi / lo)
                        }
                        _ => String::new(),
                    };
                    format!("{} {:.2} CPUs, steal {:.1} %{speed}", l.case, l.other_cpus, l.steal_pct)
                })
                .collect();
            let _ = writeln!(out, "other work on the machine during the real runs: {}", per.join("; "));
        }
        if !self.notes.is_empty() {
            out.push_str("\nnotes of the real runs:\n");
            for n in self.notes {
                let _ = writeln!(out, "  {n}");
            }
        }
        out
    }
}

/// One round's figure in JSON: a value or the reason there is none.
#[derive(Serialize)]
pub struct RoundJson<'a> {
    pub value: Option<f64>,
    pub reason: Option<&'a str>,
}

/// One row in `schedlab fidelity --json`.
#[derive(Serialize)]
pub struct FidelityRowJson<'a> {
    pub case: &'a str,
    pub metric: &'a str,
    pub unit: &'a str,
    pub real: Option<f64>,
    pub model: Option<f64>,
    pub ratio: Option<f64>,
    pub band: &'a str,
    /// `PASS`, `FAIL`, `UNSTEADY` or `n/a`.
    pub verdict: String,
    /// Why the verdict is n/a or UNSTEADY.
    pub reason: Option<&'a str>,
    pub real_rounds: Vec<RoundJson<'a>>,
    pub model_rounds: Vec<RoundJson<'a>>,
}

/// `schedlab fidelity --json`.
#[derive(Serialize)]
pub struct FidelityJson<'a> {
    pub format: u32,
    pub kernel: &'a str,
    pub topology: &'a str,
    pub topology_source: &'a str,
    pub rounds: u32,
    pub seed: Option<u64>,
    pub bands: Vec<&'a str>,
    pub rows: Vec<FidelityRowJson<'a>>,
    pub notes: &'a [String],
    pub loads: &'a [FidelityLoad],
    pub wall_s: f64,
}

fn rounds_json(v: &[Figure]) -> Vec<RoundJson<'_>> {
    v.iter()
        .map(|r| match r {
            Ok(x) => RoundJson { value: Some(*x), reason: None },
            Err(why) => RoundJson { value: None, reason: Some(why) },
        })
        .collect()
}

impl<'a> FidelityText<'a> {
    /// The same report as a JSON document.
    pub fn json(&self) -> FidelityJson<'a> {
        let rows: &'a [FidelityRow] = self.rows;
        FidelityJson {
            format: crate::FORMAT_VERSION,
            kernel: self.kernel,
            topology: self.topology,
            topology_source: self.topology_source,
            rounds: self.rounds,
            seed: self.seed,
            bands: self.bands.lines().collect(),
            rows: rows
                .iter()
                .map(|r| FidelityRowJson {
                    case: &r.case,
                    metric: &r.metric,
                    unit: &r.unit,
                    real: r.real,
                    model: r.model,
                    ratio: r.ratio,
                    band: &r.band,
                    verdict: r.verdict.to_string(),
                    reason: match &r.verdict {
                        Verdict::NotApplicable(why) | Verdict::Unsteady(why) => Some(why),
                        _ => None,
                    },
                    real_rounds: rounds_json(&r.real_rounds),
                    model_rounds: rounds_json(&r.model_rounds),
                })
                .collect(),
            notes: self.notes,
            loads: self.loads,
            wall_s: self.wall_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str, metric: &str, unit: &str, real: Option<f64>, model: Option<f64>, v: Verdict) -> FidelityRow {
        FidelityRow {
            case: case.into(),
            metric: metric.into(),
            unit: unit.into(),
            real,
            model,
            ratio: match (real, model) {
                (Some(r), Some(m)) if r > 0.0 => Some(m / r),
                _ => None,
            },
            band: "ratio 0.5-1.5".into(),
            real_rounds: vec![real.ok_or_else(|| NoFigure::from("12 wakeups (a p99 needs 200)"))],
            model_rounds: vec![model.ok_or_else(|| NoFigure::from("none"))],
            verdict: v,
        }
    }

    fn rows() -> Vec<FidelityRow> {
        vec![
            row("schbench", "wakeup p50 (us)", "us", Some(5.0), Some(21.04), Verdict::Fail),
            row("pingpong-2cpu", "ping loops/s", "/s", Some(31234.4), Some(30999.0), Verdict::Pass),
            row(
                "cyclictest",
                "wakeup p99 (us)",
                "us",
                None,
                Some(12.0),
                Verdict::NotApplicable("real: 12 wakeups (a p99 needs 200)".into()),
            ),
            row("nice", "nice0 share (%)", "%", Some(75.301), Some(75.35), Verdict::Pass),
        ]
    }

    #[test]
    fn the_table_is_aligned_with_numbers_right_and_reasons_last() {
        let t = render_fidelity_table(&rows());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("case           metric           "), "{t}");
        // Every row's `real` column ends where the header's does.
        let end = lines[0].find("real").unwrap() + 4;
        for l in &lines[1..] {
            assert_eq!(&l[end..end + 2], "  ", "{t}");
            assert_ne!(l.as_bytes()[end - 1], b' ', "{t}");
        }
        assert!(lines[1].contains("  5.0  ") && lines[1].contains(" 21.0  ") && lines[1].contains(" 4.21  "), "{t}");
        assert!(lines[1].ends_with("FAIL"), "{t}");
        assert!(lines[2].contains(" 31234  ") && lines[2].contains(" 30999  ") && lines[2].contains(" 0.99  "), "{t}");
        assert!(lines[3].contains("      -   12.0      -  "), "{t}");
        assert!(lines[3].ends_with("n/a (real: 12 wakeups (a p99 needs 200))"), "{t}");
        assert!(lines[4].contains("  75.30  75.35   1.00  "), "{t}");
    }

    #[test]
    fn failures_name_every_row_that_is_not_a_pass() {
        let f = fidelity_failures(&rows());
        assert_eq!(
            f,
            [
                "schbench wakeup p50 (us) (real 5.0, model 21.0, band ratio 0.5-1.5)",
                "cyclictest wakeup p99 (us) (n/a: real: 12 wakeups (a p99 needs 200))"
            ]
        );
        assert_eq!(fidelity_summary(&rows()), "2 PASS, 1 FAIL, 1 n/a");
        assert!(fidelity_failures(&rows()[1..2]).is_empty());
    }

    #[test]
    fn the_report_states_both_sides_the_bands_and_the_notes_once() {
        let rows = rows();
        let notes = vec!["kernel profile `mainline` is the model's".to_string()];
        let text = FidelityText {
            kernel: "6.18.44",
            topology: "kvm-2",
            topology_source: "scenarios/topologies/kvm-2.toml",
            profiles: &["mainline".to_string()],
            rounds: 3,
            seed: Some(7),
            bands: "bands (ratio = model / real):\n  latency p50     ratio 0.5-1.5\n",
            rows: &rows,
            notes: &notes,
            loads: &[FidelityLoad {
                case: "schbench".into(),
                other_cpus: 0.954,
                steal_pct: 1.25,
                cpu_speed_min: Some(473.0),
                cpu_speed_max: Some(658.0),
            }],
            wall_s: 38.25,
        };
        let s = text.render();
        assert!(s.contains("3 rounds (medians)"), "{s}");
        assert!(s.contains("real      6.18.44 (this host)"), "{s}");
        assert!(s.contains("topology kvm-2 (scenarios/topologies/kvm-2.toml), kernel profile mainline, seeds from 7"));
        assert!(s.contains("  latency p50     ratio 0.5-1.5\n\ncase "), "{s}");
        assert!(s.contains("2 PASS, 1 FAIL, 1 n/a (wall 38.2 s)"), "{s}");
        assert_eq!(s.matches("kernel profile `mainline` is the model's").count(), 1);
        assert!(s.contains("other work on the machine during the real runs: schbench 0.95 CPUs, steal 1.2 %, CPU speed 473-658 loops/us (1.39x)\n"), "{s}");

        let doc: serde_json::Value = serde_json::from_str(&crate::to_json(&text.json()).unwrap()).unwrap();
        let rows_json = doc["rows"].as_array().unwrap();
        assert_eq!(rows_json.len(), 4);
        assert_eq!(doc["bands"].as_array().unwrap().len(), 2);
        assert_eq!(rows_json[0]["verdict"], "FAIL");
        assert_eq!(rows_json[0]["reason"], serde_json::Value::Null);
        assert_eq!(rows_json[2]["verdict"], "n/a");
        assert_eq!(rows_json[2]["real"], serde_json::Value::Null);
        assert_eq!(rows_json[2]["reason"], "real: 12 wakeups (a p99 needs 200)");
        assert_eq!(rows_json[2]["real_rounds"][0]["reason"], "12 wakeups (a p99 needs 200)");
        assert_eq!(rows_json[1]["model_rounds"][0]["value"], 30999.0);
        assert_eq!(doc["loads"][0]["other_cpus"], 0.954);
    }
}
