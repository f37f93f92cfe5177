//! Listener and connection loop.
//!
//! Each connection reads into one buffer, parses every complete frame in it (pipelining),
//! executes them in order, and writes all their replies with one write. A malformed frame
//! gets `-ERR Protocol error: ...` after the replies of the frames before it, and closes that
//! connection only.
//!
//! Engine calls are blocking but fast (memtable/cache hits) and run on the connection's task.
//! In cluster mode a command's replicated write is proposed and the connection awaits its
//! outcome (asynchronously, holding no worker and no key lock) before it runs the next frame
//! or replies; a failed write's reply is replaced by its error (`storage::pending`). A
//! command that must wait inside (a barrier, a key held by a write in flight) hands its
//! worker's other tasks off first.
//! A blocking command that finds nothing (BLPOP...) leaves the connection blocked: the
//! replies before it go out, and the connection waits (asynchronously) for its outcome while
//! reading ahead what the client sends; the frames after it run once it is served, times out
//! or is unblocked. A client that disconnects while blocked is taken off the waiters.
//! When every write is synced (`appendfsync always`), a batch's writes are made unsynced and
//! its replies wait (asynchronously, holding no worker and no key lock) for one WAL sync
//! shared with every other connection's writes (`storage::sync_group`).

use super::conn_threads::ConnThreads;
use crate::blocked::{Cancel, Outcome};
use crate::commands;
use crate::resp::{parse_command, Out, ParseOutcome};
use crate::socket::Sock;
use crate::state::{self, Activity, BlockedOn, ClientEntry, Conn, Figure, ReplyMode, Shared};
use crate::storage::pending;
use crate::types::notify;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};

/// Accepts connections until `shutdown` resolves: each is served on one of `threads` when
/// given (`conn_threads`), else as a task of the calling runtime. A listener CONFIG SET
/// hands over (`Shared::new_listener`, a new port) replaces `listener`, which closes; the
/// connections open stay.
pub async fn serve(
    sh: Arc<Shared>,
    mut listener: TcpListener,
    unix: Option<(UnixListener, String)>,
    shutdown: impl std::future::Future<Output = ()>,
    threads: Option<&ConnThreads>,
) {
    tokio::pin!(shutdown);
    let (tx, mut handed) = tokio::sync::mpsc::unbounded_channel();
    *sh.new_listener.lock() = Some(tx);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            Some(l) = handed.recv() => {
                match TcpListener::from_std(l) {
                    Ok(l) => listener = l,
                    Err(e) => eprintln!("cannot listen on the new port: {e}"),
                }
                continue;
            }
            acc = listener.accept() => acc.map(|(sock, addr)| {
                let _ = sock.set_nodelay(true);
                (Sock::Tcp(sock), addr.to_string())
            }),
            acc = accept_unix(unix.as_ref()) => acc,
        };
        match accepted {
            Ok((sock, addr)) => start_connection(&sh, sock, addr, threads),
            Err(e) => {
                eprintln!("accept failed: {e}");
                // Out of descriptors and the like: back off briefly.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
    sh.new_listener.lock().take();
    if let Some((_, path)) = unix {
        // As redis-server removes its socket file when it exits.
        let _ = std::fs::remove_file(path);
    }
}

/// The Unix socket's next connection and its client's name; without one, never.
async fn accept_unix(unix: Option<&(UnixListener, String)>) -> std::io::Result<(Sock, String)> {
    match unix {
        Some((l, path)) => l.accept().await.map(|(s, _)| {
            let sock = Sock::Unix(s, path.clone());
            let name = sock.peer_name();
            (sock, name)
        }),
        None => std::future::pending().await,
    }
}

/// Serves an accepted connection from `addr`: on a connection thread, or a task of the
/// runtime (cluster mode).
fn start_connection(sh: &Arc<Shared>, sock: Sock, addr: String, threads: Option<&ConnThreads>) {
    let sh = sh.clone();
    // The task learns its own abort handle (CLIENT KILL) before it registers.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let serve = move |s| async move {
        if let Ok(kill) = rx.await {
            handle(sh, s, addr, kill).await;
        }
    };
    let kill = match threads {
        None => Some(tokio::spawn(serve(sock)).abort_handle()),
        Some(threads) => match sock.into_std() {
            Ok(sock) => threads.spawn(sock, serve),
            Err(e) => {
                eprintln!("cannot hand over an accepted connection: {e}");
                None
            }
        },
    };
    if let Some(kill) = kill {
        let _ = tx.send(kill);
    }
}

