//! `schedlab diff`: one scenario and seed under two settings, and the first
//! scheduler step where the two runs part ways.
//!
//! The model is deterministic, so everything before that step is shared and
//! everything after it follows from it. The comparison itself is
//! `schedlab_analysis::diff_traces`; this file resolves the two settings,
//! runs the simulator twice and prints.

use clap::Args;
use schedlab_analysis::{
    analyze, diff_traces, drift_rows, measure, render_divergence, render_drift, render_measures, AnalysisOptions,
    DiffOptions, RunMetrics, DEFAULT_DIFF_AFTER, DEFAULT_DIFF_CONTEXT,
};
use schedlab_kernel::Profile;
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sim::{kernel_settings, simulate, SimOptions, SimResult, FIRST_PID};
use schedlab_topology::parse_duration;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::report::fmt_secs;

#[derive(Args)]
pub struct DiffArgs {
    /// Scenario file (TOML), e.g. scenarios/asym_min.toml.
    pub scenario: PathBuf,
    /// Setting A: sched_features in debugfs syntax, comma-separated, plus optional
    /// `itmt=0|1` and `kernel=NAME` entries, e.g. `NO_DELAY_DEQUEUE,itmt=0`.
    /// Empty (the default): the scenario's own settings.
    #[arg(long = "a", value_name = "SETTING", default_value = "")]
    pub a: String,
    /// Setting B, in the syntax of --a.
    #[arg(long = "b", value_name = "SETTING", default_value = "")]
    pub b: String,
    /// Seed for both runs (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulated duration of both runs, e.g. 1s, 200ms (overrides the file's `duration`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
    /// Common events to print before the divergence.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DIFF_CONTEXT)]
    pub context: usize,
    /// Events of each run to print from the divergence on.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DIFF_AFTER)]
    pub after: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One side's setting as typed, split into its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Setting {
    text: String,
    features: Vec<String>,
    itmt: Option<bool>,
    kernel: Option<String>,
}

/// Split `text` (the value of `--a`/`--b`) into features, `itmt=` and `kernel=`.
fn parse_setting(flag: &str, text: &str) -> Result<Setting, String> {
    let mut s = Setting { text: text.to_string(), ..Setting::default() };
    for item in text.split([',', ' ']).map(str::trim).filter(|i| !i.is_empty() && *i != "defaults") {
        match item.split_once('=') {
            Some(("itmt" | "sched_itmt_enabled", v)) => {
                let on = match v {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("{flag} {text}: `{item}`: expected itmt=0 or itmt=1")),
                };
                if s.itmt.replace(on).is_some() {
                    return Err(format!("{flag} {text}: itmt is given twice"));
                }
            }
            Some(("kernel", k)) => {
                if Profile::by_name(k).is_none() {
                    return Err(format!(
                        "{flag} {text}: unknown kernel profile `{k}` (expected one of: {})",
                        Profile::NAMES.join(", ")
                    ));
                }
                if s.kernel.replace(k.to_string()).is_some() {
                    return Err(format!("{flag} {text}: kernel is given twice"));
                }
            }
            Some((key, _)) => {
                return Err(format!(
                    "{flag} {text}: unknown setting `{key}=` (expected sched_features, itmt=0|1 or kernel=NAME)"
                ))
            }
            None => s.features.push(item.to_string()),
        }
    }
    Ok(s)
}

/// A setting applied: the scenario and options to simulate, and how it resolved.
struct Resolved {
    /// The setting as typed.
    text: String,
    scenario: Scenario,
    opts: SimOptions,
    kernel: String,
    itmt: bool,
    features_changed: Vec<String>,
}

