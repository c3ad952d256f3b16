pub use self::custom_stream::CustomStream;
pub use self::equal_reader::EqualReader;
pub use self::fused_reader::FusedReader;
pub use self::messages_queue::MessagesQueue;
pub use self::refined_tcp_stream::RefinedTcpStream;
pub use self::sequential::{SequentialReader, SequentialReaderBuilder};
pub use self::sequential::SequentialWriterBuilder;
pub use self::task_pool::TaskPool;
pub use self::write_buffer::WriteBuffer;

mod custom_stream;
mod equal_reader;
mod fused_reader;
mod messages_queue;
pub(crate) mod refined_tcp_stream;
mod sequential;
mod task_pool;
mod write_buffer;

/// Starts a thread running `work`, boxed: std's `Builder::spawn` brings
/// its own copy of the code that starts a thread for each distinct closure,
/// and a program that starts its threads with a boxed closure too shares
/// this copy (PATCHES.md, 13).
pub fn spawn(work: Box<dyn FnOnce() + Send>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().spawn(work)
}
