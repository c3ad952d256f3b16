//! Start-up: the node's parts started in order, the server run until a
//! signal, and the recorders given their time to finish.

use std::io::Write;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::alerting;
use crate::app::App;
use crate::background::{follow, monitor, relay_sync};
use crate::channel;
use crate::clock;
use crate::cloud;
use crate::config::{self, Config, Environment, Https};
use crate::home_assistant;
use crate::store::Store;
use crate::sys::{net, signal};
use crate::tls::ServerTls;
use crate::web::server;
use crate::web::static_files::Ui;

/// Runs the node until SIGTERM or SIGINT: reads its settings from `env`,
/// opens the store in the data folder, takes the settings changed in the
/// UI over `env`'s, binds the ports, starts every subsystem, serves, and
/// stops.
pub fn run(env: Environment) -> Result<(), String> {
    let config = &Config::from_vars(&*env)?;
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| format!("cannot create DATA_DIR {}: {e}", config.data_dir.display()))?;
    let store = Store::open(&config.data_dir).map_err(|e| {
        format!(
            "cannot open the database in {}: {e}",
            config.data_dir.display()
        )
    })?;
    let stored = store
        .settings()
        .map_err(|e| format!("cannot read the settings: {e}"))?;
    // A setting of the UI a newer node no longer takes must not keep it
    // from starting: the environment's stand.
    let config = &match Config::from_vars(&config::overlay(&stored, &*env)) {
        Ok(with_ui) => with_ui,
        Err(e) => {
            log::warn!("the settings changed in the UI are not used: {e}");
            Config::from_vars(&*env)?
        }
    };
    // Uploads a crash cut short start again.
    store
        .reset_uploading()
        .map_err(|e| format!("cannot reset uploads: {e}"))?;
    let listener = server::bind(config.listen_address, config.port).map_err(|e| {
        format!(
            "cannot listen on {}:{}: {e}",
            config.listen_address, config.port
        )
    })?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let https = match &config.https {
        Some(https) => Some(https_listener(config, https)?),
        None => None,
    };

    let node_url = config
        .node_url
        .clone()
        .unwrap_or_else(|| format!("http://{}:{}", config.host_name, address.port()));
    let (relay_nudges, nudged) = channel::channel();
    let app = Arc::new(App::new(config, store, relay_nudges, node_url, env));
    app.start();
    relay_sync::spawn(app.clone(), nudged);
    monitor::spawn(app.clone(), config.camera_check_interval);
    follow::spawn(app.clone());
    if let Some(cloud_url) = &config.cloud_url {
        cloud::link::spawn(app.clone(), cloud_url);
        cloud::uploader::spawn(app.clone(), cloud_url);
    }
    alerting::spawn(app.clone());
    if let Some(mqtt) = &config.mqtt {
        home_assistant::spawn(app.clone(), mqtt)?;
    }

    // The https line first: who reads the http line has both.
    if let Some((listener, _)) = &https {
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on https://{address}");
    }
    println!("listening on http://{address}");
    let _ = std::io::stdout().flush();
    log::info!(
        "nvr-node {} serving as {:?}",
        env!("CARGO_PKG_VERSION"),
        app.node_name()
    );
    exit_when_tiny_http_panics();
    // On SIGTERM the recorders finish their segments while requests drain.
    let (recorders_stopped, stopped) = channel::channel();
    let stopping = app.clone();
    let stop_recorders = move || {
        let deadline = Instant::now() + STOP_RECORDERS;
        let app = stopping.clone();
        let started = crate::spawn::spawn(thread::Builder::new(), move || {
            app.stop(deadline);
            let _ = recorders_stopped.send(());
        });
        if let Err(e) = started {
            // A node out of threads still stops cleanly: the recorders
            // first, then the requests drain.
            log::warn!("stopping the recorders before the requests drain: no thread for it: {e}");
            stopping.stop(deadline);
        }
    };
    server::serve(
        listener,
        https,
        app,
        Ui::new(config.www_dir.clone()),
        signal::stop_flag(),
        stop_recorders,
    )
    .map_err(|e| format!("stopped accepting connections: {e}"))?;
    let _ = stopped.recv_timeout(STOP_RECORDERS);
    log::info!("stopped");
    Ok(())
}

/// HTTPS_PORT's socket, and its TLS: the certificate given, or the node's
/// own for its names now.
fn https_listener(
    config: &Config,
    https: &Https,
) -> Result<(std::net::TcpListener, ServerTls), String> {
    let listener = server::bind(config.listen_address, https.port).map_err(|e| {
        format!(
            "cannot listen on {}:{} (HTTPS_PORT): {e}",
            config.listen_address, https.port
        )
    })?;
    let tls = match &https.files {
        Some(files) => ServerTls::given(&files.certificate, &files.key)?,
        None => {
            let addresses = net::addresses().unwrap_or_else(|e| {
                log::warn!("cannot list the network's addresses for the certificate: {e}");
                Vec::new()
            });
            ServerTls::own(
                &config.data_dir.join("tls"),
                &config.node_name,
                &config.host_name,
                &addresses,
                clock::now_ms(),
            )?
        }
    };
    Ok((listener, tls))
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
