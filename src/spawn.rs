//! Starting a thread. std's `Builder::spawn` is generic over the closure it
//! runs, so each distinct closure given to it gets its own copy of the code
//! that starts a thread; the node's threads all start through the one copy
//! here instead (docs/install.md, "Its size").

use std::io;
use std::thread::{Builder, JoinHandle};

/// Starts a thread as `builder` says (its name, its stack) running `work`.
pub fn spawn(builder: Builder, work: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    spawn_boxed(builder, Box::new(work))
}

#[inline(never)]
fn spawn_boxed(builder: Builder, work: Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>> {
    builder.spawn(work)
}
