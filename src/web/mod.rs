//! The HTTP side: the server loop (`server`), the route table (`routes`),
//! the handlers (`api`) and what they share to read requests and write
//! replies (`query`, `range`, `encoding`, `guard`, `reply`), and the
//! browser UI's files (`static_files`).

pub mod api;
pub mod encoding;
pub mod guard;
pub mod query;
pub mod range;
pub mod reply;
pub mod routes;
pub mod server;
pub mod static_files;
