//! The hunt's report as text to paste into a mail.

use std::fmt::Write as _;

use crate::{HuntOptions, HuntReport, Side};

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Render `r`; `opts` says what was hunted.
pub fn render_text(opts: &HuntOptions, r: &HuntReport) -> String {
    let mut s = String::new();
    let topos: Vec<&str> = opts.topologies.iter().map(|(n, _)| n.as_str()).collect();
    let list = |f: &[String]| if f.is_empty() { "the profile's defaults".to_string() } else { f.join(",") };
    let _ = writeln!(
        s,
        "hunt seed {}: {} cases of {} ms on {} (kernel {}, features: {}){}",
        r.seed,
        r.cases_run,
        opts.duration_ns / 1_000_000,
        topos.join(", "),
        opts.kernel,
        list(&opts.features),
        opts.against.as_ref().map_or(String::new(), |a| format!(", against features: {}", list(a)))
    );
    let families: Vec<&str> = opts.classes.iter().map(|c| c.name()).collect();
    let _ = writeln!(
        s,
        "looked for: {} (idle >= {}, rt >= {}, starvation >= {}); the model's invariants checked after every step \
         (a failure is reported whatever --find says)",
        families.join(", "),
        ms(opts.thresholds.idle_ns),
        ms(opts.thresholds.rt_ns),
        ms(opts.thresholds.starvation_ns)
    );
    if r.refused > 0 {
        let _ = writeln!(
            s,
            "{} generated cases the model refused (a generator bug), the first: {}",
            r.refused,
            r.first_refusal.as_deref().unwrap_or("")
        );
    }
    if r.class_counts.is_empty() {
        let _ = writeln!(s, "\nnothing found");
    } else {
        let _ = writeln!(
            s,
            "\ncases showing each class{}:",
            if opts.against.is_some() { " (main set; under both)" } else { "" }
        );
        for (c, n) in &r.class_counts {
            let both = r.both.get(c).map_or(String::new(), |b| format!("  ({b} under both)"));
            let _ = writeln!(s, "  {:<22} {n}{both}", c.name());
        }
    }
    for (k, rep) in r.reports.iter().enumerate() {
        let f = &rep.finding;
        let _ = writeln!(s, "\n== finding {}: {} (case {})", k + 1, rep.class.name(), rep.case_index);
        let _ = writeln!(s, "{}", rep.class.describe());
        match rep.side {
            Side::Only => {}
            Side::MainOnly => {
                let _ = writeln!(s, "differential: {} removes it", list(opts.against.as_deref().unwrap_or(&[])));
            }
            Side::AgainstOnly => {
                let _ = writeln!(
                    s,
                    "differential: only with {}; {} does not show it",
                    list(opts.against.as_deref().unwrap_or(&[])),
                    list(&opts.features)
                );
            }
        }
        let _ = writeln!(
            s,
            "shrunk from {} threads / {} operations to {} / {} ({} simulations)",
            rep.original_size.0, rep.original_size.1, rep.shrunk_size.0, rep.shrunk_size.1, rep.shrink_runs
        );
        if f.class == crate::check::Class::FairnessSpread {
            let _ = writeln!(s, "{}, from {:.6} s", f.message, f.start_ns as f64 / 1e9);
        } else if f.pid != 0 {
            let behind = rep.behind.as_ref().map_or(String::new(), |b| format!(" behind {b}"));
            let other = match (f.other_cpu, &rep.other) {
                (Some(c), Some(o)) => format!(" while CPU {c} ran {o}"),
                (Some(c), None) => format!(" while CPU {c} idled"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "{} waited {} on CPU {}{behind}{other}, from {:.6} s",
                rep.thread,
                ms(f.len_ns()),
                f.cpu,
                f.start_ns as f64 / 1e9
            );
        }
        let _ = writeln!(s, "\nwhat the kernel model did:");
        for line in &rep.narrative {
            let _ = writeln!(s, "  {line}");
        }
        let _ = writeln!(s, "\nthe scenario (save it and `schedlab run` it):\n");
        for line in rep.scenario.lines() {
            let _ = writeln!(s, "    {line}");
        }
    }
    s
}

/// `r` as one JSON document.
pub fn render_json(r: &HuntReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("the report serialises");
    s.push('\n');
    s
}
