//! `nvr-standin relay`, `nvr-standin silent-camera` or `nvr-standin
//! onvif-device HOST USER`: one stand-in of this crate, for a program that
//! cannot link it (the benchmark: `benches/harness/standins.py`). It listens
//! on a free port (of 127.0.0.1; the ONVIF device's of HOST), prints `port
//! N`, and runs until its standard input closes, then exits 0; so it ends
//! with whoever started it, however that one ends. The silent camera also
//! prints `accepted N` (the count so far) for each connection it takes,
//! which is how the benchmark knows its probes are waiting on it.
//!
//! The ONVIF device wants USER's WS-Security UsernameToken, the password
//! taken from the environment (`NVR_STANDIN_PASSWORD`), not the command line
//! that other local users can read. Each line `motion true` or `motion
//! false` on its standard input it says to every subscription (IsMotion),
//! and prints `said MS`: the moment its message carries, in milliseconds
//! since the Unix epoch.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

use nvr_standins::onvif_device::{Auth, Device};
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
        Some("onvif-device") => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let (Some(host), Some(user), Ok(password)) = (
                args.first(),
                args.get(1),
                std::env::var("NVR_STANDIN_PASSWORD"),
            ) else {
                eprintln!("usage: NVR_STANDIN_PASSWORD=… nvr-standin onvif-device HOST USER");
                return ExitCode::from(2);
            };
            let device = Device::start(host, Auth::UsernameToken, user, &password, &[]);
            say(&format!("port {}", device.port));
            for line in io::stdin().lock().lines() {
                let moving = match line.as_deref().map(str::trim) {
                    Ok("motion true") => true,
                    Ok("motion false") => false,
                    Ok(other) => {
                        eprintln!("nvr-standin onvif-device: unknown command {other:?}");
                        continue;
                    }
                    Err(_) => break,
                };
                let at = device.motion(moving).duration_since(UNIX_EPOCH);
                say(&format!("said {}", at.unwrap_or_default().as_millis()));
            }
        }
        _ => {
            eprintln!("usage: nvr-standin relay|silent-camera|onvif-device HOST USER");
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
