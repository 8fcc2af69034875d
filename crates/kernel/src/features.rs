//! `sched_features` (kernel/sched/features.h) plus the patches proposed in the
//! seed reports, as named flags with each kernel profile's default.
//!
//! Settings use the debugfs syntax: `NAME` turns a feature on, `NO_NAME` off.
//! A feature the model knows by name but does not implement yet is refused
//! when a run names it, so nobody reads results from a toggle that did nothing.

use std::fmt;

/// Where a feature comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// In `features.h` of released kernels.
    Kernel,
    /// Proposed on LKML (seed reports); off by default everywhere.
    Patch,
}

/// One entry of the feature table.
#[derive(Clone, Copy, Debug)]
pub struct FeatureInfo {
    pub name: &'static str,
    pub default_6_12: bool,
    pub default_mainline: bool,
    pub origin: Origin,
    /// `None` when the model honours the flag; otherwise which step brings it.
    pub not_modeled: Option<&'static str>,
    pub doc: &'static str,
}

macro_rules! features {
    ($( $id:ident = $name:literal, $d612:expr, $dmain:expr, $origin:ident, $nm:expr, $doc:literal; )*) => {
        /// Every feature the model knows by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        #[repr(u8)]
        pub enum Feature { $( $id, )* }

        /// The feature table, indexed by `Feature as usize`.
        pub const FEATURES: &[FeatureInfo] = &[
            $( FeatureInfo { name: $name, default_6_12: $d612, default_mainline: $dmain,
                             origin: Origin::$origin, not_modeled: $nm, doc: $doc }, )*
        ];

        impl Feature {
            pub const ALL: &'static [Feature] = &[ $( Feature::$id, )* ];
        }
    };
}

const LATER: Option<&str> = Some("a later step (the model always ages PELT on attach)");
const NOT_PLANNED: Option<&str> = Some("no planned step (it does not change scheduling decisions the model makes)");

