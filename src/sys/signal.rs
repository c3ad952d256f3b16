//! Stopping on a signal: SIGTERM (from the init system) and SIGINT (Ctrl-C)
//! set a flag that the server's loop looks at.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set when SIGTERM or SIGINT arrives.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// From now on SIGTERM and SIGINT set the flag returned, instead of
/// ending the process.
pub fn stop_flag() -> &'static AtomicBool {
    let handler: extern "C" fn(libc::c_int) = on_stop_signal;
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(signal, handler as libc::sighandler_t) };
    }
    &STOP
}
