//! Every integration test, in one binary: the harness (`common/`) compiles
//! once, links once, and libtest runs the tests of all modules in one pool,
//! so a module that waits on a camera or a clock leaves the processor to
//! the others. One module a file, named after what it tests; run one with
//! `cargo test --test tests motion::`, one test with its full name.
//!
//! `tests/run.sh` runs them in two pools side by side, `classify::`, `busy::` and
//! `bench_smoke::` (which compute) in the smaller (docs/testing.md says
//! why, and how many threads), then `slow_clients::` alone (it times the
//! node against load it makes itself), then those that need what the
//! background builds: `arm::` (the board binaries), `quick_start::` and
//! the benchmark's motion part.

mod common;

mod alerts;
mod alerts_ui;
mod api;
mod arm;
mod bench_smoke;
mod busy;
mod classify;
mod clips;
mod clock;
mod cloud;
mod events;
mod footage;
mod home_assistant;
mod https;
mod install;
mod live_view;
mod motion;
mod mqtt;
mod online;
mod onvif;
mod onvif_events;
mod package;
mod probe;
mod quick_start;
mod recording;
mod relay;
mod settings;
mod slow_clients;
mod snapshot;
mod ui;
mod views;
