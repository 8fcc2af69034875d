//! A/B comparisons of two settings of a sweep, with ktstr-style gates.
//!
//! For each metric, over the per-round values of setting A and setting B:
//! the means, `B − A`, the relative change `(B − A) / A`, a seeded
//! bootstrap 95 % confidence interval of `B − A` and the two-sided p-value
//! of Welch's t-test ([`crate::stats`]). The metrics, all "lower is better":
//!
//! | metric           | per-round value                              | unit |
//! |------------------|----------------------------------------------|------|
//! | `stall_rate`     | `100 × stalls / handoffs` (rounds without handoffs are left out) | % of handoffs; differences in percentage points |
//! | `median_handoff` | the round's median handoff latency           | ns   |
//! | `p99_handoff`    | the round's 99th-percentile handoff latency  | ns   |
//!
//! Gates (`[ab.gates]`, keys `<metric>_abs` and `<metric>_rel`) make a claim
//! checkable. The sign of the thresholds says which kind of gate it is:
//!
//! * **requirement** (negative thresholds): B must improve on A. PASS iff
//!   the change is significant (`p < alpha`) *and* `B − A <= abs` *and*
//!   `(B − A)/A <= rel` (each for the thresholds given). `stall_rate_rel =
//!   -0.5` reads "B cuts the stall rate by at least half".
//! * **budget** (thresholds ≥ 0, ktstr's dual gate): B may be worse by at
//!   most this much. FAIL iff the change is significant *and* exceeds every
//!   threshold given (`B − A > abs` *and* `(B − A)/A > rel`), so noise and
//!   tiny absolute changes never fail it.
//!
//! A metric's two thresholds must be of the same kind. A gate that cannot
//! be tested (fewer than two rounds with a value on a side) fails.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use crate::render::push_line;
use crate::stats::{bootstrap_ci, mean, variance, welch};
use crate::SweepResult;

/// Default significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;
/// Default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: u32 = 10_000;
/// Confidence level of the bootstrap interval.
pub const CI_LEVEL: f64 = 0.95;

/// What is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    StallRate,
    MedianHandoff,
    P99Handoff,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::StallRate, Metric::MedianHandoff, Metric::P99Handoff];

    /// The key stem in `[ab.gates]` and in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Metric::StallRate => "stall_rate",
            Metric::MedianHandoff => "median_handoff",
            Metric::P99Handoff => "p99_handoff",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::StallRate => "stall rate",
            Metric::MedianHandoff => "median handoff",
            Metric::P99Handoff => "p99 handoff",
        }
    }

    /// The per-round values of one setting.
    fn values(self, r: &SweepResult, setting: &str) -> Vec<f64> {
        let Some(s) = r.settings.iter().find(|s| s.name == setting) else { return Vec::new() };
        s.runs
            .iter()
            .filter_map(|x| match self {
                Metric::StallRate => (x.handoffs > 0).then(|| 100.0 * x.stalls as f64 / x.handoffs as f64),
                Metric::MedianHandoff => x.median_handoff_ns.map(|v| v as f64),
                Metric::P99Handoff => x.p99_handoff_ns.map(|v| v as f64),
            })
            .collect()
    }

    /// A value (`signed`: a difference) in the metric's display unit.
    fn show(self, v: f64, signed: bool) -> String {
        let s = match self {
            Metric::StallRate => format!("{v:.4}"),
            _ => format!("{:.3}", v / 1_000.0),
        };
        let s = if signed && !s.starts_with('-') { format!("+{s}") } else { s };
        match (self, signed) {
            (Metric::StallRate, false) => format!("{s} %"),
            (Metric::StallRate, true) => format!("{s} pp"),
            _ => format!("{s} us"),
        }
    }
}

/// One metric's thresholds (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub metric: Metric,
    /// Bound on `B − A` in the metric's unit (percentage points; ns).
    pub abs: Option<f64>,
    /// Bound on `(B − A) / A`, a fraction (`-0.5` = −50 %).
    pub rel: Option<f64>,
}

