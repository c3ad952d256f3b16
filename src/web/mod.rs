//! The HTTP side: the server loop (`server`), the route table (`routes`),
//! the handlers (`api`) and what they share to read requests and write
//! replies (`query`, `range`, `encoding`, `guard`, `reply`), and the
//! browser UI's files (`static_files`).

pub mod api;
pub use nvr_base::web::encoding;
pub mod guard;
pub mod query;
pub use nvr_base::web::range;
pub mod reply;
pub mod routes;
pub mod server;
pub mod static_files;
