//! Kernel profiles: the defaults and rules that differ between kernel versions.
//!
//! A profile fixes what a given kernel does where versions disagree; features
//! then toggle on top of the profile's defaults. Each rule names the change
//! that introduced it (see `shared/docs/kernel-model.md`).

use crate::features::{Feature, Features, FEATURES};

/// How `entity_lag()` bounds a task's lag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LagLimit {
    /// 6.12: ±calc_delta_fair(max(2·slice, TICK_NSEC)).
    TwiceSliceOrTick,
    /// ≥7.x: ±calc_delta_fair(max slice queued on the cfs_rq + TICK_NSEC).
    MaxSlicePlusTick,
}

/// What RUN_TO_PARITY protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceProtection {
    /// 6.12: the whole request, until `update_deadline()` moves the deadline.
    UntilDeadline,
    /// ≥6.17 ("Limit run to parity to the min slice of enqueued entities"):
    /// until the smallest slice among queued entities has been served.
    MinQueuedSlice,
}

/// How `sched_set_itmt_core_prio()` (arch/x86/kernel/itmt.c) turns a
/// core's priority into its SMT siblings' `arch_asym_cpu_priority()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItmtSmtPrio {
    /// 4.10 (the ITMT introduction) to 5.15: the i-th sibling (1-based, in
    /// sibling-mask order) gets `prio * smp_num_siblings / i`.
    DivideByIndex,
    /// 5.16 (014bfe892220, "x86/sched: Decrease further the priorities of
    /// SMT siblings") to 6.4: `prio * smp_num_siblings / (i * i)`.
    DivideBySquare,
    /// 6.5+ (046a5a95c3b0, "x86/sched/itmt: Give all SMT siblings of a core
    /// the same priority"): every CPU gets `prio` itself.
    Same,
}

impl ItmtSmtPrio {
    /// The rule of a kernel `major.minor`.
    pub fn for_version(major: u32, minor: u32) -> ItmtSmtPrio {
        match (major, minor) {
            v if v >= (6, 5) => ItmtSmtPrio::Same,
            v if v >= (5, 16) => ItmtSmtPrio::DivideBySquare,
            _ => ItmtSmtPrio::DivideByIndex,
        }
    }
}

impl HybridCapacity {
    /// The rule of a kernel `major.minor`.
    pub fn for_version(major: u32, minor: u32) -> HybridCapacity {
        if (major, minor) >= (6, 12) {
            HybridCapacity::WithoutSmt
        } else {
            HybridCapacity::Never
        }
    }
}

/// Whether intel_pstate gives a hybrid part asymmetric CPU capacities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridCapacity {
    /// Before 6.12: every CPU keeps capacity 1024; hybrid parts are ranked
    /// by ITMT priority only.
    Never,
    /// 6.12+ (929ebc93ccaa, "cpufreq: intel_pstate: Set asymmetric CPU
    /// capacity on hybrid systems"): `hybrid_init_cpu_capacity_scaling()`
    /// scales capacities by HWP highest performance and clears ITMT when the
    /// part is hybrid and SMT is off (6.12.0 tests `sched_smt_active()`,
    /// Debian's 6.12.117 and later `cpu_smt_possible()`: the same for a
    /// topology without SMT threads; `nosmt` on an SMT part is not modeled).
    WithoutSmt,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    pub description: &'static str,
    /// `normalized_sysctl_sched_base_slice`, before the CPU-count factor.
    pub base_slice_ns: u64,
    pub lag_limit: LagLimit,
    pub slice_protection: SliceProtection,
    /// PREEMPT_LAZY exists (≥6.13).
    pub has_lazy_preempt: bool,
    /// Fair wakeup preemption uses `resched_curr_lazy()` (≥7.0); `update_curr()`
    /// slice expiry is lazy whenever the lazy model exists.
    pub lazy_wakeup_preempt: bool,
    /// `can_migrate_task()` refuses delayed tasks except for migrate_load (≥6.14).
    pub lb_skips_delayed: bool,
    /// Load-balance counters use `h_nr_runnable`, excluding delayed tasks (≥6.14).
    pub lb_counts_runnable_only: bool,
    /// The fair server (`rq->fair_server`, a deferred dl_server) exists (≥6.12).
    pub fair_server: bool,
    /// Custom slices (`sched_attr.sched_runtime` for fair tasks) exist (≥6.12).
    pub custom_slices: bool,
    /// The fair server stops whenever the CPU's last fair task leaves
    /// (`dl_server_stop()` from `dequeue_entities()`, its timer cancelled)
    /// and starts again, armed, at the next fair enqueue: 6.12.0 to 6.16.
    /// cccb45d7c429 ("sched/deadline: Less agressive dl_server handling",
    /// 6.17, in Debian's 6.12.117) stops it only when it is picked with
    /// nothing to serve (`DL_SERVER_LAZY_STOP` applies it to these profiles).
    pub dl_server_stop_on_empty: bool,
    /// CFS bandwidth throttles tasks, not group entities (≥6.18, Aaron Lu's
    /// "sched/fair: Task based throttle" series): a throttled cfs_rq stays
    /// queued, a task picked from it leaves for the cfs_rq's limbo list on
    /// its way back to user space, and unthrottling enqueues each as a wakeup.
    pub task_based_throttle: bool,
    /// The x86 ITMT priority rule for SMT siblings (itmt.c).
    pub itmt_smt_prio: ItmtSmtPrio,
    /// intel_pstate's hybrid capacity scaling.
    pub hybrid_capacity: HybridCapacity,
    /// Features of the table this kernel's features.h does not have, with
    /// the release that added each: settings naming them are refused.
    pub absent: &'static [(Feature, &'static str)],
    pub defaults: Features,
}