impl Gate {
    /// Negative thresholds: B must improve; otherwise a regression budget.
    pub fn is_requirement(&self) -> bool {
        self.abs.or(self.rel).is_some_and(|v| v < 0.0)
    }
}

/// What to compare and how: the `[ab]` table or `--ab A,B`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbSpec {
    /// The baseline setting.
    pub a: String,
    /// The setting compared against it.
    pub b: String,
    /// Significance level of the gates.
    pub alpha: f64,
    /// Bootstrap resamples and the generator's seed.
    pub bootstrap: u32,
    pub seed: u64,
    /// In [`Metric`] order, at most one per metric.
    pub gates: Vec<Gate>,
}

impl AbSpec {
    /// A comparison of `a` and `b` with the defaults and no gates.
    pub fn new(a: &str, b: &str) -> AbSpec {
        AbSpec {
            a: a.to_string(),
            b: b.to_string(),
            alpha: DEFAULT_ALPHA,
            bootstrap: DEFAULT_RESAMPLES,
            seed: 1,
            gates: Vec::new(),
        }
    }
}

/// One metric compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricComparison {
    pub metric: Metric,
    /// Rounds with a value, per side.
    pub n_a: usize,
    pub n_b: usize,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub sd_a: Option<f64>,
    pub sd_b: Option<f64>,
    /// `mean_b − mean_a`.
    pub diff: Option<f64>,
    /// `diff / mean_a`; `None` when `mean_a` is 0.
    pub rel: Option<f64>,
    /// Bootstrap 95 % CI of `diff`.
    pub ci: Option<(f64, f64)>,
    /// Welch's t, its degrees of freedom and two-sided p.
    pub t: Option<f64>,
    pub df: Option<f64>,
    pub p: Option<f64>,
}

/// A gate's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateResult {
    pub gate: Gate,
    pub pass: bool,
    /// Why, in words: the thresholds and what was measured.
    pub reason: String,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbReport {
    pub spec: AbSpec,
    pub metrics: Vec<MetricComparison>,
    pub gates: Vec<GateResult>,
    /// `None` without gates; else whether every gate passed.
    pub pass: Option<bool>,
}

/// The A/B a sweep's report runs: the file's `[ab]`, with `--ab A,B`
/// (`cli`) replacing its pair, checked against `r`'s settings.
pub fn resolve_spec(r: &SweepResult, file: Option<&AbSpec>, cli: Option<&str>) -> Result<Option<AbSpec>, AbError> {
    let Some(arg) = cli else { return Ok(file.cloned()) };
    let names: Vec<&str> = r.settings.iter().map(|s| s.name.as_str()).collect();
    let (a, b) = parse_ab_pair(arg, &names)?;
    let mut spec = file.cloned().unwrap_or_else(|| AbSpec::new(&a, &b));
    spec.a = a;
    spec.b = b;
    Ok(Some(spec))
}

impl AbReport {
    /// The metrics of the gates that failed, when the A/B did not pass.
    pub fn failed_gates(&self) -> Option<String> {
        let failed: Vec<&str> = self.gates.iter().filter(|g| !g.pass).map(|g| g.gate.metric.key()).collect();
        self.pass.is_some_and(|p| !p).then(|| failed.join(", "))
    }
}

/// A sweep's result with the A/B comparison printed beside it: the file's
/// pair (`[ab]`), or `--ab`'s with the file's gates.
pub struct SweepReport<'a> {
    pub result: &'a SweepResult,
    pub ab: Option<AbReport>,
}

impl<'a> SweepReport<'a> {
    pub fn new(result: &'a SweepResult, file: Option<&AbSpec>, cli: Option<&str>) -> Result<Self, AbError> {
        let spec = resolve_spec(result, file, cli)?;
        Ok(SweepReport { result, ab: spec.as_ref().map(|s| compare(result, s)).transpose()? })
    }

