//! The bands a model figure must fall in around the real one, and the
//! verdict of one row. All the numbers are here, in one place.
//!
//! Why these widths: latency p50 within ±50 %, p99 within 3x and
//! throughput within 5 % are issue 14's targets for the model; shares
//! within 3 points and the stall-fraction rule are this suite's, sized
//! below. They are tight enough that a model off by a mechanism fails — a
//! fixed IPI plus idle exit charged where the host's wakeup costs a few
//! microseconds (pingpong-2cpu's handoff p50: model 18.5 us, real 7 us), a
//! tail microseconds long where the host's is a hundred or more
//! (cyclictest's p99).
//!
//! They are not wider than the real kernel's own spread on a quiet
//! machine, but they are on a busy one: three rounds on this project's
//! 2-vCPU guest while another build used about one CPU (measured
//! 2026-12-01) gave schbench 3378-4164 requests/s and wakeup p99
//! 715-2804 us, pingpong-2cpu 19.7k-33.0k loops/s, and the nice share
//! 75.11-75.32 %. So on a busy host a rate row can fail from the host's
//! noise alone: the report prints the other work next to the table; use
//! `--rounds` on a quiet machine, and read the per-round figures (`--json`).

pub use schedlab_report::Verdict;
use schedlab_report::{Figure, NoFigure};

/// Which band a metric is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// A latency median: ratio model/real in [`P50_RATIO`].
    LatencyP50,
    /// A latency tail: ratio model/real in [`P99_RATIO`].
    LatencyP99,
    /// A throughput or rate: ratio in [`RATE_RATIO`].
    Rate,
    /// A share in percent: within [`SHARE_POINTS`] percentage points.
    Share,
    /// A fraction in percent that is normally near zero: both below
    /// [`STALL_FLOOR_PCT`], or the ratio in [`STALL_RATIO`].
    StallFraction,
    /// Where a placement or balancing rule puts a thread, in percent:
    /// within [`PLACEMENT_POINTS`] percentage points.
    Placement,
}

/// Latency p50: within ±50 % (issue 14's target for wakeup latency p50).
pub const P50_RATIO: (f64, f64) = (0.5, 1.5);
/// Latency p99: within 3x either way (issue 14's target for p99).
pub const P99_RATIO: (f64, f64) = (1.0 / 3.0, 3.0);
/// Throughput and rates: within 5 % (issue 14's target for throughput).
pub const RATE_RATIO: (f64, f64) = (0.95, 1.05);
/// Shares: within 3 percentage points. Three real 2 s runs of the nice
/// case spread over 0.2 points (measured, above); a model with the weight
/// of a neighbouring nice level (nice 4's 423 for nice 5's 335) moves the
/// nice-0 share by 4.6 points, out of the band.
pub const SHARE_POINTS: f64 = 3.0;
/// Stall fraction: below 1 % on both sides counts as agreement whatever the
/// ratio (a few stalls in a few thousand handoffs is noise); otherwise the
/// ratio must be within 3x, as for a tail.
pub const STALL_FLOOR_PCT: f64 = 1.0;
pub const STALL_RATIO: (f64, f64) = (1.0 / 3.0, 3.0);
/// Placement: within 10 percentage points. A placement rule either holds
/// or it does not: mainline's `select_idle_sibling()` puts the placement
/// case's wakee on its idle previous CPU every time, a kernel that packs
/// wakees onto the waker's CPU nearly never (this project's 2-vCPU PVM
/// guest: 97.5-99.8 % on the waker's CPU in quiet runs, 77 % in one with
/// 13 % steal, 2026-12-02), a difference of ~80-100 points. 10 leaves
/// room for wakeups that found the idle CPU taken by a kernel thread. The
/// rt-squeeze case's balancing rule is as binary: the fair thread ends on
/// CPU 1 (0 %) or stays on CPU 0 (100 %).
pub const PLACEMENT_POINTS: f64 = 10.0;

/// Every band, in the order the table header lists them.
pub const ALL: [Band; 6] =
    [Band::LatencyP50, Band::LatencyP99, Band::Rate, Band::Share, Band::StallFraction, Band::Placement];

