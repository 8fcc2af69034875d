//! `[schbench]` sweeps: schbench's `average rps` per run as the reports
//! list them, then a table of steps — each setting's mean against the row
//! above it, the model's beside the published one (`reported_rps` in the
//! sweep file) — with the run-to-run spread and Welch's p on both sides,
//! and per step whether the model agrees; then why, from the model's
//! schedstats. The question it answers is the one performance engineers
//! ask of a patch: does it raise or lower throughput on that machine, and
//! is the difference more than the runs' own spread.

use std::fmt::Write as _;

use schedlab_analysis::pad_right;

use crate::stats::{mean, welch};
use crate::{SettingResult, SweepResult};

/// A published step is judged when it exceeds this many times the larger
/// run-to-run spread of its two rows (issue 38: "twice the report's
/// run-to-run spread").
pub const SPREAD_FACTOR: f64 = 2.0;
/// Significance level of a model step.
pub const ALPHA: f64 = 0.05;

/// (max − min) / mean of `xs`, in percent; `None` below two values.
pub fn spread_pct(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
    Some((hi - lo) / m * 100.0)
}

/// One side's step from `a` to `b`: the change of the mean in percent and
/// Welch's two-sided p (when both have two runs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub change_pct: f64,
    pub p: Option<f64>,
}

pub fn step(a: &[f64], b: &[f64]) -> Option<Step> {
    let (ma, mb) = (mean(a)?, mean(b)?);
    Some(Step { change_pct: (mb - ma) / ma * 100.0, p: welch(a, b).map(|w| w.p) })
}

/// What the model's step says of a published one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The published step is within its runs' spread: nothing to judge.
    WithinSpread,
    /// Same direction, and significant at [`ALPHA`].
    Agrees,
    /// Same direction, not significant.
    SameDirectionNotSignificant,
    /// The other direction (significant or not).
    Opposite,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::WithinSpread => "-",
            Verdict::Agrees => "agrees",
            Verdict::SameDirectionNotSignificant => "same sign, p too large",
            Verdict::Opposite => "OPPOSITE",
        }
    }
}

/// Judge the model's step against the published one (see [`Verdict`]).
pub fn verdict(model: Step, reported: Step, reported_spread_pct: f64) -> Verdict {
    if reported.change_pct.abs() <= SPREAD_FACTOR * reported_spread_pct {
        return Verdict::WithinSpread;
    }
    if model.change_pct.signum() != reported.change_pct.signum() || model.change_pct == 0.0 {
        return Verdict::Opposite;
    }
    match model.p {
        Some(p) if p < ALPHA => Verdict::Agrees,
        _ => Verdict::SameDirectionNotSignificant,
    }
}

fn rps(s: &SettingResult) -> Vec<f64> {
    s.runs.iter().filter_map(|x| x.schbench_rps).collect()
}

fn fmt_rps(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v >= 1e6 => format!("{:.3} M", v / 1e6),
        Some(v) => format!("{v:.1}"),
    }
}

fn fmt_pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2} %"))
}

fn fmt_step(s: Option<Step>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match s.p {
            Some(p) => format!("{:+.2} % p {p:.3}", s.change_pct),
            None => format!("{:+.2} %", s.change_pct),
        },
    }
}

/// The per-run lines, the steps table and the schedstats table.
pub fn render_schbench_rps(r: &SweepResult) -> String {
    if !r.settings.iter().any(|s| s.runs.iter().any(|x| x.schbench_rps.is_some())) {
        return String::new();
    }
    let width = r.settings.iter().map(|s| s.name.len()).max().unwrap_or(7).max(7);
    let mut out = String::from("\nschbench average rps per run\n");
    for s in &r.settings {
        // Each run with its own rps: a run without one is left out, not
        // given the next run's.
        for x in &s.runs {
            if let Some(v) = x.schbench_rps {
                let _ = writeln!(out, "{}  run {}: average rps: {v:.2}", pad_right(&s.name, width), x.run);
            }
        }
    }
    let _ = writeln!(
        out,
        "\nsteps: each row's mean against the row above; spread = (max - min) / mean of the runs; \
         p = Welch's t-test (two-sided)"
    );
    let reported = r.settings.iter().any(|s| !s.reported_rps.is_empty());
    let _ = write!(out, "{}  {:>11} {:>8} {:>18}", pad_right("setting", width), "model", "spread", "step");
    if reported {
        let _ = write!(out, "  {:>11} {:>8} {:>18}  verdict", "reported", "spread", "step");
    }
    out.push('\n');
    let mut prev: Option<&SettingResult> = None;
    let mut judged = (0, 0);
    for s in &r.settings {
        let (m, rep) = (rps(s), &s.reported_rps);
        let model_step = prev.and_then(|p| step(&rps(p), &m));
        let _ = write!(
            out,
            "{}  {:>11} {:>8} {:>18}",
            pad_right(&s.name, width),
            fmt_rps(mean(&m)),
            fmt_pct(spread_pct(&m)),
            fmt_step(model_step)
        );
        if reported {
            let rep_step = prev.filter(|p| !p.reported_rps.is_empty()).and_then(|p| step(&p.reported_rps, rep));
            let spread = |xs: &[f64]| spread_pct(xs).unwrap_or(0.0);
            let v = match (model_step, rep_step, prev) {
                (Some(ms), Some(rs), Some(p)) => {
                    let v = verdict(ms, rs, spread(rep).max(spread(&p.reported_rps)));
                    if v != Verdict::WithinSpread {
                        judged.0 += 1;
                        judged.1 += u32::from(v == Verdict::Agrees);
                    }
                    v.as_str()
                }
                _ => "",
            };
            let _ = write!(
                out,
                "  {:>11} {:>8} {:>18}  {v}",
                fmt_rps(mean(rep)),
                fmt_pct(spread_pct(rep)),
                fmt_step(rep_step)
            );
        }
        out.push('\n');
        prev = Some(s);
    }
    if reported {
        let _ = writeln!(
            out,
            "{} of {} published steps larger than {SPREAD_FACTOR}x their runs' spread: the model's step agrees \
             (same sign, p < {ALPHA})",
            judged.1, judged.0
        );
    }
    out.push_str(&render_why(r, width));
    out
}