/// Runs a batch of frames of a cluster-mode connection, one at a time: each command's
/// replicated writes are deferred, and their outcome awaited before the next frame runs (so
/// it reads them) and before the replies go out; a failed one's reply becomes its error.
/// It stops after a frame that blocked the connection, and before one a CLIENT PAUSE holds
/// (the caller sends the replies so far and waits for the pause's end or the client's
/// leaving, as for [`run_batch`]).
async fn run_replicated(
    sh: &Shared,
    conn: &mut Conn,
    frames: &[Vec<Vec<u8>>],
    out: &mut Out,
) -> Ran {
    for (n, f) in frames.iter().enumerate() {
        if conn.close || conn.blocked.is_some() {
            return Ran { frames: n, sync: None, stalled: None };
        }
        if f.is_empty() {
            continue;
        }
        let cmd = commands::find(sh, &f[0]);
        if commands::client_pause::holds(sh, conn, cmd, f) {
            return Ran { frames: n, sync: None, stalled: Some(Stall::Paused) };
        }
        // A busy key is waited for here, as a task, not by the command on the worker.
        if let Some(stripe) = commands::busy_stripe(sh, conn, cmd, f) {
            sh.engine().locks.until_free(stripe).await;
        }
        out.resp3 = conn.resp3;
        let reply_at = out.buf.len();
        let ((), owed) = pending::deferring(|| {
            pending::as_writer(conn.id, || commands::dispatch_found(sh, conn, cmd, f, out));
        });
        // Its keyspace notifications go out once its writes are applied, if they are.
        let raised = notify::take();
        let outcome = match owed {
            None => Ok(()),
            Some(Ok(settlement)) => settlement.wait().await,
            Some(Err(reply)) => Err(reply),
        };
        match outcome {
            Ok(()) => commands::pubsub::publish_events(sh, Some(conn.id), raised),
            Err(reply) => {
                sh.stats.errors.fetch_add(1, Ordering::Relaxed);
                out.buf.truncate(reply_at);
                out.error(&reply);
            }
        }
        apply_reply_mode(conn, out, reply_at);
    }
    Ran { frames: frames.len(), sync: None, stalled: None }
}

/// CLIENT REPLY after a command whose reply starts at `mark` in `out`: drops the reply when
/// replies are off or skipped (and the reply of a command that blocked, when it comes),
/// then adds the command's push frames, which always go out.
fn apply_reply_mode(conn: &mut Conn, out: &mut Out, mark: usize) {
    let silent = match conn.reply_mode {
        ReplyMode::On => false,
        ReplyMode::Off => true,
        ReplyMode::Skip { armed } => {
            conn.reply_mode = if armed { ReplyMode::Skip { armed: false } } else { ReplyMode::On };
            true
        }
    };
    if silent {
        out.buf.truncate(mark);
        if let Some(on) = conn.blocked.as_mut() {
            on.silent = true;
        }
    }
    if !conn.pushes.is_empty() {
        out.buf.extend_from_slice(&conn.pushes);
        conn.pushes.clear();
    }
}

/// What [`run_batch`] or [`run_replicated`] ran.
struct Ran {
    /// How many frames.
    frames: usize,
    /// The WAL sync their replies must wait for, if any.
    sync: Option<u64>,
    /// Why it stopped before the next frame, if it did not stop at the end or at a blocked
    /// connection.
    stalled: Option<Stall>,
}

