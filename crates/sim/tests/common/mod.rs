//! Readers of a simulated run's trace shared by the capacity, EAS and
//! hybrid tests. (Each test file uses some of them.)
#![allow(dead_code)]

use schedlab_sim::SimResult;
use schedlab_trace::{BalanceKind, EventKind};

/// The pid of the thread named `name`.
pub fn pid_of(r: &SimResult, name: &str) -> i32 {
    r.threads.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no thread {name}")).pid
}

/// The balancer's moves of `pid`: (time, from, to, which balance).
pub fn balancer_moves(r: &SimResult, pid: i32) -> Vec<(u64, u32, u32, BalanceKind)> {
    let moves = r.trace.events.iter().filter_map(|e| match e.kind {
        EventKind::LbMigrate { pid: p, src_cpu, dst_cpu, kind, .. } if p == pid => Some((e.ts, src_cpu, dst_cpu, kind)),
        _ => None,
    });
    moves.collect()
}
