//! Layouts for both hierarchies, computed without touching the host.

use super::*;
use crate::plan::RealOptions;

const FILE: &str = r#"
topology = "smt-2x2"
duration = "1s"
[cgroup.web]
weight = 300
[cgroup."web/api"]
max = "50ms"
period = "200ms"
cpus = "2-3"
[cgroup.pin]
cpus = "1"
[[thread]]
name = "api"
cgroup = "web/api"
program = [{ run = "1ms" }]
[[thread]]
name = "pinned"
cgroup = "pin"
program = [{ run = "1ms" }]
[[thread]]
name = "free"
program = [{ run = "1ms" }]
[[thread]]
name = "rt"
policy = "SCHED_FIFO"
program = [{ run = "1ms" }]
"#;

fn setup(text: &str) -> (Scenario, Plan) {
    let s = Scenario::from_toml_str("t.toml", text, Path::new(".")).unwrap();
    let p = Plan::new(&s, &RealOptions::default(), &[0, 1, 2, 3]).unwrap();
    (s, p)
}

fn v1(rt_group_sched: bool) -> HostCgroups {
    HostCgroups {
        hierarchy: Hierarchy::V1 {
            cpu: Some("/sys/fs/cgroup/cpu".into()),
            cpuset: Some("/sys/fs/cgroup/cpuset".into()),
        },
        delegated: Vec::new(),
        cpuset_cpus: "0-3".into(),
        cpuset_mems: "0".into(),
        rt_group_sched,
    }
}

fn v2(delegated: &[&str]) -> HostCgroups {
    HostCgroups {
        hierarchy: Hierarchy::V2 { root: "/sys/fs/cgroup".into() },
        delegated: delegated.iter().map(|s| s.to_string()).collect(),
        cpuset_cpus: String::new(),
        cpuset_mems: String::new(),
        rt_group_sched: false,
    }
}

fn writes(l: &Layout, dir: &str) -> Vec<(String, String)> {
    l.dirs.iter().find(|d| d.path == Path::new(dir)).unwrap_or_else(|| panic!("no {dir}")).writes.clone()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn v1_mirrors_the_tree_under_cpu_and_cpuset_with_shares_and_quota_in_us() {
    let (s, p) = setup(FILE);
    let l = layout(&s, &p, &v1(false), 77).unwrap().unwrap();
    let cpu = "/sys/fs/cgroup/cpu/schedlab-77";
    let set = "/sys/fs/cgroup/cpuset/schedlab-77";
    // Parents first; the v1 names of the v2 values.
    let order: Vec<String> = l.dir_paths();
    assert_eq!(
        order,
        [
            cpu.to_string(),
            format!("{cpu}/pin"),
            format!("{cpu}/web"),
            format!("{cpu}/web/api"),
            set.to_string(),
            format!("{set}/pin"),
            format!("{set}/web"),
            format!("{set}/web/api")
        ]
    );
    assert_eq!(writes(&l, &format!("{cpu}/web")), pairs(&[("cpu.shares", "3072")]));
    assert_eq!(
        writes(&l, &format!("{cpu}/web/api")),
        pairs(&[("cpu.cfs_period_us", "200000"), ("cpu.cfs_quota_us", "50000")])
    );
    assert_eq!(writes(&l, set), pairs(&[("cpuset.cpus", "0-3"), ("cpuset.mems", "0")]));
    assert_eq!(writes(&l, &format!("{set}/web")), pairs(&[("cpuset.cpus", "0-3"), ("cpuset.mems", "0")]));
    assert_eq!(writes(&l, &format!("{set}/web/api")), pairs(&[("cpuset.cpus", "2-3"), ("cpuset.mems", "0")]));
    let tasks = |d: &str| PathBuf::from(d).join("tasks");
    assert_eq!(l.thread_files[0], [tasks(&format!("{cpu}/web/api")), tasks(&format!("{set}/web/api"))]);
    assert_eq!(l.thread_files[1], [tasks(&format!("{cpu}/pin")), tasks(&format!("{set}/pin"))]);
    assert_eq!(l.thread_files[2], [tasks(cpu)], "a fair thread without a cgroup sits in the scratch parent");
    assert_eq!(l.thread_files[3], [tasks(cpu)]);
    assert!(l.process_files.is_empty(), "v1: the worker itself stays where it is");

    // With RT_GROUP_SCHED an ungrouped RT thread stays out; a grouped one is refused.
    let l = layout(&s, &p, &v1(true), 77).unwrap().unwrap();
    assert!(l.thread_files[3].is_empty());
    let (s, p) = setup(&FILE.replace("name = \"api\"", "name = \"api\"\npolicy = \"SCHED_RR\""));
    let e = layout(&s, &p, &v1(true), 77).unwrap_err().to_string();
    assert!(e.contains("thread `api` is real-time and in cgroup `web/api`") && e.contains("RT_GROUP_SCHED"), "{e}");
}

#[test]
fn a_partition_is_remote_on_v2_lent_its_cpus_from_above_and_refused_on_v1() {
    let text = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.box]\ncpus = \"1-3\"\n\
                [cgroup.\"box/rt\"]\ncpus = \"2-3\"\npartition = \"isolated\"\n\
                [[thread]]\nname = \"a\"\ncgroup = \"box/rt\"\nprogram = [{ run = \"1ms\" }]\n";
    let (s, p) = setup(text);
    let l = layout(&s, &p, &v2(&["cpuset"]), 9).unwrap().unwrap();
    let top = "/sys/fs/cgroup/schedlab-9";
    assert_eq!(writes(&l, top), pairs(&[("cgroup.subtree_control", "+cpuset"), ("cpuset.cpus.exclusive", "2-3")]));
    assert_eq!(
        writes(&l, &format!("{top}/box")),
        pairs(&[
            ("cgroup.type", "threaded"),
            ("cpuset.cpus", "1-3"),
            ("cpuset.cpus.exclusive", "2-3"),
            ("cgroup.subtree_control", "+cpuset")
        ])
    );
    let rt = l.dirs.iter().find(|d| d.path == Path::new(&format!("{top}/box/rt"))).unwrap();
    assert_eq!(
        rt.writes,
        pairs(&[
            ("cgroup.type", "threaded"),
            ("cpuset.cpus", "2-3"),
            ("cpuset.cpus.exclusive", "2-3"),
            ("cpuset.cpus.partition", "isolated")
        ])
    );
    assert_eq!(rt.checks, pairs(&[("cpuset.cpus.partition", "isolated")]), "an invalid partition stops the run");
    let e = layout(&s, &p, &v1(false), 9).unwrap_err().to_string();
    assert!(e.contains("cgroup `box/rt` is a cpuset partition, which needs cgroup v2"), "{e}");
}