/// The bands as `--help` and the table header state them, one line each.
pub fn bands_help() -> String {
    let mut s = String::from("bands (ratio = model / real):\n");
    for b in ALL {
        s.push_str(&format!("  {:<15} {}\n", b.name(), b.describe()));
    }
    s.push_str(
        "a row is n/a (with the reason) when a side's capture is inconsistent or has too few samples for its figure\n",
    );
    s
}

fn within((lo, hi): (f64, f64), x: f64) -> bool {
    // A hair of slack so that a ratio printed as the band's edge is in it.
    (lo - 1e-9..=hi + 1e-9).contains(&x)
}

fn ratio_text((lo, hi): (f64, f64)) -> String {
    let f = |x: f64| if (x - 1.0 / 3.0).abs() < 1e-12 { "1/3".to_string() } else { format!("{x}") };
    format!("ratio {}-{}", f(lo), f(hi))
}

impl Band {
    /// The name the header uses.
    pub fn name(self) -> &'static str {
        match self {
            Band::LatencyP50 => "latency p50",
            Band::LatencyP99 => "latency p99",
            Band::Rate => "rate",
            Band::Share => "share",
            Band::StallFraction => "stall fraction",
            Band::Placement => "placement",
        }
    }

    /// The band in a few words, as a row's `band` column shows it.
    pub fn describe(self) -> String {
        match self {
            Band::LatencyP50 => ratio_text(P50_RATIO),
            Band::LatencyP99 => ratio_text(P99_RATIO),
            Band::Rate => ratio_text(RATE_RATIO),
            Band::Share | Band::Placement => format!("±{} points", self.points()),
            Band::StallFraction => format!("both <{STALL_FLOOR_PCT} % or {}", ratio_text(STALL_RATIO)),
        }
    }

    /// The width of a band judged in percentage points (0 for the others).
    fn points(self) -> f64 {
        match self {
            Band::Share => SHARE_POINTS,
            Band::Placement => PLACEMENT_POINTS,
            _ => 0.0,
        }
    }

    /// The smallest real figure a ratio band can judge when the figure is
    /// measured in steps of `resolution` (the real trace's timestamps are
    /// whole microseconds): below it the rounding alone could move the
    /// ratio across the band's lower edge. `None` for bands not judged by
    /// ratio of a latency.
    pub fn min_resolved(self, resolution: f64) -> Option<f64> {
        let lo = match self {
            Band::LatencyP50 => P50_RATIO.0,
            Band::LatencyP99 => P99_RATIO.0,
            _ => return None,
        };
        Some(resolution / (1.0 - lo))
    }

    /// Judge a model figure against a real one: the ratio model/real (when
    /// the real one is not zero) and the verdict. Either figure missing
    /// gives n/a with the side's reason.
    pub fn judge(self, real: &Figure, model: &Figure) -> (Option<f64>, Verdict) {
        let (r, m) = match (real, model) {
            (Ok(r), Ok(m)) => (*r, *m),
            (Err(r), Err(m)) => return (None, Verdict::NotApplicable(format!("real: {r}; model: {m}"))),
            (Err(why), _) => return (None, Verdict::NotApplicable(format!("real: {why}"))),
            (_, Err(why)) => return (None, Verdict::NotApplicable(format!("model: {why}"))),
        };
        let ratio = (r > 0.0).then(|| m / r);
        let pass = match self {
            Band::Share | Band::Placement => (m - r).abs() <= self.points() + 1e-9,
            Band::StallFraction => {
                if r < STALL_FLOOR_PCT && m < STALL_FLOOR_PCT {
                    true
                } else {
                    ratio.is_some_and(|x| within(STALL_RATIO, x))
                }
            }
            Band::LatencyP50 | Band::LatencyP99 | Band::Rate => {
                let Some(x) = ratio else {
                    return (None, Verdict::NotApplicable("real figure is 0: no ratio".into()));
                };
                within(
                    match self {
                        Band::LatencyP50 => P50_RATIO,
                        Band::LatencyP99 => P99_RATIO,
                        _ => RATE_RATIO,
                    },
                    x,
                )
            }
        };
        (ratio, if pass { Verdict::Pass } else { Verdict::Fail })
    }
}

