//! The cgroup v2 mechanics the real runner relies on, on this machine's
//! cgroup2 mount: a scratch domain, threaded children, the process moved
//! into the domain and then one thread into a threaded child, and the
//! directories removed once the process is gone. No controller is
//! involved (this project's CI host delegates none on v2), so the layout is
//! written by hand with the runner's own paths and types rather than by
//! `cgroup::layout`, which would ask for `cpu`.

use std::path::PathBuf;

use schedlab_runner::cgroup::{attach, remove_dirs, Dir, Hierarchy, Layout, SCRATCH_PREFIX};

fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next() == Some("cgroup2")).then(|| PathBuf::from(point))
    })
}

#[test]
fn threads_of_one_process_join_threaded_groups_and_the_groups_go_away_after() {
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root");
        return;
    }
    let Some(root) = cgroup2_mount() else {
        println!("skipped: no cgroup2 mount");
        return;
    };
    let top = root.join(format!("{SCRATCH_PREFIX}{}", std::process::id()));
    let group = top.join("g");
    let layout = Layout {
        hierarchy: Hierarchy::V2 { root: root.clone() },
        dirs: vec![
            Dir { path: top.clone(), writes: Vec::new(), checks: Vec::new() },
            Dir { path: group.clone(), writes: vec![("cgroup.type".into(), "threaded".into())], checks: Vec::new() },
        ],
        process_files: vec![top.join("cgroup.procs")],
        thread_files: vec![vec![group.join("cgroup.threads")]],
        cpu_dirs: vec![None],
        move_files: vec![vec![top.join("cgroup.threads")], vec![group.join("cgroup.threads")]],
    };
    layout.create().unwrap();
    assert_eq!(std::fs::read_to_string(group.join("cgroup.type")).unwrap().trim(), "threaded");

    // A child process (the worker's role): itself into the domain, then one
    // of its threads into the threaded group, each checked from /proc.
    let (rd, wr) = {
        let mut fds = [0; 2];
        // SAFETY: room for two fds.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    };
    // SAFETY: the child only makes syscalls, one thread and a write.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let me = std::process::id() as i32;
        let mut ok = attach(&layout.process_files, me).is_ok();
        let files = layout.thread_files[0].clone();
        let back = layout.move_files[0].clone();
        let seen = std::thread::spawn(move || {
            // SAFETY: plain syscall.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            attach(&files, tid).ok()?;
            let in_group = std::fs::read_to_string(format!("/proc/self/task/{tid}/cgroup")).ok()?;
            // A `cgroup = "/"` move: back into the domain, which takes threads of a threaded subtree.
            attach(&back, tid).ok()?;
            let moved = std::fs::read_to_string(format!("/proc/self/task/{tid}/cgroup")).ok()?;
            Some(in_group + "|" + &moved)
        })
        .join()
        .ok()
        .flatten()
        .unwrap_or_default();
        let main = std::fs::read_to_string(format!("/proc/self/task/{me}/cgroup")).unwrap_or_default();
        let name = top.file_name().unwrap().to_string_lossy().into_owned();
        ok &= main.lines().any(|l| l.starts_with("0::") && l.ends_with(&format!("/{name}")));
        let (in_group, moved) = seen.split_once('|').unwrap_or_default();
        ok &= in_group.lines().any(|l| l.starts_with("0::") && l.ends_with(&format!("/{name}/g")));
        ok &= moved.lines().any(|l| l.starts_with("0::") && l.ends_with(&format!("/{name}")));
        let byte = [ok as u8];
        // SAFETY: writing one byte to the pipe, then leaving without the parent's destructors.
        unsafe {
            libc::write(wr, byte.as_ptr() as *const libc::c_void, 1);
            libc::_exit(0);
        }
    }
    let mut byte = [0u8];
    // SAFETY: reading one byte; reaping our child.
    unsafe {
        libc::close(wr);
        libc::read(rd, byte.as_mut_ptr() as *mut libc::c_void, 1);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
    let dirs = layout.dir_paths();
    remove_dirs(&dirs).unwrap();
    assert!(!top.exists(), "the scratch domain outlived its process");
    assert_eq!(byte[0], 1, "the process or its thread did not land in the domain / the threaded group / back");
}
