//! ITMT priorities (`arch/x86/kernel/itmt.c`): `sched_set_itmt_core_prio()`
//! as each kernel version turns a core's priority into the per-CPU
//! `arch_asym_cpu_priority()` that asym packing compares.
//!
//! The rule changed twice for SMT siblings ([`ItmtSmtPrio`]): from 4.10 the
//! i-th sibling of a core (1-based, in sibling-mask order) got
//! `prio * smp_num_siblings / i`; 5.16 (014bfe892220) divided by `i * i` so
//! that a slow core's first thread outranks a fast core's second one; 6.5
//! (046a5a95c3b0) gave every sibling `prio` itself, since x86 no longer
//! sets `SD_ASYM_PACKING` on the SMT level (995998ebdebd) and
//! `sched_use_asym_prio()` only trusts a priority on an idle core.
//!
//! Simplified: `smp_num_siblings` is the boot CPU's (CPU 0's) number of
//! threads, which x86 reads from the boot CPU's CPUID leaf 0xB.

use crate::profile::ItmtSmtPrio;
use schedlab_topology::Topology;

/// `sched_set_itmt_core_prio(prio, core_cpu)`: store the priorities of
/// `core_cpu` (and, before 6.5, of its SMT siblings) into `prios`.
pub fn sched_set_itmt_core_prio(rule: ItmtSmtPrio, topo: &Topology, prio: i32, core_cpu: usize, prios: &mut [i32]) {
    let smp_num_siblings = topo.smt_mask(0).len() as i64;
    match rule {
        ItmtSmtPrio::Same => prios[core_cpu] = prio,
        ItmtSmtPrio::DivideByIndex | ItmtSmtPrio::DivideBySquare => {
            for (k, cpu) in topo.smt_mask(core_cpu).iter().enumerate() {
                let i = k as i64 + 1;
                let div = if rule == ItmtSmtPrio::DivideBySquare { i * i } else { i };
                // The kernel computes in int; the values here are 8-bit
                // performance levels times a thread count, far from overflow.
                prios[cpu] = (prio as i64 * smp_num_siblings / div) as i32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two P-cores with SMT (CPUs 0-1 and 2-3, adjacent numbering) and two
    /// E-cores (CPUs 4 and 5), as an Alder/Raptor Lake part is numbered.
    fn hybrid() -> Topology {
        let text = "hz = 1000\npreempt = \"full\"\nitmt_enabled = true\n\
                    [[cpus]]\nid = 0\ncore = 0\nllc = 0\n[[cpus]]\nid = 1\ncore = 0\nllc = 0\n\
                    [[cpus]]\nid = 2\ncore = 1\nllc = 0\n[[cpus]]\nid = 3\ncore = 1\nllc = 0\n\
                    [[cpus]]\nid = 4\ncore = 2\nllc = 0\n[[cpus]]\nid = 5\ncore = 3\nllc = 0\n\
                    [hwp_highest_perf]\n\"0-1\" = 74\n\"2-3\" = 69\n\"4-5\" = 43\n\
                    [core_type]\n\"0-3\" = \"core\"\n\"4-5\" = \"atom\"\n";
        Topology::from_toml_str("h.toml", text).unwrap()
    }

    fn prios(rule: ItmtSmtPrio) -> Vec<i32> {
        let t = hybrid();
        let mut p = vec![0; t.nr_cpus()];
        // intel_pstate calls it once per CPU (each CPU is a policy), in order.
        for cpu in 0..t.nr_cpus() {
            sched_set_itmt_core_prio(rule, &t, t.cpus[cpu].hwp_highest_perf.unwrap() as i32, cpu, &mut p);
        }
        p
    }

    /// By hand, smp_num_siblings = 2 (CPU 0 is a P-core with two threads):
    /// 6.5+: the performance itself on every thread;
    /// 5.16-6.4: first thread 74*2/1 = 148, second 74*2/4 = 37; 69 -> 138,
    /// 34; an E-core (alone in its mask) 43*2/1 = 86 — so P first threads >
    /// E-cores > P second threads;
    /// 4.10-5.15: second threads 74*2/2 = 74 and 69*2/2 = 69, both still
    /// below the E-cores' 86 here, but a fast core's second thread equals
    /// its own raw priority (the collision 014bfe892220 describes).
    #[test]
    fn sibling_priorities_per_version() {
        assert_eq!(prios(ItmtSmtPrio::Same), vec![74, 74, 69, 69, 43, 43]);
        assert_eq!(prios(ItmtSmtPrio::DivideBySquare), vec![148, 37, 138, 34, 86, 86]);
        assert_eq!(prios(ItmtSmtPrio::DivideByIndex), vec![148, 74, 138, 69, 86, 86]);
    }

    #[test]
    fn rule_by_version() {
        assert_eq!(ItmtSmtPrio::for_version(4, 19), ItmtSmtPrio::DivideByIndex);
        assert_eq!(ItmtSmtPrio::for_version(5, 15), ItmtSmtPrio::DivideByIndex);
        assert_eq!(ItmtSmtPrio::for_version(5, 16), ItmtSmtPrio::DivideBySquare);
        assert_eq!(ItmtSmtPrio::for_version(6, 4), ItmtSmtPrio::DivideBySquare);
        assert_eq!(ItmtSmtPrio::for_version(6, 5), ItmtSmtPrio::Same);
        assert_eq!(ItmtSmtPrio::for_version(7, 1), ItmtSmtPrio::Same);
        use crate::profile::HybridCapacity;
        assert_eq!(HybridCapacity::for_version(6, 11), HybridCapacity::Never);
        assert_eq!(HybridCapacity::for_version(6, 12), HybridCapacity::WithoutSmt);
        for (name, rule) in [
            ("6.9", HybridCapacity::Never),
            ("6.12", HybridCapacity::WithoutSmt),
            ("6.15", HybridCapacity::WithoutSmt),
            ("mainline", HybridCapacity::WithoutSmt),
        ] {
            let p = crate::profile::Profile::by_name(name).unwrap();
            assert_eq!((p.hybrid_capacity, p.itmt_smt_prio), (rule, ItmtSmtPrio::Same), "{name}");
        }
    }
}