/// Why [`run_batch`] stopped before a frame: what the connection waits for as a task (not its
/// thread) before it runs that frame.
enum Stall {
    /// The busy key stripe its command would wait for (`commands::busy_stripe`).
    Stripe(crate::storage::locks::Busy),
    /// The running script, until this moment (`scripting::waits_for_script`).
    Script(std::time::Instant),
    /// It runs on a blocking thread ([`run_offloaded`]): a script, or a walk of the whole
    /// key space that Redis answers at once (`commands::walks_keyspace`).
    Offload(Offloaded),
    /// A CLIENT PAUSE holds its command (`commands::client_pause`): until it is over.
    Paused,
    /// A script is taking every key-lock stripe (`script::gate`): until it has.
    Gate,
}

/// What runs on a blocking thread ([`Stall::Offload`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Offloaded {
    /// A script: it takes its turn at the scripts' gate first (`script::gate`).
    Script,
    /// A command that walks the key space (DBSIZE, INFO): it reads a snapshot, so it needs
    /// no turn, and its connection thread serves the others meanwhile.
    Walk,
}

/// Runs a batch of frames; it stops after one that blocked the connection, and before one
/// that would wait for a running script or a busy key or that runs a script ([`Stall`]). A
/// command that may take key-lock stripes runs holding a pass of the scripts' gate
/// (`script::gate`), so no script takes every stripe between its look and its run. The
/// first frame skips the look at busy keys when `waited`: the connection has just waited for
/// it once.
fn run_batch(
    sh: &Shared,
    conn: &mut Conn,
    frames: &[Vec<Vec<u8>>],
    out: &mut Out,
    waited: bool,
) -> Ran {
    let mut ran = frames.len();
    let mut stalled = None;
    for (n, f) in frames.iter().enumerate() {
        if conn.close || conn.blocked.is_some() {
            ran = n;
            break;
        }
        if f.is_empty() {
            continue;
        }
        let cmd = commands::find(sh, &f[0]);
        // From the look at scripts and stripes to the end of the run (`script::gate`).
        let stripes = cmd.is_some_and(|c| commands::scripting::takes_stripes(c, f));
        let pass = if stripes { sh.scripts.gate.enter() } else { None };
        if stripes && pass.is_none() {
            ran = n;
            stalled = Some(Stall::Gate);
            break;
        }
        stalled = stall_before(sh, conn, cmd, f, n > 0 || !waited);
        if stalled.is_some() {
            ran = n;
            break;
        }
        run_frame(sh, conn, cmd, f, out);
        drop(pass);
    }
    Ran { frames: ran, sync: sh.engine().owed_sync(), stalled }
}

/// What the connection must wait for before it runs `f` (see [`Stall`]), if anything; busy
/// keys only with `stripes`. A running script comes first: a stripe wait is short
/// (`LockTable::until_free`) and the command would then wait for the script's locks on its
/// thread. The script wait ends by `busy-reply-threshold` at the latest, after which the
/// command is refused with BUSY before it locks anything (`commands::dispatch_found`).
fn stall_before(
    sh: &Shared,
    conn: &Conn,
    cmd: Option<&'static commands::Command>,
    f: &[Vec<u8>],
    stripes: bool,
) -> Option<Stall> {
    if commands::client_pause::holds(sh, conn, cmd, f) {
        return Some(Stall::Paused);
    }
    let found = cmd?;
    if let Some(until) = commands::scripting::waits_for_script(sh, conn, found, f) {
        return Some(Stall::Script(until));
    }
    if let Some(stripe) = commands::busy_stripe(sh, conn, cmd, f).filter(|_| stripes) {
        return Some(Stall::Stripe(stripe));
    }
    if conn.multi.is_some() {
        return None;
    }
    if commands::scripting::runs_script(found.name) {
        return Some(Stall::Offload(Offloaded::Script));
    }
    commands::walks_keyspace(found.name).then_some(Stall::Offload(Offloaded::Walk))
}

