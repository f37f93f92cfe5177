//! Connection threads: outside cluster mode every connection is served by one of N threads,
//! each running its own single-threaded async runtime (its own epoll and timers), the one
//! with the fewest live connections when it is accepted.
//!
//! Why: on one shared work-stealing runtime, the worker that polls the I/O driver hands
//! ready connections to the others through wake-ups, a futex and a context switch more per
//! request than a thread that waits on its own connections' sockets (Redis's I/O threads,
//! thread-per-core servers). `docs/measurements.md` has the YCSB load's figures.
//!
//! Before a thread parks (its runtime found no task to run and is about to sleep in
//! `epoll_wait`), it yields its CPU [`PARK_YIELDS`] times. Why: a park that sleeps costs a
//! context switch, and the next request's wake-up costs another on top of the kernel's wake-up
//! path; where the cores are shared with the other threads, the clients and the engine's
//! background jobs, the next requests usually arrive while those run, and `epoll_wait` then
//! returns at once. On an idle machine each yield returns at once: a few system calls per
//! park, nothing per request. A spin would instead keep the CPU from the very threads the
//! requests come from. Figures: `docs/measurements.md`, the server rows.
//!
//! Contract: a connection's task never blocks its thread on another command. A command that
//! would wait for a key lock or for a running script waits as a task (`listener`), also one
//! that races a script taking every key lock (`script::gate`), and a script runs on a
//! blocking thread (`listener`'s offload), so a connection on the same thread can still
//! SCRIPT KILL it; so do DBSIZE, INFO and KEYS, which walk a database's keys
//! (`commands::walks_keyspace`). Another long command (a SORT of a large list, a ZUNIONSTORE
//! of large sets) holds its thread's other connections for as long, as Redis's one thread
//! holds all of them. Cluster mode keeps the shared runtime: its commands may wait inside for
//! replication (`storage::pending`).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::socket::{Sock, StdSock};
use tokio::sync::oneshot;

/// Yields of its CPU a connection thread makes before it parks (module doc).
const PARK_YIELDS: u32 = 3;

/// What a connection thread does before it parks (module doc).
fn yield_before_park() {
    for _ in 0..PARK_YIELDS {
        std::thread::yield_now();
    }
}

/// One connection thread.
struct ConnThread {
    handle: tokio::runtime::Handle,
    /// Connections it serves now.
    live: Arc<AtomicUsize>,
    /// Dropped to stop the thread.
    stop: oneshot::Sender<()>,
    /// Signalled when the thread has stopped.
    done: std::sync::mpsc::Receiver<()>,
}

/// The connection threads (module doc).
pub struct ConnThreads {
    threads: Vec<ConnThread>,
}

/// Counts a connection live on its thread until dropped (its task ends or is dropped).
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnThreads {
    /// Starts `n` threads (at least one), named `strata-conn-<i>`.
    pub fn start(n: usize) -> std::io::Result<ConnThreads> {
        let mut threads = Vec::with_capacity(n.max(1));
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(yield_before_park)
                .build()?;
            let handle = rt.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let (done_tx, done) = std::sync::mpsc::channel();
            std::thread::Builder::new().name(format!("strata-conn-{i}")).spawn(move || {
                // Until the sender is dropped; then its connections' tasks are dropped, and
                // blocking work it started (a script) gets a moment to end.
                let _ = rt.block_on(stopped);
                rt.shutdown_timeout(Duration::from_secs(1));
                let _ = done_tx.send(());
            })?;
            threads.push(ConnThread { handle, live: Arc::new(AtomicUsize::new(0)), stop, done });
        }
        Ok(ConnThreads { threads })
    }

    /// Serves `sock` with `serve` on the thread with the fewest live connections (the first
    /// of them on a tie); returns the handle that ends that task.
    pub fn spawn<F, Fut>(&self, sock: StdSock, serve: F) -> Option<tokio::task::AbortHandle>
    where
        F: FnOnce(Sock) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let t = self.threads.iter().min_by_key(|t| t.live.load(Ordering::Relaxed))?;
        t.live.fetch_add(1, Ordering::Relaxed);
        let live = Live(t.live.clone());
        let task = t.handle.spawn(async move {
            let _live = live;
            // Registered with this thread's runtime (the listener's accepted it).
            match sock.into_async() {
                Ok(s) => serve(s).await,
                Err(e) => eprintln!("cannot serve an accepted connection: {e}"),
            }
        });
        Some(task.abort_handle())
    }

    /// How many connections each thread serves now.
    pub fn live(&self) -> Vec<usize> {
        self.threads.iter().map(|t| t.live.load(Ordering::Relaxed)).collect()
    }

    /// Stops every thread: their connections close. Waits up to `grace` in all for them;
    /// a thread still busy then (a long command) is left to end with the process.
    pub fn stop(self, grace: Duration) {
        let until = Instant::now() + grace;
        let done: Vec<_> = self
            .threads
            .into_iter()
            .map(|t| {
                drop(t.stop);
                t.done
            })
            .collect();
        for d in done {
            let _ = d.recv_timeout(until.saturating_duration_since(Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Echoes one line back, then waits for the client to close.
    async fn echo(mut s: Sock) {
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap_or(0);
        let _ = s.write_all(&buf[..n]).await;
        let _ = s.read(&mut buf).await;
    }

    #[test]
    fn connections_go_to_the_least_loaded_thread_and_leave_it_when_closed() {
        let threads = ConnThreads::start(2).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut clients = Vec::new();
        for i in 0..3u8 {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            let (s, _) = listener.accept().unwrap();
            s.set_nonblocking(true).unwrap();
            threads.spawn(StdSock::Tcp(s), echo);
            use std::io::{Read, Write};
            c.write_all(&[b'a' + i]).unwrap();
            let mut b = [0u8; 1];
            c.read_exact(&mut b).unwrap();
            assert_eq!(b[0], b'a' + i, "served");
            clients.push(c);
        }
        assert_eq!(threads.live(), vec![2, 1]);
        // The first and the third went to thread 0.
        drop(clients.remove(0));
        drop(clients.remove(1));
        let start = Instant::now();
        while threads.live() != vec![0, 1] {
            assert!(start.elapsed() < Duration::from_secs(10), "{:?}", threads.live());
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        threads.stop(Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(5), "a thread did not stop");
    }
}