impl Band {
    /// The verdict of a row that failed against the real median, looked at
    /// again with the rounds: when the real rounds spread wider than the
    /// band itself (so the real figure is not known to the band's width)
    /// and the model is in the band against some figure within the rounds'
    /// range, the row
    /// is `Unsteady`, not `Fail`. `None` when it stays a failure. Only the
    /// ratio bands and the share can be unsteady; one round cannot.
    pub fn unsteady(self, real_rounds: &[Figure], model: f64) -> Option<Verdict> {
        let real: Vec<f64> = real_rounds.iter().map(|r| r.as_ref().ok().copied()).collect::<Option<_>>()?;
        if real.len() < 2 {
            return None;
        }
        let (min, max) = real.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        // Wider: no single real figure has every round within the band of
        // it. In reach: some figure between the lowest and the highest
        // round has the model within the band.
        let (wider, in_reach) = match self {
            Band::LatencyP50 | Band::LatencyP99 | Band::Rate => {
                let (lo, hi) = match self {
                    Band::LatencyP50 => P50_RATIO,
                    Band::LatencyP99 => P99_RATIO,
                    _ => RATE_RATIO,
                };
                (max * lo > min * hi, model >= min * lo && model <= max * hi)
            }
            Band::Share | Band::Placement => {
                let p = self.points();
                (max - min > 2.0 * p, model >= min - p && model <= max + p)
            }
            Band::StallFraction => (false, false),
        };
        (wider && in_reach && min > 0.0).then(|| {
            Verdict::Unsteady(format!(
                "the {} real rounds spread {}-{} ({:.2}x), wider than the band; rerun on a quieter machine",
                real.len(),
                short(min),
                short(max),
                max / min
            ))
        })
    }
}