/// Runs one frame's command, its reply (as the connection's reply mode wants it) in `out`.
fn run_frame(
    sh: &Shared,
    conn: &mut Conn,
    cmd: Option<&'static commands::Command>,
    f: &[Vec<u8>],
    out: &mut Out,
) {
    out.resp3 = conn.resp3;
    let mark = out.buf.len();
    commands::dispatch_found(sh, conn, cmd, f, out);
    apply_reply_mode(conn, out, mark);
}

/// How often a script waiting for its turn (`script::gate`) looks whether the running one
/// has passed `busy-reply-threshold`.
const TURN_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// Runs `f` on a blocking thread, so that the connection's thread keeps serving its other
/// connections meanwhile (one of them may SCRIPT KILL a script). Returns the connection and
/// its replies, and the WAL sync the command's writes owe; `None` when the runtime shut down
/// before the command ran (the connection is gone). A command that panicked closes the
/// connection.
async fn run_offloaded(
    sh: &Arc<Shared>,
    mut conn: Conn,
    f: Vec<Vec<u8>>,
    mut out: Out,
    what: Offloaded,
) -> Option<(Conn, Out, Option<u64>)> {
    let sh = sh.clone();
    let ran = tokio::task::spawn_blocking(move || {
        let cmd = commands::find(&sh, &f[0]);
        if what == Offloaded::Walk {
            let run = std::panic::AssertUnwindSafe(|| run_frame(&sh, &mut conn, cmd, &f, &mut out));
            if std::panic::catch_unwind(run).is_err() {
                conn.close = true;
            }
            return (conn, out, sh.engine().owed_sync());
        }
        // Its turn before its database pin: the scripts' gate's lock order (`script::gate`).
        // Waiting for it ends with BUSY once the script before has run past the threshold.
        let turn = loop {
            let until = std::time::Instant::now() + TURN_POLL;
            if let Some(t) = sh.scripts.gate.take_turn_until(until) {
                break Some(t);
            }
            if cmd.is_some_and(|c| commands::scripting::busy_refusal(&sh, c, &f)) {
                break None;
            }
        };
        let run = std::panic::AssertUnwindSafe(|| match (&turn, cmd) {
            (None, Some(c)) => {
                out.resp3 = conn.resp3;
                let mark = out.buf.len();
                commands::refuse_busy(&sh, &mut conn, c, &mut out);
                apply_reply_mode(&mut conn, &mut out, mark);
            }
            _ => run_frame(&sh, &mut conn, cmd, &f, &mut out),
        });
        if std::panic::catch_unwind(run).is_err() {
            conn.close = true;
        }
        drop(turn);
        // The sync is owed on this thread (`sync_group`): asked for here.
        let sync = sh.engine().owed_sync();
        (conn, out, sync)
    })
    .await;
    // The closure catches panics: only a runtime shutting down cancels it.
    ran.ok()
}

/// Waits for the WAL sync `need` (if any) that the replies in `out` acknowledge. If it
/// fails, nothing of theirs is acknowledged: the connection closes without them.
async fn settle_sync(sh: &Shared, need: Option<u64>, conn: &mut Conn, out: &mut Out) {
    let Some(need) = need else { return };
    if sh.engine().syncs.wait(need).await.is_err() {
        out.buf.clear();
        conn.close = true;
    }
}

/// Waits while the connection is blocked (`commands::blocking`): for its outcome, reading
/// what the client sends meanwhile into `buf` (run after it), cancelling the wait at its
/// deadline or when the client leaves. `None`: the client left.
async fn wait_blocked(
    sh: &Shared,
    id: u64,
    on: BlockedOn,
    sock: &mut Sock,
    buf: &mut Vec<u8>,
) -> Option<Outcome> {
    let BlockedOn { mut rx, deadline, .. } = on;
    let mut timed_out = false;
    let mut gone = false;
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365);
    let until = deadline.map_or(far, tokio::time::Instant::from_std);
    loop {
        tokio::select! {
            outcome = &mut rx => {
                // The registry ends every waiter through its channel; a dropped one is a
                // timeout all the same.
                let outcome = outcome.unwrap_or(Outcome { reply: b"*-1\r\n".to_vec(), sync: None, served: false });
                return (!gone).then_some(outcome);
            }
            () = tokio::time::sleep_until(until), if deadline.is_some() && !timed_out => {
                timed_out = true;
                sh.blocked.cancel(id, Cancel::Timeout);
            }
            r = sock.read_buf(buf), if !gone => match r {
                Ok(0) | Err(_) => {
                    gone = true;
                    sh.blocked.cancel(id, Cancel::Gone);
                }
                Ok(_) => {}
            },
        }
    }
}