    /// The tables, then the comparison; `timing` closes them.
    pub fn text(&self, timing: Option<&str>) -> String {
        crate::render_sweep_text(self.result, self.ab.as_ref(), timing)
    }

    pub fn json(&self) -> Result<String, crate::ReportError> {
        let doc = crate::SweepJson { format: crate::FORMAT_VERSION, result: self.result, ab: self.ab.as_ref() };
        crate::to_json(&doc)
    }

    /// The comparison's failed gates, if any (the report is printed first).
    pub fn gates(&self) -> Result<(), GateFailed> {
        match self.ab.as_ref().and_then(|a| Some((a, a.failed_gates()?))) {
            Some((a, failed)) => Err(GateFailed { a: a.spec.a.clone(), b: a.spec.b.clone(), failed }),
            None => Ok(()),
        }
    }
}

/// An A/B gate the comparison failed.
#[derive(Debug, thiserror::Error)]
#[error("A/B gate failed ({b} vs {a}): {failed}")]
pub struct GateFailed {
    pub a: String,
    pub b: String,
    pub failed: String,
}

/// Compare `spec.b` against `spec.a` in `r`. Errors if either is not a
/// setting of the sweep.
pub fn compare(r: &SweepResult, spec: &AbSpec) -> Result<AbReport, AbError> {
    let names: Vec<&str> = r.settings.iter().map(|s| s.name.as_str()).collect();
    for side in [&spec.a, &spec.b] {
        if !names.contains(&side.as_str()) {
            return Err(AbError::UnknownSetting { name: side.clone(), names: owned(&names) });
        }
    }
    let metrics: Vec<MetricComparison> = Metric::ALL
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            let (a, b) = (m.values(r, &spec.a), m.values(r, &spec.b));
            let (mean_a, mean_b) = (mean(&a), mean(&b));
            let diff = mean_a.zip(mean_b).map(|(x, y)| y - x);
            let w = welch(&a, &b);
            // A different stream per metric, all from the one seed.
            let seed = spec.seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64));
            MetricComparison {
                metric: m,
                n_a: a.len(),
                n_b: b.len(),
                mean_a,
                mean_b,
                sd_a: variance(&a).map(f64::sqrt),
                sd_b: variance(&b).map(f64::sqrt),
                diff,
                rel: diff.zip(mean_a).filter(|(_, x)| *x != 0.0).map(|(d, x)| d / x),
                ci: bootstrap_ci(&a, &b, spec.bootstrap, seed, CI_LEVEL),
                t: w.map(|w| w.t),
                df: w.map(|w| w.df),
                p: w.map(|w| w.p),
            }
        })
        .collect();
    let gates: Vec<GateResult> = spec
        .gates
        .iter()
        .map(|g| {
            let m = metrics.iter().find(|m| m.metric == g.metric).expect("every metric is compared");
            check_gate(g, m, spec.alpha)
        })
        .collect();
    let pass = (!gates.is_empty()).then(|| gates.iter().all(|g| g.pass));
    Ok(AbReport { spec: spec.clone(), metrics, gates, pass })
}