#[test]
fn v2_uses_threaded_groups_in_a_scratch_domain_and_needs_delegated_controllers() {
    let (s, p) = setup(FILE);
    let e = layout(&s, &p, &v2(&["cpu", "memory"]), 5).unwrap_err().to_string();
    assert!(e.contains("`cpuset` controller") && e.contains("echo +cpuset"), "{e}");
    let l = layout(&s, &p, &v2(&["cpuset", "cpu", "io"]), 5).unwrap().unwrap();
    let top = "/sys/fs/cgroup/schedlab-5";
    assert_eq!(writes(&l, top), pairs(&[("cgroup.subtree_control", "+cpu +cpuset")]));
    assert_eq!(l.process_files, [PathBuf::from(top).join("cgroup.procs")]);
    assert_eq!(
        writes(&l, &format!("{top}/web")),
        pairs(&[("cgroup.type", "threaded"), ("cpu.weight", "300"), ("cgroup.subtree_control", "+cpu +cpuset")])
    );
    assert_eq!(
        writes(&l, &format!("{top}/web/api")),
        pairs(&[("cgroup.type", "threaded"), ("cpu.max", "50000 200000"), ("cpuset.cpus", "2-3")])
    );
    assert_eq!(l.thread_files[0], [PathBuf::from(format!("{top}/web/api/cgroup.threads"))]);
    assert!(l.thread_files[2].is_empty(), "v2: an ungrouped thread is in the scratch domain with its process");
    assert_eq!(l.cpu_dirs[2], Some(PathBuf::from(format!("{top}/web/api"))));
}

#[test]
fn v2_refuses_sessions_with_cgroups_where_the_domain_is_a_cpu_group() {
    let text = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.pin]\ncpus = \"1\"\n[[thread]]\nname = \"a\"\ncgroup = \"pin\"\nprogram = [{ run = \"1ms\" }]\n[[thread]]\nname = \"b\"\nsession = \"s\"\nprogram = [{ run = \"1ms\" }]\n";
    let (s, p) = setup(text);
    let e = layout(&s, &p, &v2(&["cpu", "cpuset"]), 4).unwrap_err().to_string();
    assert!(e.contains("sessions and cgroups") && e.contains("autogroup"), "{e}");
    assert!(layout(&s, &p, &v2(&["cpuset"]), 4).is_ok(), "without cpu at the root the domain is no cpu group");
    assert!(layout(&s, &p, &v1(false), 4).is_ok(), "v1 leaves the cpu hierarchy alone for a cpuset");
}

#[test]
fn cpuset_only_files_leave_the_cpu_controller_alone() {
    let text = "topology = \"smt-2x2\"\nduration = \"1s\"\n[cgroup.pin]\ncpus = \"1\"\n[[thread]]\nname = \"a\"\ncgroup = \"pin\"\nprogram = [{ run = \"1ms\" }]\n[[thread]]\nname = \"b\"\nprogram = [{ run = \"1ms\" }]\n";
    let (s, p) = setup(text);
    let l = layout(&s, &p, &v1(false), 9).unwrap().unwrap();
    assert!(l.dirs.iter().all(|d| d.path.starts_with("/sys/fs/cgroup/cpuset")), "{:?}", l.dirs);
    assert_eq!(l.thread_files[0], [PathBuf::from("/sys/fs/cgroup/cpuset/schedlab-9/pin/tasks")]);
    assert!(l.thread_files[1].is_empty(), "the ungrouped thread keeps the runner's group (and autogroup)");
    assert_eq!(l.cpu_dirs, [None]);
}

#[test]
fn only_scratch_cgroups_are_ever_removed() {
    for ok in ["/sys/fs/cgroup/cpu/schedlab-12", "/sys/fs/cgroup/schedlab-3/web/api"] {
        assert!(removable(Path::new(ok)), "{ok}");
    }
    for bad in [
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup/cpu/user.slice",
        "/sys/fs/cgroup/schedlab-/x",
        "/sys/fs/cgroup/schedlab-1x",
        "/sys/fs/cgroup/schedlab-1/../../etc",
        "/tmp/schedlab-1",
        "sys/fs/cgroup/schedlab-1",
    ] {
        assert!(!removable(Path::new(bad)), "{bad}");
    }
    let e = remove_dirs(&["/sys/fs/cgroup/schedlab-1".into(), "/etc".into()]).unwrap_err();
    assert!(e.is_refusal() && e.to_string().contains("`/etc`"), "{e}");
    // Already gone is fine.
    remove_dirs(&["/sys/fs/cgroup/schedlab-999999999/none".into()]).unwrap();
}