/// A connection on the server's books: CLIENT LIST, `connected_clients`, and its
/// subscriptions and blocked wait. Dropped, it takes the connection off them however the
/// connection's task ended: at its end, or dropped by the runtime after a command panicked
/// in it or at shutdown (then without the connection's own record of its subscriptions, so
/// every subscription is searched).
struct Registration {
    sh: Arc<Shared>,
    id: u64,
    /// The connection unsubscribed what it had and left no blocked wait.
    settled: bool,
}

impl Registration {
    /// Puts a new connection on the books with `entry`'s socket fields (its address, local
    /// address, descriptor, kill handle, figures and socket kind), connected now and on RESP2.
    fn new(sh: &Arc<Shared>, entry: ClientEntry) -> Registration {
        let id = crate::state::next_client_id();
        sh.stats.connections.fetch_add(1, Ordering::Relaxed);
        sh.stats.connected.fetch_add(1, Ordering::Relaxed);
        let since = Some(std::time::Instant::now());
        sh.clients.lock().insert(id, ClientEntry { since, resp: 2, ..entry });
        Registration { sh: sh.clone(), id, settled: false }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if !self.settled {
            self.sh.pubsub.drop_client(self.id);
            self.sh.blocked.cancel(self.id, Cancel::Gone);
        }
        // Its tracking ends, however the connection ended.
        commands::client_tracking::gone(&self.sh, self.id);
        // CLIENT KILL takes a connection off the books itself, counting it gone there.
        if self.sh.clients.lock().remove(&self.id).is_some() {
            self.sh.stats.connected.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Writes the replies gathered in `out` to the client and empties it; `false` when the
/// client is gone.
async fn send_replies(sock: &mut Sock, out: &mut Out) -> bool {
    if out.buf.is_empty() {
        return true;
    }
    let sent = sock.write_all(&out.buf).await.is_ok();
    out.buf.clear();
    sent
}

/// What a read makes room for when its buffer has little left (Redis's `PROTO_IOBUF_LEN`).
const READ_ROOM: usize = 16 * 1024;

/// Reads what the client sent into `buf`. A buffer let go of (an idle connection's,
/// `let_go_when_idle`) takes memory again only once data is there.
async fn read_some(sock: &mut Sock, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.capacity() == 0 {
        sock.readable().await?;
    }
    if buf.capacity() - buf.len() < 1024 {
        buf.reserve(READ_ROOM);
    }
    sock.read_buf(buf).await
}

/// The clients' round found the connection idle for more than 2 s: it lets go of its read
/// and reply buffers (when nothing is in them), as Redis frees an idle client's query
/// buffer.
fn let_go_when_idle(figures: &Activity, buf: &mut Vec<u8>, out: &mut Out) {
    match figures.take_buffers_call() {
        state::BUFFERS_RELEASE => {}
        state::BUFFERS_CHECK => return fit_read_buffer(figures, buf),
        _ => return,
    }
    if buf.is_empty() {
        *buf = Vec::new();
    }
    if out.buf.is_empty() {
        out.buf = Vec::new();
    }
    figures.read_buffer(buf.len(), buf.capacity());
    figures.set(Figure::OutSize, out.buf.capacity());
}

/// The clients' round's check of the read buffer (Redis's rule): one larger than 32 KiB
/// with more than 4 KiB free and over twice the most it held since the last round shrinks
/// to that most (or to what it holds); the peak then starts again.
fn fit_read_buffer(figures: &Activity, buf: &mut Vec<u8>) {
    let peak = usize::try_from(figures.get(Figure::Rbp)).unwrap_or(usize::MAX);
    let cap = buf.capacity();
    if cap - buf.len() > 4 * 1024 && cap > 32 * 1024 && cap / 2 > peak {
        buf.shrink_to(peak.max(buf.len()));
    }
    figures.set(Figure::Rbp, buf.len());
    figures.read_buffer(buf.len(), buf.capacity());
}

async fn handle(sh: Arc<Shared>, mut sock: Sock, addr: String, kill: tokio::task::AbortHandle) {
    let activity = Arc::new(Activity::default());
    let mut registration = Registration::new(
        &sh,
        ClientEntry {
            addr,
            laddr: sock.local_name(),
            fd: i64::from(std::os::fd::AsRawFd::as_raw_fd(&sock)),
            kill: Some(kill),
            activity: activity.clone(),
            unix: sock.is_unix(),
            ..ClientEntry::default()
        },
    );
    let id = registration.id;
    let mut conn = Conn::new(id, sh.default_user_open());
    conn.user = Some(sh.acl.default_user());
    // The connection's figures in CLIENT LIST, which this loop keeps.
    let figures = activity.clone();
    conn.activity = Some(activity);
    let mut buf: Vec<u8> = Vec::with_capacity(READ_ROOM);
    let mut out = Out::default();
    let max_bulk = sh.config.proto_max_bulk_len;
    // Parsed frames of one read; kept across reads for its capacity.
    let mut frames: Vec<Vec<Vec<u8>>> = Vec::new();
    'conn: loop {
        // What is buffered first (a blocked connection reads ahead), then more.
        frames.clear();
        let mut pos = 0;
        let mut proto_err = None;
        loop {
            match parse_command(&buf[pos..], max_bulk) {
                Ok(ParseOutcome::Incomplete) => break,
                Ok(ParseOutcome::Command(args, n)) => {
                    pos += n;
                    frames.push(args);
                }
                Err(e) => {
                    proto_err = Some(e);
                    break;
                }
            }
        }
        // While this read's commands run, the buffer counts as holding all of it.
        figures.read_buffer(buf.len(), buf.capacity());
        buf.drain(..pos);
        if frames.is_empty() && proto_err.is_none() {
            // A subscribed connection writes its messages while it waits for commands.
            if let Some(subs) = conn.subs.as_mut() {
                let first = tokio::select! {
                    r = read_some(&mut sock, &mut buf) => match r {
                        Ok(0) | Err(_) => break,
                        Ok(_) => continue,
                    },
                    Some(d) = subs.rx.recv() => d,
                    () = figures.wake.notified() => {
                        let_go_when_idle(&figures, &mut buf, &mut out);
                        continue;
                    }
                };
                commands::pubsub::deliver(&sh, &mut conn, first, &mut out.buf);
                while out.buf.len() <= 1 << 20 {
                    let Some(more) = conn.subs.as_mut().and_then(|s| s.rx.try_recv().ok()) else {
                        break;
                    };
                    commands::pubsub::deliver(&sh, &mut conn, more, &mut out.buf);
                }
                if sock.write_all(&out.buf).await.is_err() {
                    break;
                }
                out.buf.clear();
                continue;
            }
            tokio::select! {
                r = read_some(&mut sock, &mut buf) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                },
                () = figures.wake.notified() => {
                    let_go_when_idle(&figures, &mut buf, &mut out);
                    continue;
                }
            }
        }
        let mut next = 0;
        let mut waited = false;
        while next < frames.len() && !conn.close {
            // A DEBUG SLEEP elsewhere stops this thread too (`pause::Frozen`).
            sh.frozen.wait();
            // Under `appendfsync always` the replies wait for one WAL sync covering every
            // write the batch made. If it fails, nothing of the batch is acknowledged: the
            // connection closes without its replies.
            let ran = if sh.engine().is_replicated() {
                run_replicated(&sh, &mut conn, &frames[next..], &mut out).await
            } else {
                run_batch(&sh, &mut conn, &frames[next..], &mut out, waited)
            };
            next += ran.frames;
            settle_sync(&sh, ran.sync, &mut conn, &mut out).await;
            waited = false;
            match ran.stalled {
                Some(Stall::Stripe(stripe)) => {
                    sh.engine().locks.until_free(stripe).await;
                    waited = true;
                    continue;
                }
                Some(Stall::Script(until)) => {
                    sh.scripts.until_idle_or(until).await;
                    waited = true;
                    continue;
                }
                Some(Stall::Paused) => {
                    // The replies before the held command go out now; the command waits for
                    // the pause to end, unless its client goes away first.
                    if !send_replies(&mut sock, &mut out).await {
                        break 'conn;
                    }
                    tokio::select! {
                        () = sh.pause.wait() => {}
                        r = sock.read_buf(&mut buf) => match r {
                            Ok(0) | Err(_) => break 'conn,
                            Ok(_) => {}
                        },
                    }
                    continue;
                }
                Some(Stall::Gate) => {
                    sh.scripts.gate.until_open().await;
                    continue;
                }
                Some(Stall::Offload(what)) if !conn.close => {
                    let f = std::mem::take(&mut frames[next]);
                    next += 1;
                    let Some((c, o, sync)) = run_offloaded(&sh, conn, f, out, what).await else {
                        // The runtime shut down under the command: `registration` forgets
                        // the connection.
                        return;
                    };
                    (conn, out) = (c, o);
                    settle_sync(&sh, sync, &mut conn, &mut out).await;
                }
                Some(Stall::Offload(_)) | None => {}
            }
            let Some(mut on) = conn.blocked.take() else { continue };
            // The replies before the blocking command go out now; those after it wait.
            if !send_replies(&mut sock, &mut out).await {
                sh.blocked.cancel(id, Cancel::Gone);
                break 'conn;
            }
            let (command, silent, first_run) = (on.command, on.silent, on.first_run);
            let slow = on.slow.take();
            figures.read_buffer(buf.len(), buf.capacity());
            let Some(outcome) = wait_blocked(&sh, id, on, &mut sock, &mut buf).await else {
                break 'conn;
            };
            if !outcome.served {
                // Timed out or unblocked: the command's call counts now, and its first run
                // goes to SLOWLOG if it was slow enough.
                sh.stats.count_run(command, first_run, true);
                if let Some((line, us)) = slow {
                    commands::log_slow(&sh, id, &line, us);
                }
            }
            if let Some(need) = outcome.sync {
                if sh.engine().syncs.wait(need).await.is_err() {
                    conn.close = true;
                    continue;
                }
            }
            if !silent {
                out.buf.extend_from_slice(&outcome.reply);
            }
        }
        // Messages published meanwhile go out after the replies of the commands before them.
        while let Some(d) = conn.subs.as_mut().and_then(|s| s.rx.try_recv().ok()) {
            commands::pubsub::deliver(&sh, &mut conn, d, &mut out.buf);
        }
        if let Some(e) = &proto_err {
            sh.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
            out.error(&format!("ERR {e}"));
        }
        // The figures are the batch's outcome before its replies go: a client that read a
        // reply and asks for them sees what the reply's command did.
        figures.between_commands(&conn);
        figures.read_buffer(buf.len(), buf.capacity());
        if !out.buf.is_empty() {
            figures.set(Figure::Obl, out.buf.len());
            if sock.write_all(&out.buf).await.is_err() {
                break;
            }
            out.buf.clear();
            if out.buf.capacity() > 1 << 20 {
                out.buf.shrink_to(64 * 1024);
            }
            figures.set(Figure::Obl, 0);
        }
        figures.set(Figure::OutSize, out.buf.capacity());
        if proto_err.is_some() || conn.close {
            // A SYNC granted: the transfer follows the replies before it, then the end.
            if let Some(req) = conn.sync.take().filter(|_| proto_err.is_none()) {
                crate::sync_source::serve(&sh, &mut sock, id, req).await;
            }
            break;
        }
        if figures.take_buffers_call() != state::BUFFERS_NONE {
            fit_read_buffer(&figures, &mut buf);
        }
        if frames.capacity() > 4096 {
            frames = Vec::new();
        }
    }
    let _ = sock.shutdown().await;
    commands::pubsub::forget(&sh, &mut conn);
    registration.settled = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Flags};
    use crate::pubsub::{Kind, Subscriber};

