/// Balance when a CPU is about to go idle.
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
/// Balance (pick the idlest group) on exec.
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
/// Balance on fork / clone.
pub const SD_BALANCE_FORK: u32 = 1 << 2;
/// Balance on wakeup (never set by `sd_init()`).
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
/// Wakeups may pull a task to the waker's CPU (`wake_affine()`).
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
/// The span holds CPUs of more than one capacity.
pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
/// The span holds every capacity value the machine has.
pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
/// Members share the core's execution resources (SMT).
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
/// Members share an L2 / cluster tag.
pub const SD_CLUSTER: u32 = 1 << 8;
/// Members share the last-level cache.
pub const SD_SHARE_LLC: u32 = 1 << 9;
/// Only one CPU at a time balances this level (global `sched_balance_running`).
pub const SD_SERIALIZE: u32 = 1 << 10;
/// Pack work onto the CPUs with the highest `arch_asym_cpu_priority()` (ITMT).
pub const SD_ASYM_PACKING: u32 = 1 << 11;
/// Spread work to sibling groups before stacking it.
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
/// Groups of this level may overlap (NUMA levels).
pub const SD_OVERLAP: u32 = 1 << 13;
/// A NUMA level.
pub const SD_NUMA: u32 = 1 << 14;

/// Flags whose presence at a level implies it at every level below
/// (the `SDF_SHARED_CHILD` metaflag); used by `highest_flag_domain()`.
pub const SD_SHARED_CHILD_MASK: u32 = SD_BALANCE_NEWIDLE
    | SD_BALANCE_EXEC
    | SD_BALANCE_FORK
    | SD_BALANCE_WAKE
    | SD_WAKE_AFFINE
    | SD_SHARE_CPUCAPACITY
    | SD_SHARE_LLC;
/// Flags whose presence at a level implies it at every level above
/// (`SDF_SHARED_PARENT`).
pub const SD_SHARED_PARENT_MASK: u32 =
    SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL | SD_SERIALIZE | SD_OVERLAP | SD_NUMA;
/// Flags that only mean something with at least two groups
/// (`SDF_NEEDS_GROUPS`): every flag except `SD_WAKE_AFFINE`.
/// The `SD_DEGENERATE_GROUPS_MASK` of topology.c.
pub const SD_DEGENERATE_GROUPS_MASK: u32 = ((1 << 15) - 1) & !SD_WAKE_AFFINE;
/// Flags a topology level's `sd_flags()` callback may return
/// (`TOPOLOGY_SD_FLAGS`); `sd_init()` drops anything else.
pub const TOPOLOGY_SD_FLAGS: u32 = SD_SHARE_CPUCAPACITY | SD_CLUSTER | SD_SHARE_LLC | SD_NUMA | SD_ASYM_PACKING;

/// Every flag with its name, lowest bit first.
pub const SD_FLAG_NAMES: [(u32, &str); 15] = [
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
    (SD_ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL"),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
    (SD_CLUSTER, "SD_CLUSTER"),
    (SD_SHARE_LLC, "SD_SHARE_LLC"),
    (SD_SERIALIZE, "SD_SERIALIZE"),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
    (SD_OVERLAP, "SD_OVERLAP"),
    (SD_NUMA, "SD_NUMA"),
];

/// Space-separated flag names, lowest bit first: the text of debugfs
/// `sched/domains/cpuN/domainM/flags` (`sd_flags_show()`).
pub fn flag_names(flags: u32) -> String {
    SD_FLAG_NAMES.iter().filter(|(bit, _)| flags & bit != 0).map(|(_, name)| *name).collect::<Vec<_>>().join(" ")
}
