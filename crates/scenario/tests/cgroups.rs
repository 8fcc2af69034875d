//! `[cgroup.NAME]` tables: what they parse to, how they narrow a thread's
//! CPUs, and every way they are refused (file:line:col and why).

use schedlab_scenario::{CpuMax, CpuSet, Op};

mod common;
use common::{expect_err, parse};

/// smt-2x2 (4 CPUs) with `cgroups` text and a thread table body `thread`.
fn file(cgroups: &str, thread: &str) -> String {
    format!(
        "topology = \"smt-2x2\"\nduration = \"1s\"\n{cgroups}\n[[thread]]\nname = \"a\"\nprogram = [{{ run = \"1ms\" }}]\n{thread}\n"
    )
}

#[test]
fn groups_parse_with_kernel_defaults_and_parents_first() {
    let s = parse(&file(
        "[cgroup.web]\nweight = 300\ncpus = \"0-2\"\n[cgroup.\"web/api\"]\nmax = \"50ms\"\ncpus = \"1-2\"\n[cgroup.batch]\nidle = true\n",
        "cgroup = \"web/api\"\n[[thread]]\nname = \"b\"\ncgroup = \"batch\"\nprogram = [{ run = \"1ms\" }]",
    ))
    .unwrap();
    let names: Vec<&str> = s.cgroups.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["batch", "web", "web/api"]);
    let (web, api) = (&s.cgroups[1], &s.cgroups[2]);
    assert_eq!((web.weight, web.shares(), web.parent), (Some(300), 3072, None));
    assert_eq!(api.parent, Some(1));
    assert_eq!(api.max, Some(CpuMax { quota_ns: 50_000_000, period_ns: 100_000_000 }), "the default period");
    assert!(api.controls_cpu() && s.cgroups[0].controls_cpu() && s.cgroups[0].idle);
    assert_eq!(s.threads[0].cgroup, Some(2));
    assert_eq!(s.threads[0].affinity, CpuSet::from_iter([1, 2]), "the cpuset becomes the affinity");
    assert_eq!((s.threads[1].cgroup, s.threads[1].affinity), (Some(0), CpuSet::first_n(4)));
}

#[test]
fn an_affinity_and_a_setaffinity_are_cut_to_the_cpuset() {
    let s = parse(&file(
        "[cgroup.g]\ncpus = \"2-3\"\n",
        "cgroup = \"g\"\naffinity = \"1-2\"\n[[thread]]\nname = \"b\"\ncgroup = \"g\"\nprogram = [{ setaffinity = \"0-2\" }, { run = \"1ms\" }]",
    ))
    .unwrap();
    assert_eq!(s.threads[0].affinity, CpuSet::single(2));
    assert_eq!(s.threads[1].program.ops[0], Op::SetAffinity { cpus: CpuSet::single(2) });
    assert!(!s.cgroups[0].controls_cpu(), "cpus alone are the cpuset controller's");
}

