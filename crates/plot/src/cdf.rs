//! Handoff latency CDFs: one curve per setting (a sweep) or per wakee thread
//! group (a run), on a log-scale µs axis with the stall threshold marked.
//!
//! Two panels share the x axis. The left one is what was asked for: the
//! fraction of handoffs ≤ x. Stalls are usually well under 1 % of the
//! handoffs, which on a linear y axis is a few pixels under the top edge, so
//! the right panel plots the tail, the fraction > x, on a log y axis, where
//! "3331 of 292274 at or above 500 µs" and "0 of 295558" look different.
//!
//! Curves are step functions drawn at pixel resolution: within one pixel
//! column only the column's entry and exit heights are kept, so a curve has
//! at most two points per column however many samples it pools.

use std::fmt::Write;

use schedlab_analysis::percentile;

use crate::svg::{escape, num, Doc, PALETTE};

/// One curve: a label and its latencies in ns, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Curve {
    pub label: String,
    pub samples: Vec<u64>,
}

const PANEL_W: f64 = 420.0;
const PANEL_H: f64 = 300.0;
const LEFT: f64 = 70.0;
const GAP: f64 = 90.0;
const TOP: f64 = 56.0;
const LEGEND_ROW: f64 = 18.0;

/// Log-scale x axis in µs, whole decades.
struct LogX {
    lo: f64,
    hi: f64,
    x0: f64,
}

impl LogX {
    /// Decades around every sample and the threshold.
    fn covering(curves: &[Curve], threshold_ns: u64) -> LogX {
        let us = |ns: u64| ns as f64 / 1000.0;
        let min = curves.iter().filter_map(|c| c.samples.first()).map(|&s| us(s)).fold(f64::INFINITY, f64::min);
        let max = curves.iter().filter_map(|c| c.samples.last()).map(|&s| us(s)).fold(us(threshold_ns), f64::max);
        let min = if min.is_finite() { min.min(us(threshold_ns)) } else { 1.0 };
        let lo = 10f64.powf(min.max(0.1).log10().floor());
        let hi = 10f64.powf(max.max(lo * 10.0).log10().ceil());
        let hi = if hi <= max { hi * 10.0 } else { hi };
        LogX { lo, hi, x0: 0.0 }
    }

    fn at(&self, x0: f64) -> LogX {
        LogX { lo: self.lo, hi: self.hi, x0 }
    }

    /// Pixel x of `ns` (clamped to the axis).
    fn px(&self, ns: u64) -> f64 {
        let us = (ns as f64 / 1000.0).clamp(self.lo, self.hi);
        self.x0 + PANEL_W * (us / self.lo).log10() / (self.hi / self.lo).log10()
    }

    fn decades(&self) -> Vec<f64> {
        let n = (self.hi / self.lo).log10().round() as i32;
        (0..=n).map(|k| self.lo * 10f64.powi(k)).collect()
    }
}

/// How a panel maps a fraction to a pixel y.
#[derive(Clone, Copy)]
enum YScale {
    /// Fraction ≤ x, 0 at the bottom, 1 at the top.
    Cdf,
    /// Fraction > x on a log axis from 1 down to `10^-decades` (0 is drawn
    /// at the bottom edge).
    Tail { decades: i32 },
}

impl YScale {
    fn py(&self, fraction: f64) -> f64 {
        let bottom = TOP + PANEL_H;
        match *self {
            YScale::Cdf => bottom - PANEL_H * fraction,
            YScale::Tail { decades } => {
                let floor = 10f64.powi(-decades);
                if fraction <= floor {
                    return bottom;
                }
                TOP + PANEL_H * (-fraction.log10()) / decades as f64
            }
        }
    }

    /// What is plotted for `below` of `n` samples ≤ x.
    fn fraction(&self, below: usize, n: usize) -> f64 {
        match self {
            YScale::Cdf => below as f64 / n as f64,
            YScale::Tail { .. } => (n - below) as f64 / n as f64,
        }
    }
}

