//! Sweep axes beyond feature toggles: explicit seeds, another machine per
//! setting, per-group nice and slice, and `[[axis]]` cross products; each
//! bad input refused at its file:line.

use std::path::{Path, PathBuf};

use schedlab_sweep::{run_sweep, Sweep};
use schedlab_topology::{parse_cpulist, InputError};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn parse(text: &str) -> Result<Sweep, InputError> {
    Sweep::from_toml_str("s.toml", text, &scenarios())
}

#[track_caller]
fn bad(text: &str, line: usize, msg: &str) {
    let e = parse(text).map(|_| ()).expect_err(text);
    assert_eq!((e.path.as_str(), e.line), ("s.toml", line), "{e}");
    assert!(e.message.contains(msg), "`{}` lacks `{msg}`", e.message);
}

const HEAD: &str = "scenario = \"asym_min.toml\"\n";

#[test]
fn explicit_seeds() {
    let s = parse(&format!("{HEAD}seeds = [5, 1, 9]\n[[setting]]\nname = \"x\"\n")).unwrap();
    assert_eq!((s.rounds(), s.seeds()), (3, &[5, 1, 9][..]));
    assert_eq!(s.jobs(), 3);
    // --rounds shortens a listed set of seeds, and lengthens consecutive ones.
    let mut listed = s.clone();
    listed.set_rounds(2).unwrap();
    assert_eq!((listed.rounds(), listed.seeds(), listed.jobs()), (2, &[5, 1][..], 2));
    assert!(listed.set_rounds(3).unwrap_err().to_string().contains("lists only 2 seeds"));
    let mut counted = parse(&format!("{HEAD}seed = 4\nrounds = 2\n[[setting]]\nname = \"x\"\n")).unwrap();
    assert_eq!(counted.seeds(), [4, 5]);
    counted.set_rounds(4).unwrap();
    assert_eq!((counted.rounds(), counted.seeds()), (4, &[4, 5, 6, 7][..]));
    counted.set_rounds(1).unwrap();
    assert_eq!(counted.seeds(), [4]);
    bad(&format!("{HEAD}seeds = [5, 1, 5]\n[[setting]]\nname = \"x\"\n"), 2, "seed 5 is listed twice");
    bad(&format!("{HEAD}seeds = []\n[[setting]]\nname = \"x\"\n"), 2, "`seeds` lists 0 seeds");
    bad(&format!("{HEAD}seeds = [-1]\n[[setting]]\nname = \"x\"\n"), 2, "negative");
    bad(&format!("{HEAD}rounds = 3\nseeds = [1]\n[[setting]]\nname = \"x\"\n"), 2, "give one or the other");
    bad(&format!("{HEAD}seed = 3\nseeds = [1]\n[[setting]]\nname = \"x\"\n"), 2, "give one or the other");
}

#[test]
fn topology_nice_and_slice_per_setting() {
    let s = parse(&format!(
        "{HEAD}[[setting]]\nname = \"7950x\"\nnice = {{ worker = 5 }}\nslice = {{ worker = \"3ms\" }}\n\
         [[setting]]\nname = \"qemu\"\ntopology = \"qemu-4\"\naffinity = {{ worker = \"0-1\", waker = 3 }}\n"
    ))
    .unwrap();
    let [big, small] = &s.settings[..] else { panic!() };
    assert_eq!((big.topology.name.as_str(), small.topology.name.as_str()), ("ryzen-7950x", "qemu-4"));
    assert_eq!(small.scenario.topology.name, "qemu-4");
    assert_eq!(small.allowed_cpus, parse_cpulist("0-1").unwrap());
    assert_eq!(small.top_cpu, None, "qemu-4 has no ITMT ranks");
    for t in &big.scenario.threads {
        let worker = t.group == "worker";
        assert_eq!((t.nice, t.slice_ns), if worker { (5, Some(3_000_000)) } else { (0, None) }, "{}", t.name);
    }
    assert!(small.scenario.threads.iter().all(|t| t.nice == 0 && t.slice_ns.is_none()));
    assert_ne!(parse(&format!("{HEAD}[[setting]]\nname = \"x\"\n")).unwrap().source_hash, s.source_hash);

    let set = |body: &str| format!("{HEAD}[[setting]]\nname = \"x\"\n{body}\n");
    bad(&set("topology = \"qemu-4\""), 4, "`topology` qemu-4 has CPUs 0-3, but thread `worker-0` is bound to 4-7");
    bad(&set("topology = \"nope-9\""), 4, "no topology preset or file named `nope-9`");
    bad(&set("nice = { worker = 20 }"), 4, "`nice` = 20: expected -20..19");
    bad(&set("nice = { nobody = 1 }"), 4, "no thread group `nobody`");
    bad(&set("slice = { worker = \"1s\" }"), 4, "`slice` is out of range");
    bad(&set("slice = { worker = true }"), 4, "`slice`: expected a duration");
}