/// Per setting, the means over its runs of what the model's schedstats say.
fn render_why(r: &SweepResult, width: usize) -> String {
    if !r.settings.iter().any(|s| s.runs.iter().any(|x| x.why.is_some())) {
        return String::new();
    }
    let mut out = String::from(
        "\nwhy (the model's schedstats, means over the runs): wakeups by path in percent, the wakers' ns per wakeup, \
         CPU classes busy and in newidle balancing\n",
    );
    let paths: Vec<String> = r
        .settings
        .iter()
        .flat_map(|s| s.runs.iter().filter_map(|x| x.why.as_ref()))
        .flat_map(|w| w.paths.iter().filter(|p| p.wakeups > 0).map(|p| p.path.clone()))
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        });
    let classes: Vec<String> = r
        .settings
        .iter()
        .flat_map(|s| s.runs.iter().filter_map(|x| x.why.as_ref()))
        .flat_map(|w| w.classes.iter().map(|c| c.class.clone()))
        .fold(Vec::new(), |mut v, c| {
            if !v.contains(&c) {
                v.push(c);
            }
            v
        });
    let _ = write!(out, "{}", pad_right("setting", width));
    for p in &paths {
        let _ = write!(out, "  {p:>17}");
    }
    let _ = write!(out, "  {:>9}", "ns/wakeup");
    for c in &classes {
        let _ = write!(out, "  {:>28}", format!("{c} busy/newidle"));
    }
    out.push('\n');
    for s in &r.settings {
        let whys: Vec<&crate::why::Why> = s.runs.iter().filter_map(|x| x.why.as_ref()).collect();
        if whys.is_empty() {
            continue;
        }
        let avg = |f: &dyn Fn(&crate::why::Why) -> f64| whys.iter().map(|w| f(w)).sum::<f64>() / whys.len() as f64;
        let _ = write!(out, "{}", pad_right(&s.name, width));
        for p in &paths {
            let share = avg(&|w| w.share_pct(p));
            let _ = write!(out, "  {:>16.2}%", share);
        }
        let per_wake = avg(&|w| w.waker_ns_per_wakeup());
        let _ = write!(out, "  {per_wake:>9.0}");
        for c in &classes {
            let busy = avg(&|w| w.classes.iter().find(|x| &x.class == c).map_or(0.0, |x| x.busy_pct()));
            let newidle = avg(&|w| w.classes.iter().find(|x| &x.class == c).map_or(0.0, |x| x.newidle_pct()));
            let _ = write!(out, "  {:>28}", format!("{busy:.1} % / {newidle:.2} %"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_within_the_reports_spread_is_not_judged() {
        let rep = Step { change_pct: 0.3, p: Some(0.01) };
        assert_eq!(verdict(Step { change_pct: -5.0, p: Some(0.001) }, rep, 0.2), Verdict::WithinSpread);
        assert_eq!(verdict(Step { change_pct: -5.0, p: Some(0.001) }, rep, 0.1), Verdict::Opposite);
        assert_eq!(verdict(Step { change_pct: 0.5, p: Some(0.001) }, rep, 0.1), Verdict::Agrees);
        assert_eq!(verdict(Step { change_pct: 0.5, p: Some(0.2) }, rep, 0.1), Verdict::SameDirectionNotSignificant);
        assert_eq!(verdict(Step { change_pct: 0.5, p: None }, rep, 0.1), Verdict::SameDirectionNotSignificant);
    }

    #[test]
    fn spread_and_steps_on_seed_004s_runs() {
        // Peter's 6.9 and the series' runs (seed 004).
        let a = [2975450.75, 2975464.38, 2974881.02];
        let b = [3029984.58, 3034723.10, 3033893.33];
        assert!((spread_pct(&a).unwrap() - 0.0196).abs() < 1e-3, "{:?}", spread_pct(&a));
        let s = step(&a, &b).unwrap();
        assert!((s.change_pct - 1.93).abs() < 0.01, "{s:?}");
        assert!(s.p.unwrap() < 0.001);
        assert_eq!(spread_pct(&[1.0]), None);
    }
}
