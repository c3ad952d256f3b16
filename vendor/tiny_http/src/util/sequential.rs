use std::io::Result as IoResult;
use std::io::{BufRead, Read, Write};

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
    Given(T),
    /// The giver went without giving.
    Gone,
}

type Shared<T> = Arc<(Mutex<Handed<T>>, Condvar)>;

/// The giving end of a handoff of one value from one request to the next on
/// a connection. An nvr-node patch: upstream used an mpsc channel, whose
/// allocations (a channel and a block of 31 slots, aligned) were four a
/// request.
pub struct Giver<T>(Option<Shared<T>>);

/// The taking end: blocks until the value is given.
pub struct Taker<T>(Shared<T>);

fn handoff<T>() -> (Giver<T>, Taker<T>) {
    let shared = Arc::new((Mutex::new(Handed::Waiting), Condvar::new()));
    (Giver(Some(shared.clone())), Taker(shared))
}

impl<T> Giver<T> {
    fn give(&mut self, value: T) {
        if let Some(shared) = self.0.take() {
            *shared.0.lock().unwrap() = Handed::Given(value);
            shared.1.notify_one();
        }
    }
}

impl<T> Drop for Giver<T> {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            *shared.0.lock().unwrap() = Handed::Gone;
            shared.1.notify_one();
        }
    }
}

impl<T> Taker<T> {
    /// The value, once given; panics if the giver went without giving it,
    /// as upstream's `recv().unwrap()` did.
    fn take(&self) -> T {
        let (state, given) = &*self.0;
        let mut state = state.lock().unwrap();
        loop {
            match std::mem::replace(&mut *state, Handed::Waiting) {
                Handed::Given(value) => return value,
                Handed::Gone => panic!("the previous request went without handing over"),
                Handed::Waiting => state = given.wait(state).unwrap(),
            }
        }
    }
}