features! {
    PLACE_LAG = "PLACE_LAG", true, true, Kernel, None, "keep a sleeper's lag across the sleep (place_entity)";
    PLACE_DEADLINE_INITIAL = "PLACE_DEADLINE_INITIAL", true, true, Kernel, None, "new tasks start with half a slice";
    PLACE_REL_DEADLINE = "PLACE_REL_DEADLINE", true, true, Kernel, None, "keep the relative deadline across a non-sleep dequeue/enqueue";
    RUN_TO_PARITY = "RUN_TO_PARITY", true, true, Kernel, None, "protect the running task from wakeup preemption until its slice (deadline) is used";
    PREEMPT_SHORT = "PREEMPT_SHORT", true, true, Kernel, None, "an eligible wakee with a shorter slice may cancel that protection";
    NEXT_BUDDY = "NEXT_BUDDY", false, false, Kernel, None, "the wakee becomes the next buddy";
    PICK_BUDDY = "PICK_BUDDY", true, true, Kernel, None, "honour cfs_rq->next at pick when eligible";
    CACHE_HOT_BUDDY = "CACHE_HOT_BUDDY", true, true, Kernel, None, "the next buddy counts as cache-hot for load balancing";
    DELAY_DEQUEUE = "DELAY_DEQUEUE", true, true, Kernel, None, "an ineligible sleeper stays queued (sched_delayed) until picked or woken";
    DELAY_ZERO = "DELAY_ZERO", true, true, Kernel, None, "clip positive lag to 0 when a delayed entity is dequeued or requeued";
    WAKEUP_PREEMPTION = "WAKEUP_PREEMPTION", true, true, Kernel, None, "allow fair wakeup preemption";
    HRTICK = "HRTICK", false, false, Kernel, NOT_PLANNED, "hrtimer at slice end";
    HRTICK_DL = "HRTICK_DL", false, false, Kernel, NOT_PLANNED, "hrtick for deadline tasks";
    DOUBLE_TICK = "DOUBLE_TICK", false, false, Kernel, NOT_PLANNED, "periodic tick alongside the hrtick";
    NONTASK_CAPACITY = "NONTASK_CAPACITY", true, true, Kernel, NOT_PLANNED, "subtract IRQ/steal time from capacity";
    TTWU_QUEUE = "TTWU_QUEUE", true, true, Kernel, None, "remote wakeups through the target's wakelist (IPI)";
    SIS_UTIL = "SIS_UTIL", true, true, Kernel, None, "utilisation-based LLC scan budget in select_idle_cpu";
    WARN_DOUBLE_CLOCK = "WARN_DOUBLE_CLOCK", false, false, Kernel, NOT_PLANNED, "debug";
    RT_PUSH_IPI = "RT_PUSH_IPI", false, false, Kernel, None, "RT pull through an IPI chain instead of locking remote runqueues";
    RT_RUNTIME_SHARE = "RT_RUNTIME_SHARE", false, false, Kernel, NOT_PLANNED, "borrow RT runtime between CPUs (RT_GROUP_SCHED)";
    LB_MIN = "LB_MIN", false, false, Kernel, None, "skip tiny-load tasks when detaching";
    ATTACH_AGE_LOAD = "ATTACH_AGE_LOAD", true, true, Kernel, LATER, "age PELT across migration";
    WA_IDLE = "WA_IDLE", true, true, Kernel, None, "wake_affine_idle()";
    WA_WEIGHT = "WA_WEIGHT", true, true, Kernel, None, "wake_affine_weight()";
    WA_BIAS = "WA_BIAS", true, true, Kernel, None, "imbalance bias in wake_affine_weight()";
    UTIL_EST = "UTIL_EST", true, true, Kernel, NOT_PLANNED, "utilisation estimation";
    LATENCY_WARN = "LATENCY_WARN", false, false, Kernel, NOT_PLANNED, "warn on long need_resched latency";
    NI_RANDOM = "NI_RANDOM", true, true, Kernel, None, "newidle balance in proportion to its success rate";
    TTWU_QUEUE_ON_CPU = "TTWU_QUEUE_ON_CPU", true, true, Patch, None, "(RFC, Peter Zijlstra 2025) gate the on_cpu wakelist path";
    TTWU_QUEUE_DELAYED = "TTWU_QUEUE_DELAYED", false, false, Patch, None, "(series v2, Peter Zijlstra 2025-07-02) wake a delayed task through its own CPU's wakelist, which dequeues it and runs select_task_rq()";
    TTWU_DELAYED_V1 = "TTWU_DELAYED_V1", false, false, Patch, None, "(RFC v1, Peter Zijlstra 2025-05-20) with TTWU_QUEUE_DELAYED, the delayed task's own CPU requeues it in place instead of running select_task_rq() (v2)";
    TTWU_QUEUE_DEFAULT = "TTWU_QUEUE_DEFAULT", false, false, Patch, None, "(RFC, Peter Zijlstra 2025) queue remote wakeups even to busy same-LLC CPUs";
    TTWU_DEQUEUE = "TTWU_DEQUEUE", false, false, Patch, None, "(RFC, Peter Zijlstra 2025) ttwu_runnable() dequeues a delayed task so select_task_rq() runs";
    DEQUEUE_DELAYED = "DEQUEUE_DELAYED", false, false, Patch, None, "(RFC, Mike Galbraith 2024) dequeue a delayed wakee on a busy CPU so it can be placed elsewhere";
    LB_FIRST_MIGRATION = "LB_FIRST_MIGRATION", false, false, Patch, None, "(seed 000, K Prateek Nayak) idle-pull blocks delayed tasks, hands the first migrated task over the wakelist";
    RT_PUSH_ON_BOOST = "RT_PUSH_ON_BOOST", false, false, Patch, None, "(seed 003, Chaosheng Qu) prio_changed_rt() queues a push when a queued RT task is boosted";
    DL_SERVER_LAZY_STOP = "DL_SERVER_LAZY_STOP", false, false, Patch, None, "(cccb45d7c429, Peter Zijlstra 2025, in 6.17) on the 6.12.0 and 6.15 profiles, stop the fair server only when it is picked with nothing to serve, not whenever the last fair task leaves";
    NEWIDLE_MIGRATION_COST = "NEWIDLE_MIGRATION_COST", false, false, Patch, None, "(revert of c5b0a7eefc70, v5.16; Meta's 6.9 carried it) skip newidle balancing while avg_idle < sysctl_sched_migration_cost (500 us)";
    NEWIDLE_COST_BUMP = "NEWIDLE_COST_BUMP", false, false, Patch, None, "(155213a2aed4, Chris Mason 2025; in 6.17 and 6.12.43-63, reverted by d206fbad9328) a failed newidle balance feeds 3/2 of max_newidle_lb_cost, stored up to sysctl_sched_migration_cost + 200 ns";
}

impl Feature {
    pub fn info(self) -> &'static FeatureInfo {
        &FEATURES[self as usize]
    }
    pub fn name(self) -> &'static str {
        self.info().name
    }
    pub fn by_name(name: &str) -> Option<Feature> {
        Feature::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// The set of enabled features: one bit per [`Feature`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features {
    bits: u64,
}

/// Why a feature setting was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureError {
    Unknown(String),
    NotModeled { name: &'static str, until: &'static str },
}