    fn shared(dir: &std::path::Path) -> Arc<Shared> {
        let cfg = Config::resolve(Flags::default()).unwrap();
        let dbs =
            crate::types::open_databases(cfg.engine_options(), dir, cfg.appendfsync, cfg.databases)
                .unwrap();
        Arc::new(Shared::new(dbs, cfg, 0))
    }

    #[test]
    fn a_connection_whose_task_is_dropped_by_a_panic_leaves_no_trace() {
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path());
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let who = Subscriber { tx, resp3: false };
        let entry =
            |addr: &str| ClientEntry { addr: addr.into(), fd: -1, ..ClientEntry::default() };
        let bystander = Registration::new(&sh, entry("127.0.0.1:2"));
        sh.pubsub.subscribe(bystander.id, b"news", Kind::Channel, who.clone());
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let reg = Registration::new(&sh, entry("127.0.0.1:1"));
            sh.pubsub.subscribe(reg.id, b"news", Kind::Channel, who.clone());
            sh.pubsub.subscribe(reg.id, b"n*", Kind::Pattern, who.clone());
            assert_eq!(sh.clients.lock().len(), 2);
            panic!("a command's bug");
        }));
        assert!(unwound.is_err());
        let clients: Vec<u64> = sh.clients.lock().keys().copied().collect();
        assert_eq!(clients, vec![bystander.id], "only the live connection is listed");
        assert_eq!(sh.stats.connected.load(Ordering::Relaxed), 1);
        assert_eq!(
            sh.pubsub.numsub(Kind::Channel, b"news"),
            1,
            "the bystander's subscription stays"
        );
        assert_eq!(sh.pubsub.numpat(), 0);
    }

    /// Regression: a client turning tracking on while a write that found it off was under
    /// way, and reading the key before the write was visible, was never told of the change
    /// (its value stayed cached). Now the write, once visible, finds a client tracking and
    /// tells every tracking client that everything may have changed.
    #[test]
    fn a_change_made_while_no_client_tracked_is_told_to_a_client_tracking_by_its_publication() {
        use crate::pubsub::Delivery;
        use crate::types::notify;
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path());
        // The write: its change raised while no client tracks.
        sh.notifier.raise(0, notify::STRING, "set", b"k");
        let raised = notify::take();
        assert!(raised.events.is_empty() && raised.unnoted, "{raised:?}");
        // Meanwhile a client turns tracking on and reads the key (its old value).
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        sh.tracking.add_queue(7, tx);
        sh.tracking.enable(7, &crate::tracking::Options::default()).unwrap();
        sh.tracking.announce(&sh.notifier);
        sh.tracking.remember(7, &[b"k"]);
        // The write is visible: its publication tells the tracking client.
        commands::pubsub::publish_events(&sh, Some(8), raised);
        match rx.try_recv() {
            Ok(Delivery::Invalidate { keys: None, redirected: false }) => {}
            other => panic!("expected an invalidation of everything, got {other:?}"),
        }
        // A change made while the client tracks names its key.
        sh.tracking.remember(7, &[b"k"]);
        sh.notifier.raise(0, notify::STRING, "set", b"k");
        commands::pubsub::publish_events(&sh, Some(8), notify::take());
        match rx.try_recv() {
            Ok(Delivery::Invalidate { keys: Some(keys), .. }) => assert_eq!(&keys[..], [b"k"]),
            other => panic!("expected an invalidation of k, got {other:?}"),
        }
    }
}