fn resolve(flag: &str, base: &Scenario, s: &Setting, args: &DiffArgs) -> Result<Resolved, String> {
    let mut scenario = base.clone();
    if let Some(k) = &s.kernel {
        scenario.kernel_profile = Spanned { value: k.clone(), line: 0, col: 0 };
    }
    let mut topology = scenario.topology.clone();
    if let Some(on) = s.itmt {
        topology.itmt_enabled = on;
    }
    let (profile, features) = kernel_settings(&scenario, &s.features).map_err(|e| {
        let e = e.to_string();
        // The simulator says "--features ITEM: why"; the why names the item.
        let why = e.strip_prefix("--features ").and_then(|rest| rest.split_once(": ")).map_or(e.as_str(), |(_, w)| w);
        format!("{flag} {}: {why}", s.text)
    })?;
    Ok(Resolved {
        text: s.text.clone(),
        kernel: profile.name.to_string(),
        itmt: topology.itmt_enabled,
        features_changed: features.diff_from(&profile.defaults),
        opts: SimOptions {
            seed: args.seed,
            duration_ns: args.duration,
            features: s.features.clone(),
            topology: Some(topology),
            check_invariants: None,
        },
        scenario,
    })
}

fn describe(r: &Resolved) -> String {
    format!(
        "kernel {}, ITMT {}, features: {}",
        r.kernel,
        if r.itmt { "on" } else { "off" },
        if r.features_changed.is_empty() { "defaults".to_string() } else { r.features_changed.join(" ") }
    )
}

/// Write the report to stdout; a closed pipe (`| head`) is not an error.
/// main.rs restores SIGPIPE's default action, which ends the process at such
/// a write, but a parent can hand SIGPIPE down blocked (the signal mask
/// survives exec): then the write returns EPIPE and lands here.
fn emit(out: &str) -> Result<(), String> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("cannot write the report: {e}")),
        _ => Ok(()),
    }
}

/// Stalls and handoffs summed over the workload threads.
fn stall_totals(m: &RunMetrics, keep: &dyn Fn(i32) -> bool) -> (u64, u64) {
    m.tasks
        .iter()
        .filter(|t| keep(t.pid))
        .fold((0, 0), |(s, h), t| (s + t.handoff_latency.at_or_above_threshold, h + t.handoff_latency.count))
}

