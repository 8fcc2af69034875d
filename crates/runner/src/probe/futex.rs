//! The two futex operations the probes need, on an `AtomicU32`.

use std::io;
use std::sync::atomic::AtomicU32;

/// How a [`wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// Slept and was woken by FUTEX_WAKE.
    Woken,
    /// The word no longer held the expected value: never slept.
    Changed,
    TimedOut,
    /// A signal, or another error: the caller rechecks its word.
    Other,
}

/// Sleep while `*word == expected`, at most `timeout_ns`.
pub fn wait(word: &AtomicU32, expected: u32, timeout_ns: u64) -> Waited {
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
    // SAFETY: `word` is a live, aligned u32 for the call; the timeout is relative.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        )
    };
    if r == 0 {
        return Waited::Woken;
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Waited::Changed,
        Some(libc::ETIMEDOUT) => Waited::TimedOut,
        _ => Waited::Other,
    }
}

/// Wake up to `n` waiters on `word`.
pub fn wake(word: &AtomicU32, n: i32) {
    // SAFETY: as in `wait`; FUTEX_WAKE only reads the address.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}
