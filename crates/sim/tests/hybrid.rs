//! Intel hybrid parts through the whole simulator: the kernel version and
//! SMT decide the regime (crates/kernel/src/topology/intel_pstate.rs). On
//! the 285K (no SMT) under 6.12 a hog on an E-core is moved to a P-core by
//! misfit balancing once its utilisation no longer fits; under 6.9 the same
//! part runs ITMT and asym packing pulls it at once to the highest-priority
//! idle CPU; on the 13900K (SMT) every profile runs ITMT.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::BalanceKind;
use std::path::Path;

mod common;
use common::{balancer_moves, pid_of};

const MS: u64 = 1_000_000;

fn hog(topology: &str, kernel: &str, cpu: usize) -> SimResult {
    let text = format!(
        "topology = \"{topology}\"\nkernel = \"{kernel}\"\nduration = \"200ms\"\n\
         [[thread]]\nname = \"hog\"\nstart_cpu = {cpu}\nprogram = [ {{ run = \"10s\" }} ]\n"
    );
    let s = Scenario::from_toml_str("inline.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    simulate(&s, &SimOptions { no_noise: true, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"))
}

/// The balancer's moves of the hog.
fn moves(r: &SimResult) -> Vec<(u64, u32, u32, BalanceKind)> {
    balancer_moves(r, pid_of(r, "hog"))
}

/// Where the hog is at the end: the last move's destination.
fn last_cpu(r: &SimResult, start: u32) -> u32 {
    moves(r).last().map_or(start, |m| m.2)
}

#[test]
fn on_the_285k_under_6_12_a_hog_leaves_its_e_core_by_misfit() {
    let r = hog("intel-285k", "6.12", 8);
    let m = moves(&r);
    println!("285k 6.12: {m:?}");
    // One move, by the stopper (misfit forces an active balance), to a
    // P-core (CPUs 0-7), and not before the task stops fitting: util starts
    // at half the E-core's spare capacity, 654/2 = 327, and grows in PELT
    // time, which runs at 654/1024 of real time there; it passes 80 % of
    // 654 (fits_capacity(): 523.2) when 1024 - 697·y^t < 523.2, t = 15.3 ms
    // of PELT time, 23.9 ms of real time. Then the tick sets
    // misfit_task_load and kicks the idle balancer; the balance of the
    // 24-CPU MC domain follows within its interval (24 ms at HZ=1000).
    assert_eq!(m.len(), 1, "{m:?}");
    let (at, src, dst, kind) = m[0];
    assert_eq!((src, kind), (8, BalanceKind::Active));
    assert!(dst < 8, "moved to E-core {dst}");
    assert!((23 * MS..=50 * MS).contains(&at), "moved at {} us", at / 1000);
    assert!(r.notes.iter().any(|n| n.contains("asymmetric capacity")), "{:?}", r.notes);
}

#[test]
fn on_the_285k_under_6_9_asym_packing_pulls_the_hog_up_the_priorities() {
    let r = hog("intel-285k", "6.9", 8);
    let m = moves(&r);
    println!("285k 6.9: {m:?}");
    // Capacity 1024 everywhere: misfit never fires. ITMT priorities (72 on
    // CPUs 2-3, 69 on the other P-cores, 46 on the E-cores): at the first
    // due balance of the 24-CPU MC domain (24 ms interval) an idle P-core
    // (69 > 46) pulls the running hog through the stopper, and a balance
    // interval later a favored core (72 > 69) pulls it again — a move
    // between P-cores that misfit never makes (their capacities 981 and
    // 1024 differ by less than capacity_greater()'s ~5 % margin).
    assert!(m.len() >= 2, "{m:?}");
    assert!(m[0].0 <= 25 * MS && m[0].1 == 8 && m[0].2 < 8, "{m:?}");
    assert!(m.iter().all(|x| x.3 == BalanceKind::Active), "{m:?}");
    let end = last_cpu(&r, 8);
    assert!(end == 2 || end == 3, "ended on CPU {end}: {m:?}");
}

#[test]
fn on_the_13900k_every_profile_packs_onto_the_highest_priority_idle_core() {
    for kernel in ["6.9", "6.12", "mainline"] {
        let r = hog("intel-13900k", kernel, 16);
        let m = moves(&r);
        println!("13900k {kernel}: {m:?}");
        // SMT on: ITMT stays on, capacity 1024 everywhere; at the first due
        // balance of the 32-CPU MC domain (32 ms) an idle P-core pulls the
        // hog off its E-core (69 > 43), and it ends on a favored P-core
        // (74: CPUs 4-7), pulled there by asym packing.
        assert!(m.first().is_some_and(|x| x.0 <= 33 * MS && x.1 == 16 && x.2 < 16), "{kernel}: {m:?}");
        let end = last_cpu(&r, 16);
        assert!((4..=7).contains(&end), "{kernel}: ended on CPU {end}: {m:?}");
        assert!(r.notes.iter().any(|n| n.contains("(SMT is on)")), "{:?}", r.notes);
    }
}
