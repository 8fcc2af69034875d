//! `--plot DIR` end to end: the files a user gets from `schedlab run` and
//! `schedlab sweep`, parsed as XML and checked against the run's own output.

use std::collections::BTreeSet;
use std::path::PathBuf;

use roxmltree::{Document, Node};
use tempfile::TempDir;

mod common;
use common::{ok, schedlab};

/// A directory `name` that does not exist yet (the command makes it), in a
/// fresh temp dir removed when the returned guard drops (also when the test
/// fails).
fn fresh_dir(name: &str) -> (TempDir, PathBuf) {
    let parent = common::tmp_dir(&format!("plot-{name}"));
    let dir = parent.path().join(name);
    (parent, dir)
}

fn with_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants().filter(|n| n.attribute("class").is_some_and(|c| c.split(' ').any(|w| w == class))).collect()
}

fn num<T: std::str::FromStr>(n: Node, name: &str) -> T {
    n.attribute(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} on {n:?}"))
}

/// The curve labels of the CDF panel.
fn curve_labels(svg: &str) -> Vec<String> {
    let doc = Document::parse(svg).expect("handoff-cdf.svg is XML");
    let panel = with_class(&doc, "cdf")[0];
    panel
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|p| p.attribute("data-label").unwrap().into())
        .collect()
}

#[test]
fn run_plots_the_cdf_and_one_occupancy_per_narrated_stall() {
    let (_parent, dir) = fresh_dir("run");
    let d = dir.to_str().unwrap();
    let out = ok(&["run", "scenarios/asym_min.toml", "--duration", "2s", "--seed", "3", "--stalls", "3", "--plot", d]);
    assert!(out.contains("4 SVG files (handoff-cdf.svg, 3 stall plots)"), "{out}");
    let names: BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    let expect: BTreeSet<String> =
        ["handoff-cdf.svg", "stall-1.svg", "stall-2.svg", "stall-3.svg"].iter().map(|s| s.to_string()).collect();
    assert_eq!(names, expect, "--stalls 3 gives three stall plots");

    let cdf = std::fs::read_to_string(dir.join("handoff-cdf.svg")).unwrap();
    assert_eq!(curve_labels(&cdf), ["worker"], "one curve for the wakee group (the waker gets no handoffs)");

    for k in 1..=3 {
        let svg = std::fs::read_to_string(dir.join(format!("stall-{k}.svg"))).unwrap();
        let doc = Document::parse(&svg).unwrap_or_else(|e| panic!("stall-{k}.svg: {e}"));
        let cpus: Vec<u32> = with_class(&doc, "lane").iter().map(|l| num(*l, "data-cpu")).collect();
        // The workers' CPUs 4-7 and the waker's CPU 2, each once.
        for cpu in [2, 4, 5, 6, 7] {
            assert_eq!(cpus.iter().filter(|&&c| c == cpu).count(), 1, "stall-{k}: lanes {cpus:?}");
        }
        let plot = with_class(&doc, "occupancy")[0];
        let (ws, we): (u64, u64) = (num(plot, "data-window-start-ns"), num(plot, "data-window-end-ns"));
        let signal: u64 = num(with_class(&doc, "signal")[0], "data-ns");
        assert!(ws < signal && signal < we);
        let runs = with_class(&doc, "run");
        assert!(runs.iter().any(|b| b.attribute("data-comm") == Some("waker")), "the waker spins throughout");
        for b in runs {
            let (s, e): (u64, u64) = (num(b, "data-start-ns"), num(b, "data-end-ns"));
            assert!(ws <= s && s < e && e <= we, "stall-{k}: bar {s}..{e} outside {ws}..{we}");
        }
        assert_eq!(with_class(&doc, "switch-in").len(), 1, "stall-{k}: the wakee's switch-in is marked");
    }
}

#[test]
fn sweep_plots_one_curve_per_setting() {
    let (_parent, dir) = fresh_dir("sweep");
    let d = dir.to_str().unwrap();
    let args = ["sweep", "scenarios/sweeps/itmt-delay-dequeue-patches.toml", "--rounds", "1", "--duration", "300ms"];
    let json: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &["--json", "--plot", d]].concat())).unwrap();
    let settings: Vec<String> =
        json["settings"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_string()).collect();
    assert!(settings.len() >= 2);
    let cdf = std::fs::read_to_string(dir.join("handoff-cdf.svg")).unwrap();
    assert_eq!(curve_labels(&cdf), settings);
}

#[test]
fn sweep_refuses_plot_with_merge() {
    let out = schedlab(&["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--merge", "x", "--plot", "y"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--plot"), "{}", String::from_utf8_lossy(&out.stderr));
}
