//! `pick_eevdf()` on one runqueue of N runnable nice-0 tasks (issue 16:
//! the pick is on every switch and wakeup preemption check). Run with
//! `cargo bench -p schedlab-kernel --bench pick`.

use schedlab_kernel::{Kernel, KernelConfig, Outbox, Policy, Profile, TaskParams};
use schedlab_topology::{parse_cpulist, PreemptModel, Topology};

fn main() {
    divan::main();
}

/// A 6.12 kernel on `smt-2x2` with `n` tasks pinned to CPU 0, all woken
/// and one of them switched in: the shape `schedule()` picks from.
fn runqueue(n: usize) -> Kernel {
    let profile = Profile::by_name("6.12").expect("profile 6.12");
    let features = profile.defaults;
    let topology = Topology::preset("smt-2x2").expect("preset smt-2x2");
    let mut k = Kernel::new(KernelConfig {
        profile,
        features,
        topology,
        preempt: PreemptModel::Full,
        trace: false,
        seed: 1,
        partitions: Vec::new(),
    });
    let mut out = Outbox::new();
    for i in 0..n {
        let t = k.add_task(TaskParams {
            pid: 1000 + i as i32,
            policy: Policy::Normal,
            nice: 0,
            rt_priority: 0,
            slice_ns: None,
            cpus_mask: parse_cpulist("0").expect("cpulist"),
            cpu: 0,
            fixed_start: true,
            dl: None,
        });
        // Staggered starts give the tasks different vruntimes and deadlines.
        k.wake_up_new_task(t, i as u64 * 1_000, 0, &mut out);
    }
    k.schedule(0, n as u64 * 1_000, false, &mut out);
    k
}

#[divan::bench(args = [2, 8, 64, 512])]
fn pick_eevdf(bencher: divan::Bencher, n: usize) {
    let k = runqueue(n);
    bencher.bench_local(|| divan::black_box(&k).pick_eevdf(0));
}
