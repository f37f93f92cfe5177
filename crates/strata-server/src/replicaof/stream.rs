//! The master's command stream: each command run through the ordinary dispatch as the
//! master's client, its reply dropped (REPLCONF GETACK's is the one a master reads), and the
//! replication offset counted as redis-server counts it: a command's bytes once it has run,
//! a transaction's at its EXEC (a link that breaks inside MULTI resumes before it).
//!
//! The bytes counted go to this server's own stream as they came (`storage::backlog`: its
//! replicas, and its master's other replicas after a failover, read the master's stream from
//! it), under the backlog's gate with the command's run, so that a dataset taken for a
//! replica of this one holds a command exactly when the stream it is sent starts after it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::wire::Wire;
use super::LinkError;
use crate::blocked::Cancel;
use crate::commands;
use crate::master_link::LinkState;
use crate::resp::{parse_command, Out, ParseOutcome};
use crate::state::{Conn, Shared};

/// How often the replica tells the master its offset (Redis's once a second).
const ACK_EVERY: Duration = Duration::from_secs(1);
/// How often the errors the master's commands met beyond the first few are said in the LOG
/// (`Errors`).
const SAY_ERRORS_EVERY: Duration = Duration::from_secs(10);

/// Applies the stream on `wire` until it breaks or the link is stopped.
pub fn apply(sh: &Arc<Shared>, link: &Arc<LinkState>, wire: &mut Wire) -> Result<(), LinkError> {
    let id = crate::state::next_client_id();
    let backlog = &sh.engine().backlog;
    let mut conn = Conn::new(id, true);
    conn.master = true;
    // The database the master's stream has selected where this server's stream ends (none:
    // the master selects one before its first command of a database).
    conn.db = backlog.selected().unwrap_or(0);
    let listed = Listed::new(sh, id, conn.db, wire.sock());
    // Its commands noted where CLIENT LIST reads them (`cmd`, `idle`), as a connection's.
    conn.activity.clone_from(&listed.activity);
    let mut out = Out::default();
    let max_bulk = sh.config.proto_max_bulk_len;
    // None: not yet (the first ACK goes at once: a diskless master waits for it).
    let mut acked: Option<Instant> = None;
    let mut errors = Errors::default();
    // Bytes of a transaction still open (counted, and added to this server's stream, at its
    // EXEC).
    let mut open: Vec<u8> = Vec::new();
    let mut frames: Vec<(Vec<Vec<u8>>, Vec<u8>)> = Vec::new();
    loop {
        let mut pos = 0;
        loop {
            match parse_command(&wire.buf[pos..], max_bulk) {
                Ok(ParseOutcome::Incomplete) => break,
                Ok(ParseOutcome::Command(args, n)) => {
                    frames.push((args, wire.buf[pos..pos + n].to_vec()));
                    pos += n;
                }
                Err(e) => {
                    return Err(LinkError::Failed(format!("the master's stream: {e}")));
                }
            }
        }
        wire.buf.drain(..pos);
        // A DEBUG SLEEP holds the stream's application too (`pause::Frozen`).
        sh.frozen.wait();
        for (args, bytes) in frames.drain(..) {
            // The ACK tells the offset before the GETACK, as redis-server's does.
            if is_getack(&args) {
                ack(wire, backlog.offset())?;
                acked = Some(Instant::now());
            }
            let gate = backlog.gate();
            // Stopped (REPLICAOF NO ONE, or another master): nothing more of this master's
            // stream is applied or added to this server's.
            if link.stopped() {
                return Err(LinkError::Stopped);
            }
            if !args.is_empty() && !is_getack(&args) {
                run(sh, &mut conn, &args, &mut out);
                if out.buf.first() == Some(&b'-') {
                    errors.note(sh, &args, &out.buf);
                }
                out.buf.clear();
            }
            open.extend_from_slice(&bytes);
            if conn.multi.is_none() {
                backlog.append_bytes(&open, conn.db);
                open.clear();
            }
            drop(gate);
        }
        errors.say(link);
        if acked.is_none_or(|t| t.elapsed() >= ACK_EVERY) {
            ack(wire, backlog.offset())?;
            acked = Some(Instant::now());
        }
        wire.read_more()?;
    }
}

/// Whether `args` is REPLCONF GETACK (the master asking for the offset now).
fn is_getack(args: &[Vec<u8>]) -> bool {
    args.len() >= 2
        && args[0].eq_ignore_ascii_case(b"replconf")
        && args[1].eq_ignore_ascii_case(b"getack")
}

/// Sends REPLCONF ACK `offset`.
fn ack(wire: &mut Wire, offset: u64) -> Result<(), LinkError> {
    wire.send(&[b"REPLCONF", b"ACK", offset.to_string().as_bytes()])
}

