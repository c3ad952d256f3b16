//! `nvr-standin relay` or `nvr-standin silent-camera`: one stand-in of this
//! crate, for a program that cannot link it (the benchmark:
//! `benches/harness/standins.py`). It listens on a free port of 127.0.0.1,
//! prints `port N`, and runs until its standard input closes, then exits 0;
//! so it ends with whoever started it, however that one ends. The silent
//! camera also prints `accepted N` (the count so far) for each connection it
//! takes, which is how the benchmark knows its probes are waiting on it.

use std::io::{self, Write};
use std::process::ExitCode;

use nvr_standins::relay::{Options, Relay};
use nvr_standins::silent::SilentCamera;

fn main() -> ExitCode {
    // Each stand-in lives until standard input closes; dropping it stops it.
    match std::env::args().nth(1).as_deref() {
        Some("relay") => {
            let relay = Relay::start_with(Options::program());
            say(&format!("port {}", relay.port));
            until_input_closes();
        }
        Some("silent-camera") => {
            let camera = SilentCamera::start_with(None, |count| say(&format!("accepted {count}")));
            say(&format!("port {}", camera.port));
            until_input_closes();
        }
        _ => {
            eprintln!("usage: nvr-standin relay|silent-camera");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn until_input_closes() {
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
}

/// One line on standard output, flushed: the reader waits for it.
fn say(line: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}