fn short(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The median of per-round figures (the mean of the middle two for an even
/// count). Any round without a figure makes the whole row's side n/a: a
/// median of the rounds that happened to work would hide why the others
/// did not.
pub fn median_of_rounds(rounds: &[Figure]) -> Figure {
    let mut v = Vec::with_capacity(rounds.len());
    for (i, r) in rounds.iter().enumerate() {
        match r {
            Ok(x) => v.push(*x),
            Err(why) if rounds.len() > 1 => return Err(NoFigure::from(format!("round {}: {why}", i + 1))),
            Err(why) => return Err(why.clone()),
        }
    }
    if v.is_empty() {
        return Err(NoFigure::from("no rounds"));
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Ok(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(x: f64) -> Figure {
        Ok(x)
    }

    #[test]
    fn ratio_bands_include_their_edges_and_nothing_beyond() {
        let j = |b: Band, r, m| b.judge(&ok(r), &ok(m)).1;
        assert_eq!(j(Band::LatencyP50, 10.0, 15.0), Verdict::Pass);
        assert_eq!(j(Band::LatencyP50, 10.0, 5.0), Verdict::Pass);
        assert_eq!(j(Band::LatencyP50, 10.0, 15.1), Verdict::Fail);
        assert_eq!(j(Band::LatencyP50, 10.0, 4.9), Verdict::Fail);
        assert_eq!(j(Band::LatencyP99, 30.0, 90.0), Verdict::Pass);
        assert_eq!(j(Band::LatencyP99, 30.0, 10.0), Verdict::Pass);
        assert_eq!(j(Band::LatencyP99, 30.0, 9.0), Verdict::Fail);
        assert_eq!(j(Band::LatencyP99, 30.0, 91.0), Verdict::Fail);
        assert_eq!(j(Band::Rate, 1000.0, 1049.0), Verdict::Pass);
        assert_eq!(j(Band::Rate, 1000.0, 951.0), Verdict::Pass);
        assert_eq!(j(Band::Rate, 1000.0, 1060.0), Verdict::Fail);
        assert_eq!(j(Band::Rate, 1000.0, 940.0), Verdict::Fail);
        let (ratio, _) = Band::Rate.judge(&ok(200.0), &ok(300.0));
        assert_eq!(ratio, Some(1.5));
    }

    #[test]
    fn shares_are_judged_by_points_not_ratio() {
        let j = |r, m| Band::Share.judge(&ok(r), &ok(m)).1;
        assert_eq!(j(75.3, 78.3), Verdict::Pass);
        assert_eq!(j(75.3, 72.3), Verdict::Pass);
        assert_eq!(j(75.3, 78.4), Verdict::Fail);
        // 3 points of a 10 % share is a ratio of 1.3, still a pass.
        assert_eq!(j(10.0, 13.0), Verdict::Pass);
    }

    #[test]
    fn stall_fractions_agree_when_both_are_rare_or_within_3x() {
        let j = |r, m| Band::StallFraction.judge(&ok(r), &ok(m)).1;
        assert_eq!(j(0.0, 0.9), Verdict::Pass, "both below 1 %");
        assert_eq!(j(0.1, 0.95), Verdict::Pass, "9.5x, but both below 1 %");
        assert_eq!(j(0.0, 1.2), Verdict::Fail, "real none, model 1.2 %: no ratio can pass");
        assert_eq!(j(5.0, 14.0), Verdict::Pass);
        assert_eq!(j(5.0, 16.0), Verdict::Fail);
        assert_eq!(j(30.0, 9.0), Verdict::Fail);
    }

    #[test]
    fn a_missing_figure_or_a_zero_real_latency_is_not_a_verdict() {
        let (ratio, v) = Band::LatencyP50.judge(&Err("12 samples".into()), &ok(3.0));
        assert_eq!((ratio, v), (None, Verdict::NotApplicable("real: 12 samples".into())));
        let (_, v) = Band::Rate.judge(&ok(3.0), &Err("no loop ends".into()));
        assert_eq!(v, Verdict::NotApplicable("model: no loop ends".into()));
        let (_, v) = Band::Rate.judge(&Err("lost events".into()), &Err("no loop ends".into()));
        assert_eq!(v, Verdict::NotApplicable("real: lost events; model: no loop ends".into()));
        let (_, v) = Band::LatencyP99.judge(&ok(0.0), &ok(3.0));
        assert!(matches!(v, Verdict::NotApplicable(ref w) if w.contains("0")), "{v:?}");
    }

    #[test]
    fn the_resolution_floor_follows_the_band_lower_edge() {
        // A 1 us step under a ±50 % band: 2 us is the least a p50 can be.
        assert_eq!(Band::LatencyP50.min_resolved(1.0), Some(2.0));
        assert!((Band::LatencyP99.min_resolved(1.0).unwrap() - 1.5).abs() < 1e-9);
        assert_eq!(Band::Rate.min_resolved(1.0), None);
    }

    #[test]
    fn rounds_give_their_median_and_one_missing_round_makes_it_n_a() {
        assert_eq!(median_of_rounds(&[ok(3.0), ok(1.0), ok(2.0)]), Ok(2.0));
        assert_eq!(median_of_rounds(&[ok(4.0), ok(1.0), ok(2.0), ok(3.0)]), Ok(2.5));
        assert_eq!(median_of_rounds(&[ok(4.0), Err("lost events".into())]), Err("round 2: lost events".into()));
        assert_eq!(median_of_rounds(&[Err("lost events".into())]), Err("lost events".into()));
    }

    #[test]
    fn the_help_text_states_every_band_as_the_rows_do() {
        let help = bands_help();
        assert!(help.contains("latency p50     ratio 0.5-1.5\n"), "{help}");
        assert!(help.contains("latency p99     ratio 1/3-3\n"), "{help}");
        assert!(help.contains("rate            ratio 0.95-1.05\n"), "{help}");
        assert!(help.contains("share           ±3 points\n"), "{help}");
        assert!(help.contains("stall fraction  both <1 % or ratio 1/3-3\n"), "{help}");
    }
}