/// Runs one command of the master's as a connection's command runs: holding a pass of the
/// scripts' gate when it may take key-lock stripes (`script::gate`), waiting for the pass
/// while a script takes every stripe.
fn run(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>], out: &mut Out) {
    let cmd = commands::find(sh, &args[0]);
    let stripes = cmd.is_some_and(|c| commands::scripting::takes_stripes(c, args));
    let pass = stripes.then(|| sh.scripts.gate.enter_waiting());
    // The master's view of its keys: one whose time is up here is still there for its
    // commands until its DEL comes (`types::keyspace::as_master`).
    crate::types::keyspace::as_master(|| commands::dispatch_found(sh, conn, cmd, args, out));
    drop(pass);
    // The writes' WAL sync is requested as any connection's (`appendfsync`); nothing waits
    // for it, as no reply goes out.
    let _ = sh.engine().owed_sync();
    // A master sends no blocking command (redis-server rewrites them); one that blocked
    // anyway is let go rather than left holding the stream.
    if conn.blocked.take().is_some() {
        sh.blocked.cancel(conn.id, Cancel::Gone);
    }
}

/// Errors the master's commands met here, said in the LOG as redis-server says them (`==
/// CRITICAL == This replica is sending an error to its master: '<error>' after processing
/// the command '<name>'`): a replica that fails what its master ran has diverged from it.
/// Each is counted in INFO's `unexpected_error_replies`; the first [`SAID_AT_ONCE`] of every
/// [`SAY_ERRORS_EVERY`] are said at once, the rest together at its end, so that a replica
/// failing every command does not fill its LOG. Under `propagation-error-behavior panic` or
/// `panic-on-replicas`, a read-only replica stops the process at the first (Redis's panic:
/// its data no longer follow its master's).
#[derive(Default)]
struct Errors {
    /// Said since `window` began.
    said: u64,
    /// Not said since `window` began.
    held: u64,
    window: Option<Instant>,
}

/// Errors said at once in each [`SAY_ERRORS_EVERY`] ([`Errors`]).
const SAID_AT_ONCE: u64 = 10;

impl Errors {
    fn note(&mut self, sh: &Shared, args: &[Vec<u8>], reply: &[u8]) {
        sh.stats.unexpected_errors.fetch_add(1, Ordering::Relaxed);
        self.window.get_or_insert_with(Instant::now);
        let panics = panics(sh);
        if self.said >= SAID_AT_ONCE && !panics {
            self.held += 1;
            return;
        }
        self.said += 1;
        let reply = String::from_utf8_lossy(reply);
        let error: String =
            reply.strip_prefix('-').unwrap_or(&reply).trim_end().chars().take(4096).collect();
        let name = commands::find(sh, &args[0]).map_or("<unknown>", |c| c.name);
        eprintln!(
            "== CRITICAL == This replica is sending an error to its master: '{error}' after \
             processing the command '{name}'"
        );
        if panics {
            eprintln!(
                "This replica panicked sending an error to its master after processing the \
                 command '{name}' (propagation-error-behavior)"
            );
            std::process::abort();
        }
    }

    fn say(&mut self, link: &LinkState) {
        if self.window.is_none_or(|t| t.elapsed() < SAY_ERRORS_EVERY) {
            return;
        }
        if self.held > 0 {
            eprintln!(
                "replication link to {}:{}: {} more of the master's commands failed here",
                link.target.host, link.target.port, self.held
            );
        }
        *self = Errors::default();
    }
}

/// Whether an error the master's command met stops this replica (`Errors`): Redis's
/// `propagation-error-behavior` `panic` or `panic-on-replicas` on a read-only replica.
fn panics(sh: &Shared) -> bool {
    let behavior = sh.params.read().get("propagation-error-behavior").cloned().unwrap_or_default();
    ["panic", "panic-on-replicas"].iter().any(|b| behavior.eq_ignore_ascii_case(b))
        && commands::read_only_replica(sh)
}

/// The link's client on the server's books while the stream is applied (CLIENT LIST's flag
/// `M`, INFO's `connected_clients`, CLIENT KILL TYPE master), taken off when it ends.
struct Listed<'a> {
    sh: &'a Shared,
    id: u64,
    /// Its entry's activity, when it is on the books.
    activity: Option<Arc<crate::state::Activity>>,
}

impl<'a> Listed<'a> {
    fn new(sh: &'a Shared, id: u64, db: usize, sock: &std::net::TcpStream) -> Listed<'a> {
        use std::os::fd::AsRawFd;
        let addr = |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.to_string());
        let entry = crate::state::ClientEntry {
            addr: addr(sock.peer_addr()).unwrap_or_default(),
            laddr: addr(sock.local_addr()).unwrap_or_default(),
            fd: i64::from(sock.as_raw_fd()),
            since: Some(Instant::now()),
            resp: 2,
            db,
            // Without a clone of the socket, CLIENT KILL could not end the link.
            master_link: sock.try_clone().ok().map(Arc::new),
            ..crate::state::ClientEntry::default()
        };
        let activity = entry.master_link.is_some().then(|| entry.activity.clone());
        if activity.is_some() {
            sh.stats.connected.fetch_add(1, Ordering::Relaxed);
            sh.clients.lock().insert(id, entry);
        }
        Listed { sh, id, activity }
    }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        // CLIENT KILL takes it off the books itself, counting it gone there.
        if self.sh.clients.lock().remove(&self.id).is_some() {
            self.sh.stats.connected.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