#[test]
fn axes_cross_every_setting() {
    let text = format!(
        "{HEAD}rounds = 2\nduration = \"50ms\"\n\
         [[setting]]\nname = \"defaults\"\n\
         [[setting]]\nname = \"NDD\"\nfeatures = [\"NO_DELAY_DEQUEUE\"]\n\
         [[axis]]\nname = \"machine\"\nvalues = [\n  {{ name = \"7950x\" }},\n  {{ name = \"qemu-4\", topology = \"qemu-4\", affinity = {{ worker = \"0-1\", waker = 3 }} }},\n]\n\
         [[axis]]\nvalues = [{{ name = \"nice 0\" }}, {{ name = \"nice 5\", nice = {{ worker = 5 }}, features = [\"NO_RUN_TO_PARITY\"] }}]\n"
    );
    let s = parse(&text).unwrap();
    let names: Vec<&str> = s.settings.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "defaults / 7950x / nice 0",
            "defaults / 7950x / nice 5",
            "defaults / qemu-4 / nice 0",
            "defaults / qemu-4 / nice 5",
            "NDD / 7950x / nice 0",
            "NDD / 7950x / nice 5",
            "NDD / qemu-4 / nice 0",
            "NDD / qemu-4 / nice 5",
        ]
    );
    let ndd = &s.settings[7];
    assert_eq!(ndd.features, ["NO_DELAY_DEQUEUE", "NO_RUN_TO_PARITY"], "features add up");
    assert_eq!(ndd.topology.name, "qemu-4");
    assert!(ndd.scenario.threads.iter().filter(|t| t.group == "worker").all(|t| t.nice == 5));

    // It runs, each setting on its machine.
    let r = run_sweep(&s, &|_| {}).unwrap();
    assert_eq!(r.settings[2].topology, "qemu-4");
    assert_eq!(r.settings[2].allowed_cpus, "0-1");
    assert_eq!(r.topology, "ryzen-7950x");
    assert!(r.settings.iter().all(|x| x.runs.len() == 2 && x.handoffs > 0));
    let text = schedlab_report::render(&r);
    assert!(
        text.contains(
            "machine   qemu-4 for defaults / qemu-4 / nice 0; defaults / qemu-4 / nice 5; NDD / qemu-4 / nice 0"
        ),
        "{text}"
    );

    // Conflicts between a setting and an axis value, and empty axes.
    let ax = |setting: &str, value: &str| {
        format!("{HEAD}[[setting]]\nname = \"x\"\n{setting}\n[[axis]]\nvalues = [{{ name = \"v\", {value} }}]\n")
    };
    bad(&ax("itmt = false", "itmt = true"), 6, "`itmt` is set twice");
    bad(&ax("topology = \"smt-2x2\"", "topology = \"qemu-4\""), 6, "`topology` is set twice");
    bad(&ax("nice = { worker = 1 }", "nice = { worker = 2 }"), 6, "`nice` of group `worker` is set twice");
    bad(&ax("", "colour = 1"), 6, "unknown field `colour`");
    bad(&ax("", "fetaures = []"), 6, "(did you mean `features`?)");
    bad(&format!("{HEAD}[[setting]]\nname = \"x\"\n[[axis]]\nvalues = []\n"), 5, "`values` is empty");
    bad(
        &format!("{HEAD}[[setting]]\nname = \"x\"\n[[axis]]\nname = \"machine\"\nvalues = []\n"),
        6,
        "axis `machine`: `values` is empty",
    );
    bad(
        &format!("{HEAD}[[setting]]\nname = \"x\"\n[[axis]]\nname = 3\nvalues = [{{ name = \"a\" }}]\n"),
        5,
        "invalid type",
    );
    bad(
        &format!("{HEAD}[[setting]]\nname = \"x\"\n[[axis]]\nvalues = [{{ name = \"v\" }}, {{ name = \"v\" }}]\n"),
        5,
        "setting `x / v` is defined twice",
    );
}

