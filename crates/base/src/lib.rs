//! The node's code that needs no I/O, only std (and serde's derive):
//! parsers of what comes from outside (fMP4, HTTP ranges and codings, MQTT
//! packets), the arithmetic of pictures and time (areas, masks, the motion
//! detector, crops, the clock's trust, restart backoff) and of retention.
//! Nothing here reads a file, opens a socket or starts a process.
//!
//! A crate of its own because this is where a board's architecture matters
//! (32-bit `usize`, alignment, float rounding): its unit tests are built for
//! aarch64 and armv7 and run under qemu (`tests/run.sh`) without building
//! the node's SQLite, TLS and HTTP. The node re-exports each module where it
//! belongs (`nvr-node`'s `media::fmp4` is this crate's `media::fmp4`), so
//! the folders mirror the node's.

pub mod classify {
    pub mod crop;
    pub mod regions;
}

pub mod clock {
    pub mod trust;
}

pub mod media {
    pub mod area;
    pub mod fmp4;
    pub mod polygon;
    pub mod restart;
}

pub mod motion {
    pub mod detector;
    pub mod frame;
}

pub mod mqtt {
    pub mod codec;
    pub mod limit;
}

pub mod retention;

pub mod web {
    pub mod encoding;
    pub mod range;
}

#[cfg(any(test, feature = "testing"))]
pub mod harness;
#[cfg(any(test, feature = "testing"))]
pub mod rng;
