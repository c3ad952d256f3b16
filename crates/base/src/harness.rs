//! What the tests' harnesses (the fMP4 mutations') measure and say that std
//! has no call for: a thread's CPU time, and stderr written to from inside
//! an allocator.

use std::time::Duration;

/// The CPU time the calling thread has taken.
pub fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a timespec to write to; this clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Writes `parts` straight to stderr: nothing allocates, and the test
/// harness does not capture it (a capture is lost when the test aborts).
pub fn write_stderr(parts: &[&[u8]]) {
    for part in parts {
        // SAFETY: a buffer valid for its length across the call.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
}