/// What 6.9's features.h lacks of the table (all arrived with 6.12's
/// EEVDF completion: delayed dequeue, short-slice preemption, the relative
/// deadline across migration; NI_RANDOM is a 2025 change).
const ABSENT_6_9: &[(Feature, &str)] = &[
    (Feature::PLACE_REL_DEADLINE, "6.12"),
    (Feature::PREEMPT_SHORT, "6.12"),
    (Feature::DELAY_DEQUEUE, "6.12"),
    (Feature::DELAY_ZERO, "6.12"),
    (Feature::NI_RANDOM, "6.17"),
];

fn defaults(mainline: bool) -> Features {
    let mut f = Features::empty();
    for (i, info) in FEATURES.iter().enumerate() {
        let on = if mainline { info.default_mainline } else { info.default_6_12 };
        f.set(Feature::ALL[i], on);
    }
    f
}

impl Profile {
    pub const NAMES: &'static [&'static str] = &["6.9", "6.12", "6.12.0", "6.15", "mainline"];

    /// Refuse a debugfs-style setting (`NAME` / `NO_NAME`) of a feature this
    /// kernel does not have.
    pub fn check_setting(&self, setting: &str) -> Result<(), String> {
        let s = setting.trim();
        let name = s.strip_prefix("NO_").filter(|n| Feature::by_name(n).is_some()).unwrap_or(s);
        match self.absent.iter().find(|(f, _)| f.name() == name) {
            Some((f, since)) => Err(format!(
                "{} does not exist in kernel profile `{}` (added in {since}); the profile behaves as without it",
                f.name(),
                self.name
            )),
            None => Ok(()),
        }
    }

    /// Look a profile up by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "6.12" | "6.12.117" => Some(Profile {
                name: "6.12",
                description: "Debian linux 6.12.117 (stable backports: 0.70 ms base slice, zero_vruntime, h_nr_runnable)",
                base_slice_ns: 700_000,
                lag_limit: LagLimit::TwiceSliceOrTick,
                slice_protection: SliceProtection::UntilDeadline,
                has_lazy_preempt: false,
                lazy_wakeup_preempt: false,
                lb_skips_delayed: false,
                lb_counts_runnable_only: false,
                fair_server: true,
                custom_slices: true,
                dl_server_stop_on_empty: false,
                task_based_throttle: false,
                itmt_smt_prio: ItmtSmtPrio::for_version(6, 12),
                hybrid_capacity: HybridCapacity::for_version(6, 12),
                absent: &[],
                defaults: defaults(false),
            }),
            "6.9" | "6.9.0" => {
                let mut p = Profile::by_name("6.12.0")?;
                p.name = "6.9";
                p.description = "mainline v6.9 (EEVDF before 6.12's completion: no delayed dequeue, no fair server, \
                                 no PREEMPT_SHORT or relative deadlines, no custom slices; 0.75 ms base slice)";
                p.fair_server = false;
                p.custom_slices = false;
                p.itmt_smt_prio = ItmtSmtPrio::for_version(6, 9);
                p.hybrid_capacity = HybridCapacity::for_version(6, 9);
                p.absent = ABSENT_6_9;
                for (f, _) in ABSENT_6_9 {
                    p.defaults.set(*f, false);
                }
                Some(p)
            }
            "6.12.0" => {
                let mut p = Profile::by_name("6.12")?;
                p.name = "6.12.0";
                p.description = "mainline v6.12 release (0.75 ms base slice, RT_PUSH_IPI on)";
                p.base_slice_ns = 750_000;
                p.dl_server_stop_on_empty = true;
                p.defaults.set(Feature::RT_PUSH_IPI, true);
                // Proportional newidle balancing is a later stable backport.
                p.defaults.set(Feature::NI_RANDOM, false);
                Some(p)
            }
            "6.15" | "6.15.0" => {
                let mut p = Profile::by_name("6.12.0")?;
                p.name = "6.15";
                p.description = "mainline v6.15 as these paths read in it: 6.12.0 plus 6.14's delayed-task \
                                 accounting (h_nr_runnable in the load balancer, delayed tasks migrated only for \
                                 load); the stop-on-empty dl_server";
                p.lb_skips_delayed = true;
                p.lb_counts_runnable_only = true;
                Some(p)
            }
            "mainline" | "7.x" => Some(Profile {
                name: "mainline",
                description: "mainline 7.x as read from LKML/tip (lazy preemption, min-slice run-to-parity, delayed tasks not migrated by LB)",
                base_slice_ns: 700_000,
                lag_limit: LagLimit::MaxSlicePlusTick,
                slice_protection: SliceProtection::MinQueuedSlice,
                has_lazy_preempt: true,
                lazy_wakeup_preempt: true,
                lb_skips_delayed: true,
                lb_counts_runnable_only: true,
                fair_server: true,
                custom_slices: true,
                dl_server_stop_on_empty: false,
                task_based_throttle: true,
                itmt_smt_prio: ItmtSmtPrio::for_version(7, 0),
                hybrid_capacity: HybridCapacity::for_version(7, 0),
                absent: &[],
                defaults: defaults(true),
            }),
            _ => None,
        }
    }

    /// `sysctl_sched_base_slice` for a machine with `nr_cpus` online CPUs:
    /// the normalized value times `1 + ilog2(min(nr_cpus, 8))` (SCHED_TUNABLESCALING_LOG).
    pub fn base_slice_for(&self, nr_cpus: usize) -> u64 {
        let n = nr_cpus.clamp(1, 8) as u64;
        let factor = 1 + (63 - n.leading_zeros() as u64);
        self.base_slice_ns * factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_slice_scales_with_log_of_cpus() {
        let p = Profile::by_name("6.12").unwrap();
        assert_eq!(p.base_slice_for(1), 700_000);
        assert_eq!(p.base_slice_for(2), 1_400_000);
        assert_eq!(p.base_slice_for(4), 2_100_000);
        assert_eq!(p.base_slice_for(32), 2_800_000);
        assert_eq!(Profile::by_name("6.12.0").unwrap().base_slice_for(32), 3_000_000);
    }

    #[test]
    fn profiles_have_kernel_defaults() {
        let p = Profile::by_name("6.12").unwrap();
        assert!(p.defaults.is_set(Feature::DELAY_DEQUEUE));
        assert!(p.defaults.is_set(Feature::RUN_TO_PARITY));
        assert!(!p.defaults.is_set(Feature::NEXT_BUDDY));
        assert!(!p.defaults.is_set(Feature::TTWU_DEQUEUE));
        assert!(Profile::by_name("4.19").is_none());
    }

    #[test]
    fn the_6_9_profile_lacks_what_6_12_added() {
        let p = Profile::by_name("6.9").unwrap();
        assert_eq!(p.base_slice_for(1), 750_000);
        for f in [Feature::DELAY_DEQUEUE, Feature::DELAY_ZERO, Feature::PREEMPT_SHORT, Feature::PLACE_REL_DEADLINE] {
            assert!(!p.defaults.is_set(f), "{}", f.name());
        }
        assert!(p.defaults.is_set(Feature::RUN_TO_PARITY) && p.defaults.is_set(Feature::PLACE_LAG));
        assert!(!p.fair_server && !p.custom_slices);
        let e = p.check_setting("NO_DELAY_DEQUEUE").unwrap_err();
        assert!(e.contains("DELAY_DEQUEUE does not exist in kernel profile `6.9` (added in 6.12)"), "{e}");
        assert!(p.check_setting("RUN_TO_PARITY").is_ok() && p.check_setting("TTWU_DEQUEUE").is_ok());
        assert!(Profile::by_name("6.12").unwrap().check_setting("DELAY_DEQUEUE").is_ok());
    }
}