/// Apply one gate to its metric's comparison (see the module documentation).
pub fn check_gate(g: &Gate, m: &MetricComparison, alpha: f64) -> GateResult {
    let metric = g.metric;
    let mut bounds = Vec::new();
    if let Some(a) = g.abs {
        bounds.push(format!("B - A {} {}", if a < 0.0 { "<=" } else { ">" }, metric.show(a, true)));
    }
    if let Some(r) = g.rel {
        bounds.push(format!("change {} {}", if r < 0.0 { "<=" } else { ">" }, pct(r)));
    }
    let requirement = g.is_requirement();
    let claim = if requirement {
        format!("requires {} with p < {alpha}", bounds.join(" and "))
    } else {
        format!("budget, fails if {} with p < {alpha}", bounds.join(" and "))
    };
    let (Some(diff), Some(p)) = (m.diff, m.p) else {
        return GateResult {
            gate: g.clone(),
            pass: false,
            reason: format!("{claim}; cannot test with {} and {} rounds (at least 2 each)", m.n_a, m.n_b),
        };
    };
    let measured =
        format!("measured {} ({}), p {}", m.rel.map_or("n/a".into(), pct), metric.show(diff, true), p_value(p));
    let significant = p < alpha;
    let pass = if requirement {
        significant && g.abs.is_none_or(|a| diff <= a) && g.rel.is_none_or(|r| m.rel.is_some_and(|x| x <= r))
    } else {
        // A zero baseline makes any increase an infinite relative one.
        let rel = m.rel.unwrap_or(if diff > 0.0 { f64::INFINITY } else { 0.0 });
        !(significant && g.abs.is_none_or(|a| diff > a) && g.rel.is_none_or(|r| rel > r))
    };
    GateResult { gate: g.clone(), pass, reason: format!("{claim}; {measured}") }
}

/// A fraction as a signed percentage: `-97.3 %`.
fn pct(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "+inf %".into() } else { "-inf %".into() };
    }
    format!("{:+.1} %", f * 100.0)
}

fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

fn unknown_setting<S: AsRef<str>>(name: &str, names: &[S]) -> String {
    format!(
        "no setting named `{name}` (settings: {})",
        names.iter().map(|n| format!("`{}`", n.as_ref())).collect::<Vec<_>>().join(", ")
    )
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// An A/B pair that does not name two settings of the sweep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AbError {
    #[error("{}", unknown_setting(name, names))]
    UnknownSetting { name: String, names: Vec<String> },
    #[error("--ab {arg}: A and B are the same setting")]
    SameSetting { arg: String },
    #[error("--ab {arg}: expected two settings as A,B; {}", unknown_setting(first, names))]
    NotAPair { arg: String, first: String, names: Vec<String> },
    #[error("--ab {arg}: ambiguous, the commas split it into settings more than one way")]
    Ambiguous { arg: String },
}

/// `--ab A,B`: two setting names separated by a comma. Setting names may
/// contain commas themselves, so every comma is tried and exactly one split
/// must name two different settings.
pub fn parse_ab_pair(arg: &str, names: &[&str]) -> Result<(String, String), AbError> {
    let splits: Vec<(&str, &str)> = arg
        .match_indices(',')
        .map(|(i, _)| (arg[..i].trim(), arg[i + 1..].trim()))
        .filter(|(a, b)| names.contains(a) && names.contains(b))
        .collect();
    match splits.as_slice() {
        [(a, b)] if a == b => Err(AbError::SameSetting { arg: arg.to_string() }),
        [(a, b)] => Ok((a.to_string(), b.to_string())),
        [] => {
            let first = arg.split(',').map(str::trim).find(|p| !names.contains(p)).unwrap_or(arg);
            Err(AbError::NotAPair { arg: arg.to_string(), first: first.to_string(), names: owned(names) })
        }
        _ => Err(AbError::Ambiguous { arg: arg.to_string() }),
    }
}

