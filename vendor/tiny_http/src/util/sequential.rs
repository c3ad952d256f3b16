use std::io::Result as IoResult;
use std::io::{BufRead, IoSlice, Read, Write};

use std::sync::{Arc, Condvar, Mutex};

use std::mem;

pub struct SequentialReaderBuilder<R>
where
    R: Read + Send,
{
    inner: SequentialReaderBuilderInner<R>,
}

enum SequentialReaderBuilderInner<R>
where
    R: Read + Send,
{
    First(R),
    NotFirst(Taker<R>),
}

pub struct SequentialReader<R>
where
    R: Read + Send,
{
    inner: SequentialReaderInner<R>,
    next: Giver<R>,
}

enum SequentialReaderInner<R>
where
    R: Read + Send,
{
    MyTurn(R),
    Waiting(Taker<R>),
    Empty,
}

pub struct SequentialWriterBuilder<W>
where
    W: Write + Send,
{
    writer: Arc<Mutex<W>>,
    next_trigger: Option<Taker<()>>,
}

pub struct SequentialWriter<W>
where
    W: Write + Send,
{
    trigger: Option<Taker<()>>,
    writer: Arc<Mutex<W>>,
    on_finish: Giver<()>,
}

impl<R: Read + Send> SequentialReaderBuilder<R> {
    pub fn new(reader: R) -> SequentialReaderBuilder<R> {
        SequentialReaderBuilder {
            inner: SequentialReaderBuilderInner::First(reader),
        }
    }
}

impl<W: Write + Send> SequentialWriterBuilder<W> {
    pub fn new(writer: W) -> SequentialWriterBuilder<W> {
        SequentialWriterBuilder {
            writer: Arc::new(Mutex::new(writer)),
            next_trigger: None,
        }
    }
}

impl<R: Read + Send> Iterator for SequentialReaderBuilder<R> {
    type Item = SequentialReader<R>;

    fn next(&mut self) -> Option<SequentialReader<R>> {
        let (tx, rx) = handoff();

        let inner = mem::replace(&mut self.inner, SequentialReaderBuilderInner::NotFirst(rx));

        match inner {
            SequentialReaderBuilderInner::First(reader) => Some(SequentialReader {
                inner: SequentialReaderInner::MyTurn(reader),
                next: tx,
            }),

            SequentialReaderBuilderInner::NotFirst(previous) => Some(SequentialReader {
                inner: SequentialReaderInner::Waiting(previous),
                next: tx,
            }),
        }
    }
}

impl<W: Write + Send> Iterator for SequentialWriterBuilder<W> {
    type Item = SequentialWriter<W>;
    fn next(&mut self) -> Option<SequentialWriter<W>> {
        let (tx, rx) = handoff();
        let mut next_next_trigger = Some(rx);
        ::std::mem::swap(&mut next_next_trigger, &mut self.next_trigger);

        Some(SequentialWriter {
            trigger: next_next_trigger,
            writer: self.writer.clone(),
            on_finish: tx,
        })
    }
}

impl<R: Read + Send> Read for SequentialReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        self.reader().read(buf)
    }
}

impl<R: Read + Send> SequentialReader<R> {
    /// The reader, once the previous request's reader is done with it.
    fn reader(&mut self) -> &mut R {
        if let SequentialReaderInner::Waiting(recv) = &mut self.inner {
            self.inner = SequentialReaderInner::MyTurn(recv.take());
        }
        match &mut self.inner {
            SequentialReaderInner::MyTurn(reader) => reader,
            _ => unreachable!(),
        }
    }
}

/// Lets the head be read a buffer at a time rather than a byte at a time
/// (an nvr-node patch).
impl<R: BufRead + Send> BufRead for SequentialReader<R> {
    fn fill_buf(&mut self) -> IoResult<&[u8]> {
        self.reader().fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.reader().consume(amount)
    }
}