#[test]
fn bad_cgroup_tables_are_refused_where_written() {
    let t = "cgroup = \"g\"";
    // Line 3 is the first line of the cgroups text.
    expect_err(&file("[cgroup.g]\nweight = 0\n", t), 4, "0", "`weight` = 0 is out of range: expected 1..10000");
    expect_err(&file("[cgroup.g]\nweight = 10001\n", t), 4, "10001", "cpu.weight");
    expect_err(&file("[cgroup.g]\nidle = true\nweight = 5\n", t), 5, "5", "an idle group has no weight");
    expect_err(&file("[cgroup.g]\nmax = \"500us\"\n", t), 4, "\"500us\"", "below 1ms");
    expect_err(&file("[cgroup.g]\nmax = \"5ms\"\nperiod = \"2s\"\n", t), 5, "\"2s\"", "expected 1ms..1s");
    expect_err(&file("[cgroup.g]\nperiod = \"10ms\"\n", t), 4, "\"10ms\"", "`period` without `max`");
    // cpu.max's numbers are microseconds: a bare one is refused (issue 40).
    expect_err(&file("[cgroup.g]\nmax = 50000\n", t), 4, "50000", "cpu.max and cpu.cfs_*_us count microseconds");
    expect_err(&file("[cgroup.g]\nmax = \"50ms\"\nperiod = 100000\n", t), 5, "100000", "such as \"100000us\"");
    expect_err(&file("[cgroup.g]\ncpus = \"7\"\n", t), 4, "\"7\"", "`cpus` names CPU 7 but topology");
    expect_err(&file("[cgroup.g]\nshares = 5\n", t), 4, "shares", "unknown field `shares`");
    expect_err(
        &file("[cgroup.g]\ncpus = \"0-1\"\n[cgroup.\"g/h\"]\ncpus = \"1-2\"\n", "cgroup = \"g/h\""),
        6,
        "\"1-2\"",
        "is not within its parent's 0-1",
    );
    expect_err(&file("[cgroup.\"g/h\"]\n", "cgroup = \"g/h\""), 3, "\"g/h\"", "its parent `g` has no table");
    expect_err(&file("[cgroup.\"g//h\"]\n", t), 3, "\"g//h\"", "a path component is empty");
    expect_err(&file("[cgroup.\"..\"]\n", t), 3, "\"..\"", "are not cgroup names");
    expect_err(&file("[cgroup.\"a b\"]\n", t), 3, "\"a b\"", "' ' is not allowed");
    for control in ["tasks", "cpu.weight", "cgroup.procs", "cpuset.cpus"] {
        expect_err(
            &file(&format!("[cgroup.\"{control}\"]\n"), t),
            3,
            &format!("\"{control}\""),
            "the name of a cgroup control file",
        );
    }
    assert!(parse(&file("[cgroup.\"web.v2\"]\n", "cgroup = \"web.v2\"")).is_ok(), "a dot elsewhere is fine");
}

#[test]
fn threads_must_name_a_table_and_tables_must_hold_a_thread() {
    expect_err(&file("[cgroup.g]\n", "cgroup = \"h\""), 8, "\"h\"", "no [cgroup.\"h\"] table (known: g)");
    expect_err(&file("", "cgroup = \"h\""), 7, "\"h\"", "the file has no [cgroup.NAME] tables");
    expect_err(&file("[cgroup.g]\n[cgroup.unused]\n", "cgroup = \"g\""), 4, "unused", "no thread runs in it");
    // A parent is used through its child.
    assert!(parse(&file("[cgroup.g]\n[cgroup.\"g/h\"]\n", "cgroup = \"g/h\"")).is_ok());
    expect_err(
        &file("[cgroup.g]\ncpus = \"0\"\n", "cgroup = \"g\"\naffinity = \"2-3\""),
        10,
        "\"2-3\"",
        "shares no CPU with cgroup `g`'s cpus 0",
    );
    expect_err(
        &file("[cgroup.g]\ncpus = \"0\"\n", "cgroup = \"g\"\nstart_cpu = 1"),
        10,
        "1",
        "not in the thread's affinity 0",
    );
    // A forked table joins its cgroup after it starts (in its forker's):
    // fine without a cpuset, refused with one (its CPUs would change).
    let forked = |cg: &str| {
        format!(
            "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.g]\n{cg}\n[[thread]]\nname = \"a\"\n\
             program = [{{ fork = \"c\" }}, {{ sleep = \"1ms\" }}]\n[[thread]]\nname = \"c\"\ninstances = 0\n\
             cgroup = \"g\"\nloop = 1\nprogram = [{{ run = \"1ms\" }}]\n"
        )
    };
    assert!(parse(&forked("")).is_ok());
    expect_err(&forked("cpus = \"1\""), 11, "\"g\"", "is forked and its cgroup `g` has a cpuset");
    // So is forking from a thread in a cpuset.
    let forker = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.g]\ncpus = \"1\"\n[[thread]]\nname = \"a\"\ncgroup = \"g\"\n\
                  program = [{ fork = \"c\" }, { sleep = \"1ms\" }]\n[[thread]]\nname = \"c\"\ninstances = 0\n\
                  loop = 1\nprogram = [{ run = \"1ms\" }]\n";
    expect_err(forker, 8, "\"c\"", "forks in a cgroup with a cpuset (1)");
}

