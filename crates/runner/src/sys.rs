//! Thin wrappers over the Linux calls the runner needs and std does not give:
//! `sched_setattr`, affinity, thread names, eventfds, pthread mutexes with a
//! protocol, absolute monotonic sleeps. Each returns `io::Error` from errno so
//! callers can say what failed and why.

use std::cell::UnsafeCell;
use std::io;

/// `struct sched_attr` as of Linux 5.3 (`SCHED_ATTR_SIZE_VER1`, 56 bytes, with
/// the uclamp fields); libc's is the 48-byte VER0 layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    pub size: u32,
    pub policy: u32,
    pub flags: u64,
    pub nice: i32,
    pub priority: u32,
    /// SCHED_DEADLINE runtime, or the custom EEVDF slice for fair policies (6.12+).
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
    pub util_min: u32,
    pub util_max: u32,
}

pub const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
/// `SCHED_FLAG_RECLAIM` in `sched_attr.sched_flags` (uapi linux/sched.h):
/// a deadline task reclaims unused bandwidth (GRUB).
pub const SCHED_FLAG_RECLAIM: u64 = 0x02;
/// `SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS`: change only what the
/// other flags name.
pub const SCHED_FLAG_KEEP_ALL: u64 = 0x08 | 0x10;
/// `SCHED_FLAG_UTIL_CLAMP_MIN`: set `sched_util_min` (CONFIG_UCLAMP_TASK).
pub const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
/// `SCHED_FLAG_UTIL_CLAMP_MAX`: set `sched_util_max` (CONFIG_UCLAMP_TASK).
pub const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;

/// Whether this kernel takes utilisation clamps: re-set the calling
/// thread's own clamps to what `sched_getattr()` reports, changing nothing
/// else (SCHED_FLAG_KEEP_ALL). A kernel without CONFIG_UCLAMP_TASK refuses
/// the clamp flags with EOPNOTSUPP; that error is returned.
pub fn uclamp_supported() -> io::Result<()> {
    let mut attr = sched_getattr(0)?;
    attr.flags = SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
    sched_setattr(0, &attr)
}