impl<W: Write + Send> Write for SequentialWriter<W> {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        if let Some(v) = self.trigger.as_mut() {
            v.take()
        }
        self.trigger = None;

        self.writer.lock().unwrap().write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        if let Some(v) = self.trigger.as_mut() {
            v.take()
        }
        self.trigger = None;

        self.writer.lock().unwrap().write_vectored(bufs)
    }

    fn flush(&mut self) -> IoResult<()> {
        if let Some(v) = self.trigger.as_mut() {
            v.take()
        }
        self.trigger = None;

        self.writer.lock().unwrap().flush()
    }
}

impl<R> Drop for SequentialReader<R>
where
    R: Read + Send,
{
    fn drop(&mut self) {
        let inner = mem::replace(&mut self.inner, SequentialReaderInner::Empty);

        match inner {
            SequentialReaderInner::MyTurn(reader) => {
                self.next.give(reader);
            }
            SequentialReaderInner::Waiting(recv) => {
                let reader = recv.take();
                self.next.give(reader);
            }
            SequentialReaderInner::Empty => (),
        }
    }
}

impl<W> Drop for SequentialWriter<W>
where
    W: Write + Send,
{
    fn drop(&mut self) {
        self.on_finish.give(());
    }
}

/// What a one-shot handoff holds.
enum Handed<T> {
    Waiting,
    /// The taker waits on the condition variable.
    Sleeping,
    Given(T),
    /// The giver went without giving.
    Gone,
}

type Shared<T> = Arc<(Mutex<Handed<T>>, Condvar)>;

/// The giving end of a handoff of one value from one request to the next on
/// a connection. An nvr-node patch: upstream used an mpsc channel, whose
/// allocations (a channel and a block of 31 slots, aligned) were four a
/// request, and whose every send woke a futex. Requests handled on their
/// connection's thread in turn never wait here, and never make a system call.
pub struct Giver<T>(Option<Shared<T>>);

/// The taking end: blocks until the value is given.
pub struct Taker<T>(Shared<T>);

fn handoff<T>() -> (Giver<T>, Taker<T>) {
    let shared = Arc::new((Mutex::new(Handed::Waiting), Condvar::new()));
    (Giver(Some(shared.clone())), Taker(shared))
}

impl<T> Giver<T> {
    fn give(&mut self, value: T) {
        self.end(Handed::Given(value));
    }

    fn end(&mut self, end: Handed<T>) {
        if let Some(shared) = self.0.take() {
            let before = std::mem::replace(&mut *shared.0.lock().unwrap(), end);
            if matches!(before, Handed::Sleeping) {
                shared.1.notify_one();
            }
        }
    }
}

impl<T> Drop for Giver<T> {
    fn drop(&mut self) {
        self.end(Handed::Gone);
    }
}

impl<T> Taker<T> {
    /// The value, once given; panics if the giver went without giving it,
    /// as upstream's `recv().unwrap()` did.
    fn take(&self) -> T {
        let (state, given) = &*self.0;
        let mut state = state.lock().unwrap();
        loop {
            match std::mem::replace(&mut *state, Handed::Sleeping) {
                Handed::Given(value) => return value,
                Handed::Gone => panic!("the previous request went without handing over"),
                Handed::Waiting | Handed::Sleeping => state = given.wait(state).unwrap(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_given_before_or_while_waiting_is_taken() {
        let (mut giver, taker) = handoff();
        giver.give(1);
        assert_eq!(taker.take(), 1);

        let (mut giver, taker) = handoff();
        let waiting = std::thread::spawn(move || taker.take());
        std::thread::sleep(std::time::Duration::from_millis(50));
        giver.give(2);
        assert_eq!(waiting.join().unwrap(), 2);
    }

    #[test]
    fn a_giver_gone_without_giving_is_a_panic_not_a_wait() {
        let (giver, taker) = handoff::<u8>();
        let waiting = std::thread::spawn(move || taker.take());
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(giver);
        assert!(waiting.join().is_err());
    }
}