/// Render the comparison as text lines for the report.
pub fn render_ab(rep: &AbReport) -> String {
    let s = &rep.spec;
    let mut out = String::new();
    let (na, nb) = rep.metrics.first().map_or((0, 0), |m| (m.n_a, m.n_b));
    let rounds = if na == nb { format!("{na} rounds each") } else { format!("{na} and {nb} rounds") };
    push_line(&mut out, &format!("A/B       B = {} vs A = {}, {rounds}", s.b, s.a));
    push_line(
        &mut out,
        &format!(
            "          Welch's t-test (two-sided) on per-round values; {:.0} % CI of mean(B) - mean(A) by bootstrap ({} resamples, seed {})",
            CI_LEVEL * 100.0,
            s.bootstrap,
            s.seed
        ),
    );
    let head = ["metric", "mean A", "mean B", "B - A", "change", "95 % CI of B - A", "p"];
    let rows: Vec<[String; 7]> = rep
        .metrics
        .iter()
        .map(|m| {
            let k = m.metric;
            let opt = |v: Option<f64>, signed: bool| v.map_or("-".into(), |v| k.show(v, signed));
            let ci = m.ci.map_or("-".into(), |(lo, hi)| {
                let (lo, hi) = (k.show(lo, true), k.show(hi, true));
                let (lo, unit) = lo.rsplit_once(' ').expect("a value and its unit");
                let hi = hi.rsplit_once(' ').map_or(hi.as_str(), |h| h.0);
                format!("[{lo}, {hi}] {unit}")
            });
            [
                k.label().to_string(),
                opt(m.mean_a, false),
                opt(m.mean_b, false),
                opt(m.diff, true),
                m.rel.map_or("-".into(), pct),
                ci,
                m.p.map_or("-".into(), p_value),
            ]
        })
        .collect();
    let w: Vec<usize> =
        (0..head.len()).map(|i| rows.iter().map(|r| r[i].len()).fold(head[i].len(), usize::max)).collect();
    let line = |cells: [&str; 7]| -> String {
        cells
            .iter()
            .enumerate()
            .map(
                |(i, c)| {
                    if i == 0 {
                        schedlab_analysis::pad_right(c, w[i])
                    } else {
                        schedlab_analysis::pad_left(c, w[i])
                    }
                },
            )
            .collect::<Vec<_>>()
            .join("   ")
    };
    push_line(&mut out, &line(head));
    for r in &rows {
        push_line(&mut out, &line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]]));
    }
    for g in &rep.gates {
        let verdict = if g.pass { "PASS" } else { "FAIL" };
        push_line(&mut out, &format!("gate      {verdict}  {}: {}", g.gate.metric.label(), g.reason));
    }
    if let Some(pass) = rep.pass {
        let failed: Vec<&str> = rep.gates.iter().filter(|g| !g.pass).map(|g| g.gate.metric.key()).collect();
        let mut line = String::new();
        if pass {
            let _ = write!(line, "A/B       PASS: {} of {} gates", rep.gates.len(), rep.gates.len());
        } else {
            let _ = write!(
                line,
                "A/B       FAIL: {} of {} gates failed ({})",
                failed.len(),
                rep.gates.len(),
                failed.join(", ")
            );
        }
        push_line(&mut out, &line);
    }
    out
}

// ---- the `[ab]` table of a sweep file -------------------------------------

/// `[ab]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAb {
    a: Spanned<String>,
    b: Spanned<String>,
    alpha: Option<Spanned<f64>>,
    bootstrap: Option<Spanned<i64>>,
    seed: Option<Spanned<i64>>,
    gates: Option<BTreeMap<Spanned<String>, Spanned<Value>>>,
}

