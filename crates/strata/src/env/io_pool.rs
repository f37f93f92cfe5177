//! A few threads that run blocking file transfers for a caller that goes on computing: a
//! direct writer's full window is written while the next one fills, and a compaction input's
//! next readahead window is read while the current one is merged.
//!
//! Under direct I/O nothing happens in the background on the engine's behalf (there is no page
//! cache to write back or read ahead): without this, a flush or compaction waits for the
//! device on every window it reads and every window it writes (a large share of a big
//! compaction's time; `docs/measurements.md`). With it, the merging thread waits only where
//! the device is slower than its merging.
//!
//! ```text
//!   caller                        pool: IO_THREADS threads, started on first use
//!   run(job) -> Pending ------->  queue --> a thread runs job(), puts its result in the slot
//!   ... computes ...
//!   pending.wait() <-----------  slot (Mutex + Condvar)
//! ```
//!
//! Contract:
//! - A job runs exactly once: on a pool thread, or inside [`run`] on the calling thread when
//!   no pool thread could be started (the caller then simply waited for it).
//! - [`Pending::wait`] returns the job's result, or `None` if the job panicked (the panic is
//!   caught, so a pool thread outlives its jobs and a waiter never hangs on a lost result).
//! - A [`Pending`] dropped without waiting leaves its job to run; what the job returns is then
//!   dropped by the pool thread. Jobs own what they touch (buffers, file handles), so a caller
//!   that gives up on one frees nothing the job still uses.
//! - Jobs never wait for other jobs (each is a few system calls), so the queue cannot
//!   deadlock however many callers share the threads; a caller with one job in flight at a
//!   time (each direct writer, each readahead) makes progress once the jobs queued before
//!   its own are done.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

/// Threads in the pool: enough for the transfers of a couple of concurrent flushes and
/// compactions (each has one write and one read in flight at most per file) to overlap.
const IO_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

/// The pool's queue, its threads started; `None` if not even one thread could be started.
fn queue() -> Option<&'static Queue> {
    static POOL: OnceLock<Option<&'static Queue>> = OnceLock::new();
    *POOL.get_or_init(|| {
        // Leaked on purpose: the threads serve the process until it exits.
        let q: &'static Queue =
            Box::leak(Box::new(Queue { jobs: Mutex::new(VecDeque::new()), ready: Condvar::new() }));
        let started = (0..IO_THREADS)
            .filter(|i| {
                std::thread::Builder::new()
                    .name(format!("strata-io-{i}"))
                    .spawn(move || worker(q))
                    .is_ok()
            })
            .count();
        (started > 0).then_some(q)
    })
}

fn worker(q: &'static Queue) {
    loop {
        let job = {
            let mut jobs = q.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if let Some(j) = jobs.pop_front() {
                    break j;
                }
                jobs = q.ready.wait(jobs).unwrap_or_else(PoisonError::into_inner);
            }
        };
        job();
    }
}

/// How a job ended.
enum Outcome<T> {
    Running,
    Returned(T),
    Panicked,
}

/// Where a job's result waits for its caller.
struct Slot<T> {
    result: Mutex<Outcome<T>>,
    done: Condvar,
}

/// A job in flight (see the module documentation).
#[must_use = "a job's result (and any error in it) is seen only through wait"]
pub(crate) struct Pending<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Pending<T> {
    /// Waits for the job; its result, or `None` if it panicked.
    pub fn wait(self) -> Option<T> {
        let mut r = self.slot.result.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match std::mem::replace(&mut *r, Outcome::Running) {
                Outcome::Running => {}
                Outcome::Returned(v) => return Some(v),
                Outcome::Panicked => return None,
            }
            r = self.slot.done.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Whether the job has ended (a `wait` would not block).
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        !matches!(
            *self.slot.result.lock().unwrap_or_else(PoisonError::into_inner),
            Outcome::Running
        )
    }
}

/// Runs `job` on a pool thread (see the module documentation).
pub(crate) fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Pending<T> {
    let slot = Arc::new(Slot { result: Mutex::new(Outcome::Running), done: Condvar::new() });
    let theirs = Arc::clone(&slot);
    let job = move || {
        let r = match catch_unwind(AssertUnwindSafe(job)) {
            Ok(v) => Outcome::Returned(v),
            Err(_) => Outcome::Panicked,
        };
        *theirs.result.lock().unwrap_or_else(PoisonError::into_inner) = r;
        theirs.done.notify_all();
    };
    match queue() {
        Some(q) => {
            q.jobs.lock().unwrap_or_else(PoisonError::into_inner).push_back(Box::new(job));
            q.ready.notify_one();
        }
        None => job(),
    }
    Pending { slot }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn every_job_runs_once_and_hands_back_its_result() {
        let runs = Arc::new(AtomicUsize::new(0));
        let pending: Vec<_> = (0..100)
            .map(|i| {
                let runs = Arc::clone(&runs);
                run(move || {
                    runs.fetch_add(1, Ordering::Relaxed);
                    vec![i as u8; i]
                })
            })
            .collect();
        for (i, p) in pending.into_iter().enumerate() {
            assert_eq!(p.wait(), Some(vec![i as u8; i]));
        }
        assert_eq!(runs.load(Ordering::Relaxed), 100);
    }

    #[test]
    fn a_panicking_job_gives_none_and_the_pool_goes_on() {
        // More panics than threads: each thread survives its own.
        for _ in 0..2 * IO_THREADS {
            let p = run(|| -> u32 { panic!("a job's panic (expected by this test)") });
            assert_eq!(p.wait(), None);
        }
        assert_eq!(run(|| 7).wait(), Some(7));
    }

    #[test]
    fn jobs_run_while_the_caller_goes_on_and_a_dropped_one_still_runs() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(rx));
        let ran = Arc::new(AtomicUsize::new(0));
        let (g, r) = (Arc::clone(&gate), Arc::clone(&ran));
        let p = run(move || {
            g.lock().unwrap().recv_timeout(Duration::from_secs(30)).unwrap();
            r.fetch_add(1, Ordering::Relaxed);
        });
        // The job is blocked on the gate while this thread goes on.
        std::thread::sleep(Duration::from_millis(20));
        assert!(!p.is_done(), "run returned before its job could start");
        drop(p);
        tx.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while ran.load(Ordering::Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "the dropped job never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
