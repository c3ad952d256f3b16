//! A connection's write buffer (an nvr-node patch, in place of `BufWriter`).
//!
//! Small writes (a head, a chunk) gather in the buffer, as in `BufWriter`;
//! a vectored write (a head and a body held in memory) follows what is
//! buffered and goes to the socket as one vectored write. `BufWriter` cannot know
//! on stable Rust that the socket takes vectored writes, and wrote the head
//! and the body in two sends.

use std::io::{IoSlice, Result as IoResult, Write};

pub struct WriteBuffer<W: Write> {
    inner: W,
    buffer: Vec<u8>,
}

impl<W: Write> WriteBuffer<W> {
    pub fn with_capacity(capacity: usize, inner: W) -> WriteBuffer<W> {
        WriteBuffer {
            inner,
            buffer: Vec::with_capacity(capacity),
        }
    }

    /// Sends what is buffered.
    fn send_buffered(&mut self) -> IoResult<()> {
        let result = self.inner.write_all(&self.buffer);
        self.buffer.clear();
        result
    }
}

/// What is still buffered is sent when the buffer goes, as `BufWriter` does:
/// the answers that end a connection (400, 408, 414, 431, 417) are written
/// and never flushed.
impl<W: Write> Drop for WriteBuffer<W> {
    fn drop(&mut self) {
        if !self.buffer.is_empty() {
            let _ = self.send_buffered();
        }
    }
}

impl<W: Write> Write for WriteBuffer<W> {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        if self.buffer.len() + buf.len() > self.buffer.capacity() {
            self.send_buffered()?;
        }
        if buf.len() >= self.buffer.capacity() {
            return self.inner.write(buf);
        }
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        self.send_buffered()?;
        self.inner.write_vectored(bufs)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.send_buffered()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Records each write it is given, in a list its clones share.
    #[derive(Clone, Default)]
    struct Writes(Rc<RefCell<Vec<Vec<u8>>>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
            self.0.borrow_mut().push(buf.to_vec());
            Ok(buf.len())
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            let written = all.len();
            self.0.borrow_mut().push(all);
            Ok(written)
        }

        fn flush(&mut self) -> IoResult<()> {
            Ok(())
        }
    }

    #[test]
    fn small_writes_gather_and_a_vectored_write_follows_them_whole() {
        let writes = Writes::default();
        let mut buffer = WriteBuffer::with_capacity(8, writes.clone());
        buffer.write_all(b"ab").unwrap();
        buffer.write_all(b"cd").unwrap();
        assert!(writes.0.borrow().is_empty(), "small writes are held");
        let body = [b'x'; 20];
        let written = buffer
            .write_vectored(&[IoSlice::new(b"head"), IoSlice::new(&body)])
            .unwrap();
        assert_eq!(written, 24);
        buffer.write_all(b"0123456789").unwrap();
        buffer.write_all(b"e").unwrap();
        buffer.flush().unwrap();
        let expected: Vec<Vec<u8>> = vec![
            b"abcd".to_vec(),
            [&b"head"[..], &body].concat(),
            b"0123456789".to_vec(),
            b"e".to_vec(),
        ];
        assert_eq!(*writes.0.borrow(), expected);
    }

    #[test]
    fn what_is_buffered_is_sent_when_the_buffer_goes() {
        let writes = Writes::default();
        let mut buffer = WriteBuffer::with_capacity(64, writes.clone());
        let answer = b"HTTP/1.1 408 Request Timeout\r\n\r\n";
        buffer.write_all(answer).unwrap();
        assert!(writes.0.borrow().is_empty(), "a small write is held");
        drop(buffer);
        assert_eq!(*writes.0.borrow(), vec![answer.to_vec()]);
    }
}