/// Check `[ab]` against the sweep's setting names. `err` locates a message
/// at a span of the file.
pub fn parse_ab(
    raw: &RawAb,
    names: &[&str],
    err: &dyn Fn(std::ops::Range<usize>, String) -> schedlab_scenario::InputError,
) -> Result<AbSpec, schedlab_scenario::InputError> {
    for side in [&raw.a, &raw.b] {
        if !names.contains(&side.get_ref().as_str()) {
            return Err(err(side.span(), format!("`ab`: {}", unknown_setting(side.get_ref(), names))));
        }
    }
    if raw.a.get_ref() == raw.b.get_ref() {
        return Err(err(raw.b.span(), "`ab`: `a` and `b` are the same setting".into()));
    }
    let mut spec = AbSpec::new(raw.a.get_ref(), raw.b.get_ref());
    if let Some(a) = &raw.alpha {
        if !(*a.get_ref() > 0.0 && *a.get_ref() < 1.0) {
            return Err(err(
                a.span(),
                format!("`alpha` = {}: expected a level between 0 and 1, e.g. 0.05", a.get_ref()),
            ));
        }
        spec.alpha = *a.get_ref();
    }
    if let Some(b) = &raw.bootstrap {
        if !(1..=1_000_000).contains(b.get_ref()) {
            return Err(err(b.span(), format!("`bootstrap` = {}: expected 1..1000000 resamples", b.get_ref())));
        }
        spec.bootstrap = *b.get_ref() as u32;
    }
    if let Some(s) = &raw.seed {
        if *s.get_ref() < 0 {
            return Err(err(s.span(), format!("`seed` = {}: expected a non-negative integer", s.get_ref())));
        }
        spec.seed = *s.get_ref() as u64;
    }
    let mut gates: BTreeMap<Metric, Gate> = BTreeMap::new();
    for (key, value) in raw.gates.iter().flatten() {
        let k = key.get_ref();
        let parsed = k.rsplit_once('_').and_then(|(stem, kind)| {
            let m = Metric::ALL.into_iter().find(|m| m.key() == stem)?;
            matches!(kind, "abs" | "rel").then_some((m, kind == "abs"))
        });
        let Some((metric, is_abs)) = parsed else {
            let keys: Vec<String> =
                Metric::ALL.iter().flat_map(|m| [format!("`{}_abs`", m.key()), format!("`{}_rel`", m.key())]).collect();
            return Err(err(key.span(), format!("unknown gate `{k}` (gates: {})", keys.join(", "))));
        };
        let v = gate_value(value.get_ref(), metric, is_abs).map_err(|m| err(value.span(), format!("`{k}`: {m}")))?;
        let g = gates.entry(metric).or_insert(Gate { metric, abs: None, rel: None });
        if is_abs {
            g.abs = Some(v)
        } else {
            g.rel = Some(v)
        }
        if let (Some(a), Some(r)) = (g.abs, g.rel) {
            if (a < 0.0) != (r < 0.0) {
                return Err(err(
                    value.span(),
                    format!(
                        "`{k}`: `{m}_abs` and `{m}_rel` must both be negative (B must improve) or both >= 0 (a budget for B getting worse)",
                        m = metric.key()
                    ),
                ));
            }
        }
    }
    spec.gates = gates.into_values().collect();
    Ok(spec)
}

/// Why a gate's threshold is not a number of the metric's kind; the sweep
/// file's error adds where it is.
#[derive(Debug, thiserror::Error)]
enum GateValueError {
    #[error("expected a fraction such as -0.5 (= -50 %) or 0.1 (= +10 %)")]
    NotAFraction,
    #[error("{0} would need B below zero: a relative change is at least -1 (-100 %)")]
    BelowMinusOne(f64),
    #[error("expected percentage points of handoffs, e.g. -0.1 or 0.05")]
    NotPoints,
    #[error("{0}")]
    Duration(#[from] schedlab_topology::DurationError),
    #[error("expected a duration such as \"20us\" or \"-50us\" (or integer ns)")]
    NotADuration,
}

/// A gate threshold: a fraction for `_rel`; for `_abs`, percentage points
/// (stall rate) or a signed duration such as `"-50us"` or integer ns.
fn gate_value(v: &Value, metric: Metric, is_abs: bool) -> Result<f64, GateValueError> {
    let number = |v: &Value| match v {
        Value::Float(f) if f.is_finite() => Some(*f),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    };
    let x = if !is_abs {
        let x = number(v).ok_or(GateValueError::NotAFraction)?;
        if x < -1.0 {
            return Err(GateValueError::BelowMinusOne(x));
        }
        x
    } else if metric == Metric::StallRate {
        number(v).ok_or(GateValueError::NotPoints)?
    } else {
        match v {
            Value::String(s) => {
                let (neg, body) = match s.trim().strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, s.trim().strip_prefix('+').unwrap_or(s.trim())),
                };
                let ns = schedlab_topology::parse_duration(body)? as f64;
                if neg {
                    -ns
                } else {
                    ns
                }
            }
            Value::Integer(i) => *i as f64,
            _ => return Err(GateValueError::NotADuration),
        }
    };
    Ok(x)
}
