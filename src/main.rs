//! The `nvr-node` program: its arguments, its log, its settings from the
//! environment, then the node (`nvr_node::run`).

use std::process::ExitCode;

use nvr_node::config;

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
    match start() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            log::error!("{message}");
            eprintln!("nvr-node: {message}");
            ExitCode::FAILURE
        }
    }
}

fn start() -> Result<(), String> {
    let level = config::log_level(|name| std::env::var(name).ok())?;
    simple_logger::SimpleLogger::new()
        .with_level(log::LevelFilter::Warn)
        .with_module_level("nvr_node", level)
        // ureq logs request URLs, whose query carries camera passwords.
        .with_module_level("ureq", log::LevelFilter::Off)
        .init()
        .map_err(|e| e.to_string())?;
    nvr_node::run(Box::new(|name| std::env::var(name).ok()))
}