#[test]
fn a_thread_moves_between_groups_and_back_with_the_cgroup_op() {
    let s = parse(&file(
        "[cgroup.g]\n[cgroup.h]\nweight = 50\n",
        "cgroup = \"g\"\n[[thread]]\nname = \"m\"\nprogram = [{ cgroup = \"h\" }, { run = \"1ms\" }, { cgroup = \"/\" }]",
    ))
    .unwrap();
    assert_eq!(s.threads[1].program.ops[0], Op::SetCgroup { cgroup: Some(1) });
    assert_eq!(s.threads[1].program.ops[2], Op::SetCgroup { cgroup: None });
    // A table only a move uses counts as used.
    assert!(parse(&file(
        "[cgroup.g]\n",
        "[[thread]]\nname = \"m\"\nprogram = [{ cgroup = \"g\" }, { run = \"1ms\" }]"
    ))
    .is_ok());
}

#[test]
fn moves_that_schedlab_cannot_follow_are_refused_where_written() {
    let mv = |cgroups: &str, thread: &str, op: &str| {
        file(
            cgroups,
            &format!("\n[[thread]]\nname = \"m\"\n{thread}\nprogram = [{{ cgroup = \"{op}\" }}, {{ run = \"1ms\" }}]"),
        )
    };
    let f = mv("[cgroup.g]\n", "", "nope");
    expect_err(&f, 12, "\"nope\"", "no [cgroup.\"nope\"] table (known: g, or \"/\" for none)");
    let f = mv("[cgroup.g]\ncpus = \"1\"\n", "", "g");
    expect_err(&f, 13, "\"g\"", "moves into cgroup `g`, which has a cpuset");
    let f = file(
        "[cgroup.g]\ncpus = \"1\"\n[cgroup.h]\n",
        "cgroup = \"h\"\n[[thread]]\nname = \"m\"\ncgroup = \"g\"\nprogram = [{ cgroup = \"h\" }, { run = \"1ms\" }]",
    );
    assert!(parse(&f).is_err_and(|e| e.message.contains("moves from cgroup `g`, which has a cpuset")));
    let f = mv("[cgroup.g]\n", "session = \"s\"", "g");
    assert!(parse(&f).is_err_and(|e| e.message.contains("runs in a session and moves to a cgroup")));
    // A forked thread may move (it starts in its forker's group).
    let forked = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.g]\n[[thread]]\nname = \"a\"\n\
                  program = [{ fork = \"c\" }, { sleep = \"1ms\" }]\n[[thread]]\nname = \"c\"\ninstances = 0\n\
                  loop = 1\nprogram = [{ cgroup = \"g\" }, { run = \"1ms\" }]\n";
    assert!(parse(forked).is_ok());
}

