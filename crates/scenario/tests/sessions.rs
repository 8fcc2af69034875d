//! Threads' `session` keys and the top-level `autogroup`: what they parse
//! to, and what a process boundary between sessions refuses.

mod common;
use common::{expect_err, parse};

const HEAD: &str = "topology = \"smt-2x2\"\nduration = \"1s\"\n";

#[test]
fn sessions_are_numbered_by_first_use_and_autogroup_is_kept_with_its_line() {
    let s = parse(&format!(
        "{HEAD}autogroup = false\n[[thread]]\nname = \"a\"\nsession = \"x\"\nprogram = [{{ run = \"1ms\" }}]\n\
         [[thread]]\nname = \"b\"\ninstances = 2\nsession = \"y\"\nprogram = [{{ run = \"1ms\" }}]\n\
         [[thread]]\nname = \"c\"\nsession = \"x\"\nprogram = [{{ run = \"1ms\" }}]\n\
         [[thread]]\nname = \"d\"\nprogram = [{{ run = \"1ms\" }}]\n"
    ))
    .unwrap();
    let names: Vec<&str> = s.sessions.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["x", "y"]);
    let got: Vec<Option<usize>> = s.threads.iter().map(|t| t.session).collect();
    assert_eq!(got, [Some(0), Some(1), Some(1), Some(0), None]);
    let a = s.autogroup.unwrap();
    assert_eq!((a.value, a.line), (false, 3));
    assert!(parse(&format!("{HEAD}[[thread]]\nname = \"a\"\nprogram = [{{ run = \"1ms\" }}]\n"))
        .unwrap()
        .autogroup
        .is_none());
}

#[test]
fn what_a_process_boundary_breaks_is_refused_where_written() {
    // Line 5 is the first thread's `session`.
    let two = |a: &str, b: &str| {
        format!("{HEAD}[[thread]]\nname = \"a\"\nsession = \"x\"\nprogram = [{a}]\n[[thread]]\nname = \"b\"\nprogram = [{b}]\n")
    };
    expect_err(
        &two("{ signal = \"e\" }", "{ wait = \"e\" }"),
        9,
        "\"e\"",
        "`e` is used by thread `a` (session `x`) and thread `b` (the runner's session): sessions are separate processes",
    );
    expect_err(&two("{ post = \"f\" }", "{ poll = \"f\" }"), 9, "\"f\"", "`f` is used by thread `a`");
    // Objects a session keeps to itself are fine.
    assert!(parse(&two("{ lock = \"m\" }, { unlock = \"m\" }", "{ run = \"1ms\" }")).is_ok());
    expect_err(
        &format!("{HEAD}[[thread]]\nname = \"a\"\nsession = \"a b\"\nprogram = [{{ run = \"1ms\" }}]\n"),
        5,
        "\"a b\"",
        "' ' is not allowed",
    );
    expect_err(
        &format!("{HEAD}[[thread]]\nname = \"a\"\nsession = \"\"\nprogram = [{{ run = \"1ms\" }}]\n"),
        5,
        "\"\"",
        "expected a name of 1 to 64 bytes",
    );
    expect_err(
        &format!("{HEAD}[[thread]]\nname = \"a\"\nsession = \"x\"\nprogram = [{{ fork = \"c\" }}, {{ sleep = \"1ms\" }}]\n[[thread]]\nname = \"c\"\ninstances = 0\nloop = 1\nprogram = [{{ run = \"1ms\" }}]\n"),
        6,
        "\"c\"",
        "runs in session `x` and forks",
    );
    expect_err(
        &format!("{HEAD}[cgroup.g]\nweight = 50\n[[thread]]\nname = \"a\"\ncgroup = \"g\"\nsession = \"x\"\nprogram = [{{ run = \"1ms\" }}]\n"),
        8,
        "\"x\"",
        "a cpu-controller group",
    );
    // A cpuset is no cpu-controller group: the session still counts.
    assert!(parse(&format!("{HEAD}[cgroup.g]\ncpus = \"1\"\n[[thread]]\nname = \"a\"\ncgroup = \"g\"\nsession = \"x\"\nprogram = [{{ run = \"1ms\" }}]\n")).is_ok());
    expect_err(
        &format!("{HEAD}autogroup = \"yes\"\n[[thread]]\nname = \"a\"\nprogram = [{{ run = \"1ms\" }}]\n"),
        3,
        "\"yes\"",
        "expected a boolean",
    );
}

#[test]
fn a_session_table_sets_its_autogroup_s_nice_and_must_name_a_used_session() {
    let body = "[[thread]]\nname = \"a\"\nsession = \"x\"\nprogram = [{ run = \"1ms\" }]\n";
    let s = parse(&format!("{HEAD}[session.x]\nnice = 10\n{body}")).unwrap();
    assert_eq!((s.sessions[0].name.as_str(), s.sessions[0].nice), ("x", 10));
    assert_eq!(parse(&format!("{HEAD}{body}")).unwrap().sessions[0].nice, 0, "nice 0 by default, as setsid() makes it");
    expect_err(
        &format!("{HEAD}[session.x]\nnice = 20\n{body}"),
        4,
        "20",
        "`nice` = 20 is out of range: expected -20..19",
    );
    expect_err(&format!("{HEAD}[session.y]\n{body}"), 3, "y", "[session.y]: no thread runs in it");
    expect_err(&format!("{HEAD}[session.x]\nweight = 3\n{body}"), 4, "weight", "unknown field `weight`");
}