impl fmt::Display for FeatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeatureError::Unknown(s) => {
                let names: Vec<&str> = FEATURES.iter().map(|f| f.name).collect();
                // The name is matched without its NO_, which goes back on the suggestion.
                let (no, bare) = match s.get(..3) {
                    Some(p) if p.eq_ignore_ascii_case("NO_") => ("NO_", &s[3..]),
                    _ => ("", s.as_str()),
                };
                let hint = schedlab_topology::diag::closest(bare, names.iter().copied())
                    .map_or(String::new(), |n| format!("did you mean `{no}{n}`? "));
                write!(
                    f,
                    "unknown sched feature `{s}` ({hint}expected NAME or NO_NAME with NAME one of: {})",
                    names.join(", ")
                )
            }
            FeatureError::NotModeled { name, until } => write!(
                f,
                "sched feature {name} is known but not modeled yet (it arrives with {until}); \
                 remove it from the run so results do not pretend it was honoured"
            ),
        }
    }
}

impl Features {
    pub fn empty() -> Self {
        Features { bits: 0 }
    }

    pub fn is_set(&self, f: Feature) -> bool {
        self.bits & (1 << f as u64) != 0
    }

    pub fn set(&mut self, f: Feature, on: bool) {
        if on {
            self.bits |= 1 << f as u64;
        } else {
            self.bits &= !(1 << f as u64);
        }
    }

    /// Apply one debugfs-style setting (`DELAY_DEQUEUE` or `NO_DELAY_DEQUEUE`).
    pub fn apply(&mut self, setting: &str) -> Result<(), FeatureError> {
        let s = setting.trim();
        let (name, on) = match s.strip_prefix("NO_") {
            Some(rest) if Feature::by_name(rest).is_some() => (rest, false),
            _ => (s, true),
        };
        let f = Feature::by_name(name).ok_or_else(|| FeatureError::Unknown(s.to_string()))?;
        if let Some(until) = f.info().not_modeled {
            return Err(FeatureError::NotModeled { name: f.name(), until });
        }
        self.set(f, on);
        Ok(())
    }

    /// What `/sys/kernel/debug/sched/features` would print.
    pub fn to_debugfs(&self) -> String {
        Feature::ALL
            .iter()
            .filter(|f| f.info().origin == Origin::Kernel)
            .map(|f| if self.is_set(*f) { f.name().to_string() } else { format!("NO_{}", f.name()) })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Settings that differ from `base`, in debugfs syntax.
    pub fn diff_from(&self, base: &Features) -> Vec<String> {
        Feature::ALL
            .iter()
            .filter(|f| self.is_set(**f) != base.is_set(**f))
            .map(|f| if self.is_set(*f) { f.name().to_string() } else { format!("NO_{}", f.name()) })
            .collect()
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_debugfs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_enum() {
        for (i, f) in Feature::ALL.iter().enumerate() {
            assert_eq!(*f as usize, i);
            assert_eq!(Feature::by_name(f.name()), Some(*f));
        }
        assert!(FEATURES.len() <= 64);
    }

    #[test]
    fn debugfs_syntax_toggles() {
        let mut f = Features::empty();
        f.apply("DELAY_DEQUEUE").unwrap();
        assert!(f.is_set(Feature::DELAY_DEQUEUE));
        f.apply("NO_DELAY_DEQUEUE").unwrap();
        assert!(!f.is_set(Feature::DELAY_DEQUEUE));
    }

    /// Issue 40: an unknown feature names the one it most likely meant, with its NO_.
    #[test]
    fn an_unknown_feature_gets_a_did_you_mean() {
        let mut f = Features::empty();
        let e = |f: &mut Features, s: &str| f.apply(s).unwrap_err().to_string();
        assert!(e(&mut f, "NO_DELAY_DEQUEU").contains("(did you mean `NO_DELAY_DEQUEUE`? expected"));
        assert!(e(&mut f, "no_delay_dequeue").contains("did you mean `NO_DELAY_DEQUEUE`?"));
        assert!(e(&mut f, "TTWU_QUEUE_DELAYD").contains("did you mean `TTWU_QUEUE_DELAYED`?"));
        let banana = e(&mut f, "BANANA");
        assert!(banana.starts_with("unknown sched feature `BANANA` (expected NAME"), "{banana}");
    }

    #[test]
    fn unknown_and_unmodeled_are_refused() {
        let mut f = Features::empty();
        assert!(matches!(f.apply("NO_SUCH_THING"), Err(FeatureError::Unknown(_))));
        let err = f.apply("NO_UTIL_EST").unwrap_err();
        assert!(err.to_string().contains("not modeled yet"), "{err}");
        assert!(matches!(f.apply("HRTICK"), Err(FeatureError::NotModeled { .. })));
        assert!(f.apply("RT_PUSH_IPI").is_ok());
    }
}