pub fn diff(args: DiffArgs) -> Result<(), String> {
    let sa = parse_setting("--a", &args.a)?;
    let sb = parse_setting("--b", &args.b)?;
    let base = Scenario::load(&args.scenario).map_err(|e| e.to_string())?;
    let ra = resolve("--a", &base, &sa, &args)?;
    let rb = resolve("--b", &base, &sb, &args)?;
    let same_setting = ra.kernel == rb.kernel && ra.itmt == rb.itmt && ra.features_changed == rb.features_changed;

    let run = |r: &Resolved, flag: &str| -> Result<SimResult, String> {
        simulate(&r.scenario, &r.opts).map_err(|e| format!("{flag} {}: {e}", r.text))
    };
    let (res_a, res_b) = (run(&ra, "--a")?, run(&rb, "--b")?);
    let divergence = diff_traces(&res_a.trace, &res_b.trace, &DiffOptions { context: args.context, after: args.after });

    let threshold = base.stall_threshold_ns;
    let metrics =
        |r: &SimResult| analyze(&r.trace, &AnalysisOptions { stall_threshold_ns: threshold, end_ts: Some(r.end_ns) });
    let (ma, mb) = (metrics(&res_a), metrics(&res_b));
    // The scenario's own threads (pids are handed out in thread order).
    let nr_threads = base.threads.len() as i32;
    let workload = move |pid: i32| (FIRST_PID..FIRST_PID + nr_threads).contains(&pid);
    let rows = drift_rows(&ma, &mb, |t| workload(t.pid));
    let (stalls_a, stalls_b) = (stall_totals(&ma, &workload), stall_totals(&mb, &workload));
    // The scenario's [[measure]] tables (e.g. rt-pi-push's "L resume"), per run.
    let specs = schedlab_sweep::measures::measure_specs(&base);
    let measures_a: Vec<_> = specs.iter().map(|m| measure(&res_a.trace, m, res_a.end_ns)).collect();
    let measures_b: Vec<_> = specs.iter().map(|m| measure(&res_b.trace, m, res_b.end_ns)).collect();

    let mut out = String::new();
    if args.json {
        let side = |r: &Resolved, res: &SimResult, stalls: (u64, u64)| {
            serde_json::json!({
                "setting": r.text,
                "kernel": r.kernel,
                "itmt": r.itmt,
                "features_changed": r.features_changed,
                "simulated_ns": res.end_ns,
                "events": res.trace.events.len(),
            "notes": res.notes,
                "stalls": stalls.0,
                "handoffs": stalls.1,
            })
        };
        let doc = serde_json::json!({
            "scenario": base.name,
            "seed": res_a.seed,
            "stall_threshold_ns": threshold,
            "same_setting": same_setting,
            "a": side(&ra, &res_a, stalls_a),
            "b": side(&rb, &res_b, stalls_b),
            "divergence": divergence,
            "drift": rows,
            "measures": { "a": measures_a, "b": measures_b },
        });
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return emit(&out);
    }

    let _ = writeln!(
        out,
        "scenario  {} ({}), seed {}, {} simulated",
        base.name,
        args.scenario.display(),
        res_a.seed,
        fmt_secs(res_a.end_ns.max(res_b.end_ns))
    );
    let shown = |t: &str| if t.trim().is_empty() { "\"\"".to_string() } else { t.to_string() };
    let _ = writeln!(out, "A         {}: {}", shown(&ra.text), describe(&ra));
    let _ = writeln!(out, "B         {}: {}", shown(&rb.text), describe(&rb));
    for (label, res) in [("A", &res_a), ("B", &res_b)] {
        for note in &res.notes {
            let _ = writeln!(out, "note {label}    {note}");
        }
    }
    if same_setting {
        let _ = writeln!(
            out,
            "note      A and B resolve to the same kernel settings: the runs are identical by construction"
        );
    }
    let _ = writeln!(out);
    let Some(d) = divergence else {
        let _ = writeln!(out,
            "no divergence: both runs emit the same {} events; the setting made no difference for seed {} and {} of simulated time",
            res_a.trace.events.len(),
            res_a.seed,
            fmt_secs(res_a.end_ns)
        );
        return emit(&out);
    };
    out.push_str(&render_divergence(&d));
    let _ = writeln!(out);
    let _ = writeln!(out, "drift: the whole runs side by side (identical up to the divergence)");
    out.push_str(&render_drift(&rows, threshold));
    if !specs.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "measures  (from the scenario's [[measure]] tables)");
        for (label, m) in [("A", &measures_a), ("B", &measures_b)] {
            for line in render_measures(m).lines() {
                let _ = writeln!(out, "  {label}  {line}");
            }
        }
    }
    let _ = writeln!(out);
    if stalls_a.1 + stalls_b.1 > 0 {
        let pct = |(s, h): (u64, u64)| if h == 0 { 0.0 } else { 100.0 * s as f64 / h as f64 };
        let _ = writeln!(
            out,
            "stalls    A: {} of {} handoffs ({:.3} %); B: {} of {} ({:.3} %)",
            stalls_a.0,
            stalls_a.1,
            pct(stalls_a),
            stalls_b.0,
            stalls_b.1,
            pct(stalls_b),
        );
    }
    let _ = writeln!(out, "events    A: {}, B: {}", d.a.total_events, d.b.total_events);
    emit(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_split_into_features_itmt_and_kernel() {
        let s = parse_setting("--a", "NO_DELAY_DEQUEUE, itmt=0,kernel=6.12").unwrap();
        assert_eq!(s.features, vec!["NO_DELAY_DEQUEUE"]);
        assert_eq!((s.itmt, s.kernel.as_deref()), (Some(false), Some("6.12")));
        assert_eq!(parse_setting("--b", "").unwrap().features, Vec::<String>::new());
        assert_eq!(
            parse_setting("--b", "defaults").unwrap(),
            Setting { text: "defaults".into(), ..Setting::default() }
        );
        assert!(parse_setting("--a", "itmt=2").unwrap_err().contains("expected itmt=0 or itmt=1"));
        assert!(parse_setting("--a", "itmt=1,itmt=0").unwrap_err().contains("itmt is given twice"));
        assert!(parse_setting("--a", "kernel=5.4").unwrap_err().contains("unknown kernel profile `5.4`"));
        assert!(parse_setting("--a", "slice=3ms").unwrap_err().contains("unknown setting `slice=`"));
    }
}
