//! Whether the kernel says the wall clock is synchronised (`adjtimex`).

/// True when NTP (or another time service) has synchronised the system's
/// clock and keeps it so: `adjtimex` read without changing anything answers
/// other than `TIME_ERROR`, as `timedatectl`'s "System clock synchronized"
/// does. Setting the clock by hand, or reading it from the RTC at boot,
/// leaves it unsynchronised until a time service answers. False when the
/// call fails.
pub fn synchronised() -> bool {
    // SAFETY: all-zero is a valid timex (modes 0: read only), and adjtimex
    // writes only into it.
    let mut timex: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut timex) };
    state >= 0 && state != libc::TIME_ERROR
}