/// `sched_setattr(tid, attr, 0)`; `tid` 0 is the calling thread.
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> io::Result<()> {
    let mut a = *attr;
    a.size = SCHED_ATTR_SIZE;
    // SAFETY: `a` is a valid, properly sized sched_attr for the duration of the call.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &a as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `sched_getattr(tid)`; `tid` 0 is the calling thread.
pub fn sched_getattr(tid: i32) -> io::Result<SchedAttr> {
    let mut a = SchedAttr::default();
    // SAFETY: the kernel writes at most `SCHED_ATTR_SIZE` bytes into `a`.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut a as *mut SchedAttr, SCHED_ATTR_SIZE, 0u32) };
    if r == 0 {
        Ok(a)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pin the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET only writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {c} is beyond CPU_SETSIZE")));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// The CPUs this process may run on (its affinity, which a cpuset cgroup or
/// `taskset` may have narrowed).
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: as in `set_affinity`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Set the calling thread's comm (at most 15 bytes; longer names are cut).
pub fn set_comm(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

/// Kernel thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::gettid() }
}

/// CLOCK_MONOTONIC in ns: the clock `trace_clock=mono` stamps events with.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID): time it
/// was preempted does not count.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in ns (for `pthread_mutex_timedlock`, which only knows it).
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

/// Sleep until CLOCK_MONOTONIC reaches `ns` (`clock_nanosleep` TIMER_ABSTIME,
/// restarted after signals).
pub fn sleep_until(ns: u64) {
    let ts = timespec(ns);
    // SAFETY: `ts` is valid; the remaining-time pointer may be null with TIMER_ABSTIME.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
}

/// schbench's futex as a binary semaphore (`fpost()` / `fwait()` of
/// schbench.c, main@24e32b8): 0 is blocked, 1 posted; the syscalls are
/// made only when the compare-and-swap says they are needed, as there.
#[derive(Default)]
pub struct Futex(std::sync::atomic::AtomicU32);

impl Futex {
    fn futex(&self, op: libc::c_int, val: u32) -> libc::c_long {
        // SAFETY: the word is a valid, aligned u32 that outlives the call;
        // no timeout, no second word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            )
        }
    }

    /// `fpost()`: 0 → 1, and `FUTEX_WAKE` one waiter only if that succeeded.
    pub fn post(&self) -> io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.0.compare_exchange(0, 1, SeqCst, SeqCst).is_ok() && self.futex(libc::FUTEX_WAKE, 1) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `fwait()`: take a post (1 → 0), else `FUTEX_WAIT` while the word is
    /// 0 and try again. Stops waiting once `stop()` says so (the runner's
    /// stop posts every futex: [`Futex::wake_all`]).
    pub fn wait(&self, stop: impl Fn() -> bool) -> io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        while self.0.compare_exchange(1, 0, SeqCst, SeqCst).is_err() {
            if stop() {
                return Ok(());
            }
            if self.futex(libc::FUTEX_WAIT, 0) < 0 {
                let e = io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// A plain store of 0 (schbench's `td->futex = FUTEX_BLOCKED`).
    pub fn reset(&self) {
        self.0.store(0, std::sync::atomic::Ordering::SeqCst);
    }

    /// Post the word and wake every waiter (the runner's stop).
    pub fn wake_all(&self) {
        self.0.store(1, std::sync::atomic::Ordering::SeqCst);
        self.futex(libc::FUTEX_WAKE, i32::MAX as u32);
    }
}

/// A blocking eventfd with counter semantics (`read` takes the whole count).
pub struct EventFd(libc::c_int);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(EventFd(fd))
        }
    }

    /// `write(fd, &count, 8)`: adds to the counter and wakes a reader.
    pub fn signal(&self, count: u64) -> io::Result<()> {
        // SAFETY: writes 8 bytes from a valid u64.
        let r = unsafe { libc::write(self.0, &count as *const u64 as *const libc::c_void, 8) };
        if r == 8 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Blocking `read`: sleeps until the counter is non-zero, returns and clears it.
    pub fn wait(&self) -> io::Result<u64> {
        let mut v = 0u64;
        loop {
            // SAFETY: reads 8 bytes into a valid u64.
            let r = unsafe { libc::read(self.0, &mut v as *mut u64 as *mut libc::c_void, 8) };
            if r == 8 {
                return Ok(v);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

/// A pthread mutex, plain or `PTHREAD_PRIO_INHERIT` (the kernel's rt_mutex
/// through FUTEX_LOCK_PI, which is what emits `sched_pi_setprio`). Boxed so
/// it never moves after `pthread_mutex_init`.
pub struct PthreadMutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Sync for PthreadMutex {}
// SAFETY: as above; it is not tied to the creating thread.
unsafe impl Send for PthreadMutex {}

/// What a timed lock attempt ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum LockOutcome {
    Locked,
    TimedOut,
}

impl PthreadMutex {
    pub fn new(pi: bool) -> io::Result<PthreadMutex> {
        let m = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        // SAFETY: attr is initialised before use and destroyed after; the mutex
        // lives in a Box that is never moved out of.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            let check = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) };
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let proto = if pi { libc::PTHREAD_PRIO_INHERIT } else { libc::PTHREAD_PRIO_NONE };
            let r = check(libc::pthread_mutexattr_setprotocol(&mut attr, proto))
                .and_then(|()| check(libc::pthread_mutex_init(m.get(), &attr)));
            libc::pthread_mutexattr_destroy(&mut attr);
            r?;
        }
        Ok(PthreadMutex { m })
    }

    /// Lock, giving up at CLOCK_REALTIME `deadline_ns`.
    pub fn lock_until(&self, deadline_ns: u64) -> io::Result<LockOutcome> {
        let ts = timespec(deadline_ns);
        // SAFETY: the mutex was initialised in `new` and is pinned in its Box.
        match unsafe { libc::pthread_mutex_timedlock(self.m.get(), &ts) } {
            0 => Ok(LockOutcome::Locked),
            libc::ETIMEDOUT => Ok(LockOutcome::TimedOut),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    fn raw(&self) -> *mut libc::pthread_mutex_t {
        self.m.get()
    }

    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as in `lock_until`; callers unlock only what they hold.
        match unsafe { libc::pthread_mutex_unlock(self.m.get()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: no thread uses the mutex any more (the worker joined them).
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
    }
}

/// A pthread condition variable on CLOCK_MONOTONIC (so a wait's deadline
/// is the run's own clock). Boxed so it never moves after `pthread_cond_init`.
pub struct PthreadCond {
    c: Box<UnsafeCell<libc::pthread_cond_t>>,
}

// SAFETY: a pthread condition variable is made to be shared between threads.
unsafe impl Sync for PthreadCond {}
// SAFETY: as above.
unsafe impl Send for PthreadCond {}

/// What a timed wait ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Signalled (or woken spuriously, which `pthread_cond_wait` allows and
    /// rt-app does not guard against either).
    Woken,
    TimedOut,
}

impl PthreadCond {
    pub fn new() -> io::Result<PthreadCond> {
        let c = Box::new(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER));
        // SAFETY: attr is initialised before use and destroyed after; the
        // condition lives in a Box that is never moved out of.
        unsafe {
            let mut attr: libc::pthread_condattr_t = std::mem::zeroed();
            let check = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) };
            check(libc::pthread_condattr_init(&mut attr))?;
            let r = check(libc::pthread_condattr_setclock(&mut attr, libc::CLOCK_MONOTONIC))
                .and_then(|()| check(libc::pthread_cond_init(c.get(), &attr)));
            libc::pthread_condattr_destroy(&mut attr);
            r?;
        }
        Ok(PthreadCond { c })
    }

    /// `pthread_cond_timedwait(cond, mutex, deadline)`: `mutex` must be held
    /// by the caller; it is held again when this returns, whatever the outcome.
    pub fn wait_until(&self, mutex: &PthreadMutex, deadline_ns: u64) -> io::Result<WaitOutcome> {
        let ts = timespec(deadline_ns);
        // SAFETY: both objects were initialised in their `new` and are pinned
        // in their Boxes; the caller holds `mutex`.
        match unsafe { libc::pthread_cond_timedwait(self.c.get(), mutex.raw(), &ts) } {
            0 => Ok(WaitOutcome::Woken),
            libc::ETIMEDOUT => Ok(WaitOutcome::TimedOut),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    pub fn signal(&self) -> io::Result<()> {
        // SAFETY: initialised in `new`, pinned in its Box.
        match unsafe { libc::pthread_cond_signal(self.c.get()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    pub fn broadcast(&self) -> io::Result<()> {
        // SAFETY: initialised in `new`, pinned in its Box.
        match unsafe { libc::pthread_cond_broadcast(self.c.get()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

impl Drop for PthreadCond {
    fn drop(&mut self) {
        // SAFETY: no thread waits on it any more (the worker joined them).
        unsafe { libc::pthread_cond_destroy(self.c.get()) };
    }
}

/// Number of threads of this process (`Threads:` in /proc/self/status).
pub fn thread_count() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok())
}

/// `uname -r`.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_attr_is_the_56_byte_ver1_layout() {
        assert_eq!(SCHED_ATTR_SIZE, 56);
    }

    #[test]
    fn eventfd_has_counter_semantics() {
        let e = EventFd::new().unwrap();
        e.signal(2).unwrap();
        e.signal(3).unwrap();
        assert_eq!(e.wait().unwrap(), 5);
    }

    #[test]
    fn cond_wait_is_woken_by_a_signal_and_times_out_without_one() {
        let pair = std::sync::Arc::new((PthreadMutex::new(false).unwrap(), PthreadCond::new().unwrap()));
        let (m, c) = &*pair;
        assert_eq!(m.lock_until(realtime_ns() + 1_000_000_000).unwrap(), LockOutcome::Locked);
        assert_eq!(c.wait_until(m, now_ns() + 20_000_000).unwrap(), WaitOutcome::TimedOut);
        let p2 = pair.clone();
        let signaller = std::thread::spawn(move || {
            let (m, c) = &*p2;
            // Taking the mutex means the waiter is inside the wait.
            assert_eq!(m.lock_until(realtime_ns() + 5_000_000_000).unwrap(), LockOutcome::Locked);
            c.signal().unwrap();
            m.unlock().unwrap();
        });
        let t0 = now_ns();
        assert_eq!(c.wait_until(m, now_ns() + 5_000_000_000).unwrap(), WaitOutcome::Woken);
        assert!(now_ns() - t0 < 4_000_000_000, "woken by the signal, not the deadline");
        m.unlock().unwrap();
        signaller.join().unwrap();
    }

    #[test]
    fn timed_lock_times_out_when_held() {
        for pi in [false, true] {
            let m = std::sync::Arc::new(PthreadMutex::new(pi).unwrap());
            assert_eq!(m.lock_until(realtime_ns() + 1_000_000_000).unwrap(), LockOutcome::Locked);
            let m2 = m.clone();
            let r = std::thread::spawn(move || m2.lock_until(realtime_ns() + 20_000_000).unwrap()).join().unwrap();
            assert_eq!(r, LockOutcome::TimedOut);
            m.unlock().unwrap();
        }
    }
}
