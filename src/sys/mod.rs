//! The node's calls into the operating system that std does not make: every
//! `libc` call of the node is here, each behind a safe function, and this
//! folder imports nothing of the crate.
//!
//! - `clock`: whether the kernel says the wall clock is synchronised
//!   (`adjtimex`).
//! - `data_file`: a stored file below the data folder, opened without
//!   following links (`openat`, `O_NOFOLLOW`).
//! - `filesystem`: free space (`statvfs`), tmpfs (`statfs`), write access
//!   (`faccessat`), one file system or two, durable folder entries.
//! - `poll`: waiting on several descriptors at once.
//! - `process`: a supervised child's death with its thread, signals to its
//!   group, a pipe that never blocks; the limit of open files.
//! - `signal`: SIGTERM and SIGINT as a stop flag.
//! - `net`: socket options std lacks, the IPv4 interfaces, the host name.

pub mod clock;
pub mod data_file;
pub mod filesystem;
pub mod net;
pub mod poll;
pub mod process;
pub mod signal;