/// `set = "..."` is the command line's one-line setting (`diff --a`, `vm
/// --setting`): the same text means the same setting in a sweep file.
#[test]
fn one_line_settings_as_on_the_command_line() {
    let keys = parse(&format!(
        "{HEAD}[[setting]]\nname = \"k\"\nitmt = false\nkernel = \"mainline\"\nfeatures = [\"NO_DELAY_DEQUEUE\"]\n"
    ))
    .unwrap();
    let line = parse(&format!("{HEAD}[[setting]]\nname = \"k\"\nset = \"NO_DELAY_DEQUEUE, itmt=0,kernel=mainline\"\n"))
        .unwrap();
    let (k, l) = (&keys.settings[0], &line.settings[0]);
    assert_eq!((&l.features, &l.kernel, &l.features_changed), (&k.features, &k.kernel, &k.features_changed));
    assert!(!l.topology.itmt_enabled && l.features == ["NO_DELAY_DEQUEUE"] && l.kernel == "mainline");
    // Features add up with the table's own; a scalar given twice is refused.
    let both = parse(&format!(
        "{HEAD}[[setting]]\nname = \"b\"\nfeatures = [\"NO_RUN_TO_PARITY\"]\nset = \"NO_DELAY_DEQUEUE\"\n"
    ))
    .unwrap();
    assert_eq!(both.settings[0].features, ["NO_RUN_TO_PARITY", "NO_DELAY_DEQUEUE"]);
    bad(
        &format!("{HEAD}[[setting]]\nname = \"x\"\nitmt = true\nset = \"itmt=0\"\n"),
        5,
        "`itmt` is given both by `set`",
    );
    bad(&format!("{HEAD}[[setting]]\nname = \"x\"\nset = \"itmt=2\"\n"), 4, "expected itmt=0 or itmt=1");
    bad(&format!("{HEAD}[[setting]]\nname = \"x\"\nset = \"NO_SUCH\"\n"), 4, "unknown sched feature `NO_SUCH`");
    // Axis values take it too.
    let ax = parse(&format!(
        "{HEAD}[[setting]]\nname = \"a\"\n[[axis]]\nvalues = [{{ name = \"on\", set = \"itmt=1\" }}, {{ name = \"off\", set = \"itmt=0\" }}]\n"
    ))
    .unwrap();
    let itmt: Vec<bool> = ax.settings.iter().map(|s| s.topology.itmt_enabled).collect();
    assert_eq!(itmt, [true, false]);
}

/// Issue 21: the cross product was built whatever its size (three axes of
/// 100 values: a million settings). It is refused at the first axis first.
#[test]
fn a_cross_product_past_the_limit_is_refused_before_it_is_built() {
    let values = (0..100).map(|i| format!("{{ name = \"v{i}\" }}")).collect::<Vec<_>>().join(", ");
    let mut text = format!("{HEAD}[[setting]]\nname = \"a\"\n");
    for n in 0..3 {
        text.push_str(&format!("[[axis]]\nname = \"n{n}\"\nvalues = [{values}]\n"));
    }
    bad(&text, 4, "make 1000000 rows, more than the limit of 10000");
    // Two axes of 100: 10 000 rows, at the limit, are built.
    let two = text.lines().take(9).collect::<Vec<_>>().join("\n");
    assert_eq!(parse(&two).unwrap().settings.len(), schedlab_sweep::MAX_SETTINGS);
}
