//! nvr-node: the local node of a network video recorder appliance. Serves the
//! Local Node API and the browser UI, probes cameras with ffprobe and proxies
//! WHEP live-view offers to the stream relay.

mod api;
mod app;
mod camera;
mod classify;
mod clips;
mod clock;
mod cloud;

mod config;
mod data_file;
mod db;
mod discover;
mod encoding;
mod error;
mod event;
mod filesystem;
mod follow;
mod guard;
mod home_assistant;

mod http;
mod link_state;
mod live;
mod media;
mod monitor;
mod motion;
mod mqtt;
mod neighbours;
mod notices;
mod onvif;
mod prober;
#[cfg(test)]
mod properties;
mod query;
mod range;

mod recording;

mod relay;
mod relay_sync;
mod reply;
mod routes;
mod rtsp_url;
mod sessions;
mod snapshot;
mod static_files;
mod store;
mod tls;
mod uploader;
mod workers;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use app::App;
use config::Config;
use store::Store;

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        None => {}
        Some("--help" | "-h") => {
            print!("{}", config::help());
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            println!("nvr-node {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("nvr-node: unknown argument {other:?}; see nvr-node --help");
            return ExitCode::from(2);
        }
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            log::error!("{message}");
            eprintln!("nvr-node: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let level = config::log_level(|name| std::env::var(name).ok())?;
    simple_logger::SimpleLogger::new()
        .with_level(log::LevelFilter::Warn)
        .with_module_level("nvr_node", level)
        // ureq logs request URLs, whose query carries camera passwords.
        .with_module_level("ureq", log::LevelFilter::Off)
        .init()
        .map_err(|e| e.to_string())?;
    let config = Config::from_vars(|name| std::env::var(name).ok())?;
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| format!("cannot create DATA_DIR {}: {e}", config.data_dir.display()))?;
    let store = Store::open(&config.data_dir).map_err(|e| {
        format!(
            "cannot open the database in {}: {e}",
            config.data_dir.display()
        )
    })?;
    // Uploads a crash cut short start again.
    store
        .reset_uploading()
        .map_err(|e| format!("cannot reset uploads: {e}"))?;
    let listener = http::bind(config.listen_address, config.port).map_err(|e| {
        format!(
            "cannot listen on {}:{}: {e}",
            config.listen_address, config.port
        )
    })?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;

    let (relay_nudges, nudged) = mpsc::channel();
    let app = Arc::new(App::new(&config, store, relay_nudges));
    app.start();
    relay_sync::spawn(app.clone(), nudged);
    monitor::spawn(app.clone(), config.camera_check_interval);
    follow::spawn(app.clone());
    if let Some(cloud_url) = &config.cloud_url {
        cloud::spawn(app.clone(), cloud_url);
        uploader::spawn(app.clone(), cloud_url);
    }
    if let Some(mqtt) = &config.mqtt {
        let node_url = config
            .node_url
            .clone()
            .unwrap_or_else(|| format!("http://{}:{}", config.host_name, address.port()));
        home_assistant::spawn(app.clone(), mqtt, node_url)?;
    }

    println!("listening on http://{address}");
    let _ = std::io::stdout().flush();
    log::info!(
        "nvr-node {} serving as {:?}",
        env!("CARGO_PKG_VERSION"),
        app.node_name
    );
    exit_when_tiny_http_panics();
    // On SIGTERM the recorders finish their segments while requests drain.
    let (recorders_stopped, stopped) = mpsc::channel();
    let stopping = app.clone();
    let stop_recorders = move || {
        let deadline = Instant::now() + STOP_RECORDERS;
        thread::spawn(move || {
            stopping.stop(deadline);
            let _ = recorders_stopped.send(());
        });
    };
    http::serve(listener, app, stop_flag(), stop_recorders)
        .map_err(|e| format!("stopped accepting connections: {e}"))?;
    let _ = stopped.recv_timeout(STOP_RECORDERS);
    log::info!("stopped");
    Ok(())
}

/// tiny_http unwraps in its accept thread (e.g. cloning a socket when file
/// descriptors run out): that thread dies and the node would run on deaf.
/// Exit instead, so the supervisor starts it again.
fn exit_when_tiny_http_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        if info
            .location()
            .is_some_and(|l| l.file().contains("tiny_http"))
        {
            log::error!("stopped accepting connections: the HTTP server failed");
            std::process::exit(1);
        }
    }));
}

/// How long the recorders get to finish their last segments on SIGTERM:
/// within the 5 s the node takes to stop.
const STOP_RECORDERS: Duration = Duration::from_millis(4500);

/// Set when SIGTERM or SIGINT arrives.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

fn stop_flag() -> &'static AtomicBool {
    let handler: extern "C" fn(libc::c_int) = on_stop_signal;
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(signal, handler as libc::sighandler_t) };
    }
    &STOP
}