#[test]
fn a_partition_takes_its_cpus_from_every_group_outside_it() {
    // smt-2x2: CPUs 0-3. The partition takes 2-3; thread `a` (the run's
    // own group) and `b` (a group without cpus) keep 0-1, `p` has 2-3.
    let s = parse(&file(
        "[cgroup.rt]\ncpus = \"2-3\"\npartition = \"isolated\"\n[cgroup.other]\nweight = 50\n",
        "[[thread]]\nname = \"p\"\ncgroup = \"rt\"\nprogram = [{ run = \"1ms\" }]\n\
         [[thread]]\nname = \"b\"\ncgroup = \"other\"\naffinity = \"1-3\"\nprogram = [{ setaffinity = \"0-3\" }, { run = \"1ms\" }]",
    ))
    .unwrap();
    let by_name = |n: &str| s.threads.iter().find(|t| t.name == n).unwrap();
    let rt = s.cgroups.iter().find(|g| g.name == "rt").unwrap();
    assert_eq!(rt.partition, Some(schedlab_scenario::cgroup::PartitionKind::Isolated));
    assert_eq!(by_name("a").affinity, CpuSet::first_n(2));
    assert_eq!(by_name("p").affinity.to_cpulist(), "2-3");
    assert_eq!(by_name("b").affinity, CpuSet::single(1), "its affinity 1-3 minus the partition");
    assert_eq!(by_name("b").program.ops[0], Op::SetAffinity { cpus: CpuSet::first_n(2) });
    assert!(parse(&file("[cgroup.g]\ncpus = \"1\"\npartition = \"member\"\n", "cgroup = \"g\"")).is_ok());
}

#[test]
fn partitions_the_kernel_would_refuse_are_refused_where_written() {
    let t = "cgroup = \"g\"";
    expect_err(&file("[cgroup.g]\npartition = \"root\"\n", t), 4, "\"root\"", "a partition needs its `cpus`");
    expect_err(
        &file("[cgroup.g]\ncpus = \"1\"\npartition = \"exclusive\"\n", t),
        5,
        "\"exclusive\"",
        "expected \"member\", \"root\" or \"isolated\"",
    );
    expect_err(
        &file("[cgroup.g]\ncpus = \"0-3\"\npartition = \"root\"\n", t),
        3,
        "g]",
        "the partitions take every CPU (0-3)",
    );
    let two = |a: &str, b: &str| {
        file(
            &format!(
                "[cgroup.g]\ncpus = \"{a}\"\npartition = \"root\"\n[cgroup.h]\ncpus = \"{b}\"\npartition = \"root\"\n"
            ),
            "cgroup = \"g\"\n[[thread]]\nname = \"b\"\ncgroup = \"h\"\nprogram = [{ run = \"1ms\" }]",
        )
    };
    assert!(parse(&two("1", "2-3")).is_ok());
    expect_err(&two("1-2", "2-3"), 6, "h", "overlap another partition's 2");
    expect_err(
        &file(
            "[cgroup.g]\ncpus = \"2-3\"\npartition = \"root\"\n[cgroup.\"g/h\"]\ncpus = \"3\"\npartition = \"root\"\n",
            "cgroup = \"g/h\"",
        ),
        8,
        "\"root\"",
        "a partition inside partition `g` is not supported",
    );
    expect_err(
        &file(
            "[cgroup.g]\ncpus = \"2-3\"\npartition = \"root\"\n[cgroup.h]\ncpus = \"1-2\"\n",
            "cgroup = \"g\"\n[[thread]]\nname = \"b\"\ncgroup = \"h\"\nprogram = [{ run = \"1ms\" }]",
        ),
        6,
        "h",
        "reaches into partition `g` (CPUs 2-3)",
    );
    // A thread of the run's own group pinned into the partition has no CPU left.
    let pinned = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.g]\ncpus = \"2-3\"\npartition = \"root\"\n\
                  [[thread]]\nname = \"a\"\naffinity = \"3\"\nprogram = [{ run = \"1ms\" }]\n\
                  [[thread]]\nname = \"b\"\ncgroup = \"g\"\nprogram = [{ run = \"1ms\" }]\n";
    expect_err(pinned, 8, "\"3\"", "shares no CPU with the CPUs the partitions leave to the run's own group, 0-1");
    // The partition's parent keeps the rest of its own cpus for its threads.
    assert!(parse(&file(
        "[cgroup.g]\ncpus = \"1-3\"\n[cgroup.\"g/p\"]\ncpus = \"3\"\npartition = \"root\"\n",
        "cgroup = \"g\"\n[[thread]]\nname = \"b\"\ncgroup = \"g/p\"\nprogram = [{ run = \"1ms\" }]"
    ))
    .is_ok());
}