/// The step function of `samples` (ascending) as polyline points, at most
/// two per pixel column: x never decreases, and in fraction terms y never
/// decreases (CDF) or never increases (tail).
fn step_points(samples: &[u64], x: &LogX, y: YScale) -> Vec<(f64, f64)> {
    let n = samples.len();
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    let mut col = f64::NAN;
    while i < n {
        let v = samples[i];
        let j = i + samples[i..].partition_point(|&s| s == v);
        let px = (x.px(v) * 2.0).round() / 2.0;
        let (before, after) = (y.py(y.fraction(i, n)), y.py(y.fraction(j, n)));
        if px == col {
            pts.last_mut().expect("a column has points").1 = after;
        } else {
            pts.push((px, before));
            pts.push((px, after));
            col = px;
        }
        i = j;
    }
    pts
}

/// A handoff-latency CDF of `curves` (each ascending, in ns) as an SVG
/// document: `title` on top, the threshold as a vertical line, a legend with
/// each curve's count, median, p99 and stalls.
pub fn handoff_cdf_svg(title: &str, curves: &[Curve], threshold_ns: u64) -> String {
    let width = LEFT + 2.0 * PANEL_W + GAP + 40.0;
    let legend_top = TOP + PANEL_H + 56.0;
    let height = legend_top + LEGEND_ROW * curves.len().max(1) as f64 + 16.0;
    let mut doc = Doc::new(width, height);
    doc.text(LEFT, 22.0, "start", r#"class="title""#, title);
    doc.text(
        LEFT,
        40.0,
        "start",
        r#"class="note""#,
        &format!(
            "handoff: the waker's signal to the wakee's wait returning; stall threshold {} µs (red line)",
            num(threshold_ns as f64 / 1000.0)
        ),
    );

    let x = LogX::covering(curves, threshold_ns);
    let max_n = curves.iter().map(|c| c.samples.len()).max().unwrap_or(1).max(10);
    let tail_decades = (max_n as f64).log10().ceil() as i32;
    let panels = [
        (LEFT, YScale::Cdf, "cdf", "fraction of handoffs ≤ x"),
        (LEFT + PANEL_W + GAP, YScale::Tail { decades: tail_decades }, "tail", "fraction of handoffs > x (log)"),
    ];
    for (x0, scale, class, ylabel) in panels {
        let x = x.at(x0);
        let mut g = String::new();
        let _ = write!(
            g,
            r#"<g class="panel {class}" data-lo-us="{}" data-hi-us="{}" data-top="{}" data-bottom="{}" data-left="{}" data-right="{}">"#,
            x.lo,
            x.hi,
            num(TOP),
            num(TOP + PANEL_H),
            num(x0),
            num(x0 + PANEL_W)
        );
        doc.raw(&g);
        axes(&mut doc, &x, scale, ylabel);
        let tx = x.px(threshold_ns);
        doc.line(
            tx,
            TOP,
            tx,
            TOP + PANEL_H,
            &format!(
                r##"class="threshold" data-ns="{threshold_ns}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3""##
            ),
        );
        for (i, c) in curves.iter().enumerate() {
            if c.samples.is_empty() {
                continue;
            }
            let pts: Vec<String> =
                step_points(&c.samples, &x, scale).iter().map(|(a, b)| format!("{},{}", num(*a), num(*b))).collect();
            doc.raw(&format!(
                r#"<polyline class="curve" data-label="{}" data-n="{}" fill="none" stroke="{}" stroke-width="1.6" points="{}"/>"#,
                escape(&c.label),
                c.samples.len(),
                PALETTE[i % PALETTE.len()],
                pts.join(" ")
            ));
        }
        doc.raw("</g>");
    }
    legend(&mut doc, curves, threshold_ns, legend_top);
    doc.finish()
}

/// Frame, gridlines, tick labels and axis titles of one panel.
fn axes(doc: &mut Doc, x: &LogX, y: YScale, ylabel: &str) {
    let (x0, x1, bottom) = (x.x0, x.x0 + PANEL_W, TOP + PANEL_H);
    for d in x.decades() {
        let px = x.px((d * 1000.0).round() as u64);
        doc.line(px, TOP, px, bottom, r#"class="grid""#);
        doc.text(px, bottom + 15.0, "middle", "", &num(d));
        if d < x.hi {
            for m in 2..10 {
                let pm = x.px((d * m as f64 * 1000.0).round() as u64);
                doc.line(pm, TOP, pm, bottom, r#"class="grid-minor""#);
            }
        }
    }
    let yticks: Vec<(f64, String)> = match y {
        YScale::Cdf => (0..=10).map(|k| (k as f64 / 10.0, num(k as f64 / 10.0))).collect(),
        YScale::Tail { decades } => {
            (0..=decades).map(|k| (10f64.powi(-k), if k == 0 { "1".to_string() } else { format!("1e-{k}") })).collect()
        }
    };
    for (f, label) in yticks {
        let py = y.py(f);
        doc.line(x0, py, x1, py, r#"class="grid""#);
        doc.text(x0 - 6.0, py + 4.0, "end", "", &label);
    }
    doc.rect(x0, TOP, PANEL_W, PANEL_H, r#"class="axis" fill="none""#);
    doc.text((x0 + x1) / 2.0, bottom + 32.0, "middle", "", "handoff latency x (µs, log scale)");
    doc.text(
        x0 - 48.0,
        TOP + PANEL_H / 2.0,
        "middle",
        &format!(r#"transform="rotate(-90 {} {})""#, num(x0 - 48.0), num(TOP + PANEL_H / 2.0)),
        ylabel,
    );
}

/// One row per curve: colour, label, and its numbers.
fn legend(doc: &mut Doc, curves: &[Curve], threshold_ns: u64, top: f64) {
    let us = |ns: Option<u64>| ns.map_or("-".to_string(), |v| format!("{} µs", num(v as f64 / 1000.0)));
    for (i, c) in curves.iter().enumerate() {
        let y = top + LEGEND_ROW * i as f64;
        let color = PALETTE[i % PALETTE.len()];
        doc.raw(&format!(r#"<g class="legend-entry" data-label="{}">"#, escape(&c.label)));
        doc.line(LEFT, y - 4.0, LEFT + 24.0, y - 4.0, &format!(r#"stroke="{color}" stroke-width="3""#));
        let s = &c.samples;
        let stalls = s.len() - s.partition_point(|&v| v < threshold_ns);
        let stats = if s.is_empty() {
            "no handoffs".to_string()
        } else {
            format!(
                "{} handoffs, median {}, p99 {}, max {}, {} stalls",
                s.len(),
                us(percentile(s, 500)),
                us(percentile(s, 990)),
                us(s.last().copied()),
                stalls
            )
        };
        doc.text(LEFT + 32.0, y, "start", "", &format!("{}  —  {stats}", c.label));
        doc.raw("</g>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_merge_within_a_pixel_column_and_reach_the_top() {
        let x = LogX { lo: 1.0, hi: 1000.0, x0: 0.0 };
        // 1000 samples at 1..=1000 ns all fall in the first column (clamped
        // to 1 µs); one more at 100 µs.
        let mut s: Vec<u64> = (1..=1000).collect();
        s.push(100_000);
        let pts = step_points(&s, &x, YScale::Cdf);
        assert_eq!(pts.len(), 4, "{pts:?}");
        assert_eq!(pts[0], (0.0, TOP + PANEL_H));
        assert_eq!(pts[3], (PANEL_W * 2.0 / 3.0, TOP));
        let tail = step_points(&s, &x, YScale::Tail { decades: 4 });
        // After the last sample nothing is above x: the bottom edge.
        assert_eq!(tail.last().unwrap().1, TOP + PANEL_H);
    }

    #[test]
    fn the_axis_covers_samples_and_threshold_in_whole_decades() {
        let c = Curve { label: "a".into(), samples: vec![4_000, 30_000] };
        let x = LogX::covering(&[c], 500_000);
        assert_eq!((x.lo, x.hi), (1.0, 1000.0));
        let x = LogX::covering(&[], 1_000_000);
        assert_eq!((x.lo, x.hi), (1.0, 10000.0));
    }
}
