use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Manages a collection of threads that each do the pool's work on the items
/// given to it.
///
/// A new thread is created every time all the existing threads are full, up
/// to a maximum; past it, or when no thread can be created, the item is
/// handed back (an nvr-node patch: upstream queues closures and panics when a
/// thread cannot be created, which ended the accept loop).
/// Any idle thread will automatically die after a few seconds.
pub struct TaskPool<T> {
    sharing: Arc<Sharing<T>>,
}

struct Sharing<T> {
    // list of the items to be worked on by worker threads
    todo: Mutex<VecDeque<T>>,

    // condvar that will be notified whenever an item is added to `todo`
    condvar: Condvar,

    // number of total worker threads running, counted from before they start
    active_tasks: AtomicUsize,

    // number of idle worker threads
    waiting_tasks: AtomicUsize,

    // the most worker threads at once
    max_threads: usize,

    // what a worker thread does with each item
    work: Box<dyn Fn(T) + Send + Sync>,
}

/// Minimum number of active threads.
static MIN_THREADS: usize = 4;

struct Registration<'a> {
    nb: &'a AtomicUsize,
}

impl<'a> Registration<'a> {
    fn new(nb: &'a AtomicUsize) -> Registration<'a> {
        nb.fetch_add(1, Ordering::Release);
        Registration { nb }
    }
}

impl<'a> Drop for Registration<'a> {
    fn drop(&mut self) {
        self.nb.fetch_sub(1, Ordering::Release);
    }
}

/// A worker thread's place in `active_tasks`, taken before the thread is
/// created (so that the maximum holds however fast threads are asked for)
/// and given back when it ends, or when it could not be created.
struct Active<T>(Arc<Sharing<T>>);

impl<T> Drop for Active<T> {
    fn drop(&mut self) {
        self.0.active_tasks.fetch_sub(1, Ordering::Release);
    }
}

impl<T: Send + 'static> TaskPool<T> {
    /// A pool of at most `max_threads` threads that call `work` on each item.
    pub fn new(max_threads: usize, work: impl Fn(T) + Send + Sync + 'static) -> TaskPool<T> {
        let pool = TaskPool {
            sharing: Arc::new(Sharing {
                todo: Mutex::new(VecDeque::new()),
                condvar: Condvar::new(),
                active_tasks: AtomicUsize::new(0),
                waiting_tasks: AtomicUsize::new(0),
                max_threads,
                work: Box::new(work),
            }),
        };

        for _ in 0..MIN_THREADS {
            pool.add_thread();
        }

        pool
    }

    /// Gives `item` to an idle thread, or to a new one; hands it back when
    /// the pool has its most threads already, or no thread can be created.
    pub fn spawn(&self, item: T) -> Result<(), T> {
        let mut queue = self.sharing.todo.lock().unwrap();
        queue.push_back(item);

        // Items already queued will take waiting threads that have not woken
        // yet; counting those threads as free queued a new connection behind
        // busy ones (an nvr-node patch).
        if self.sharing.waiting_tasks.load(Ordering::Acquire) >= queue.len() {
            self.sharing.condvar.notify_one();
            return Ok(());
        }
        // The new thread takes an item from the queue; none else can take
        // this one before the lock is let go.
        if self.add_thread() {
            Ok(())
        } else {
            Err(queue.pop_back().expect("the item just queued"))
        }
    }

    /// Starts a worker thread; false at the most threads, or when the
    /// system cannot create one.
    fn add_thread(&self) -> bool {
        let sharing = self.sharing.clone();
        if sharing.active_tasks.fetch_add(1, Ordering::AcqRel) >= sharing.max_threads {
            sharing.active_tasks.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let active = Active(sharing);

        // On failure the closure, and `active` with it, is dropped.
        let started = super::spawn(Box::new(move || {
            let sharing = &active.0;

            loop {
                let item: T = {
                    let mut todo = sharing.todo.lock().unwrap();

                    let item;
                    loop {
                        if let Some(poped_item) = todo.pop_front() {
                            item = poped_item;
                            break;
                        }
                        let _waiting_guard = Registration::new(&sharing.waiting_tasks);

                        let received =
                            if sharing.active_tasks.load(Ordering::Acquire) <= MIN_THREADS {
                                todo = sharing.condvar.wait(todo).unwrap();
                                true
                            } else {
                                let (new_lock, waitres) = sharing
                                    .condvar
                                    .wait_timeout(todo, Duration::from_millis(5000))
                                    .unwrap();
                                todo = new_lock;
                                !waitres.timed_out()
                            };

                        if !received && todo.is_empty() {
                            return;
                        }
                    }

                    item
                };

                (sharing.work)(item);
            }
        }));
        started.is_ok()
    }
}

impl<T> Drop for TaskPool<T> {
    fn drop(&mut self) {
        self.sharing
            .active_tasks
            .store(999_999_999, Ordering::Release);
        self.sharing.condvar.notify_all();
    }
}
