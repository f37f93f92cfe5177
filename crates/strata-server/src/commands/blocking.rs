//! Blocking commands (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX, BZMPOP,
//! XREAD BLOCK, XREADGROUP BLOCK): how a command that finds nothing blocks its connection,
//! and how the clients blocked on a key are served when it is written.
//!
//! A handler that finds nothing calls [`block`]: the connection is registered in the
//! server's [`Blocked`] registry on the command's keys and, back in the connection loop,
//! waits (asynchronously) for its outcome, its timeout or its client's departure; frames
//! pipelined after the command wait with it (`server::listener`).
//!
//! Serving follows Redis: after a top-level write command (or EXEC) finishes, in the context
//! of its connection, [`signal`] serves the clients blocked on the keys it wrote, first come
//! first served: each one's command line is re-run through its handler with the written key
//! as the *ready key* ([`ready_key`]); a handler re-run that finds nothing calls [`block`]
//! again, which leaves the client blocked in its place. A served command's own writes (the
//! destination of BLMOVE) serve that key's waiters in the same pass. So a client blocked
//! before another is served before it, an element pushed and deleted by one transaction
//! wakes nobody, and a blocked client never misses a write made while it was registering
//! (after registering, one serving pass runs over its own keys).
//!
//! Lock order: a serving pass is never started while the thread holds key locks (the
//! dispatch-level ones of a reader of several keys, EXEC's, a script's): [`signal`] runs
//! after `dispatch` has dropped them. A pass re-runs commands that take key locks, so one
//! started under a lock could wait for a stripe whose holder waits for the pass.
//!
//! Inside EXEC a blocking command does not block: it answers as at its timeout (Redis).
//! A served client's reply waits for the WAL sync its write owes (`appendfsync always`);
//! in cluster mode the re-runs write synchronously (their reply is the write's outcome).

use super::errors::CmdError;
use super::{find, run_handler, CmdResult, Command};
use crate::blocked::{split_waited_key, waited_key, Blocked, Cancel, Outcome};
use crate::resp::Out;
use crate::state::{BlockedOn, Conn, Shared};
use crate::storage::databases::serve_partition;
use crate::storage::{pending, sync_group};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What a blocked command replies when its time is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutReply {
    /// A null array (BLPOP, BZPOPMIN, BLMPOP, XREAD...).
    NullArray,
    /// A null bulk string (BLMOVE, BRPOPLPUSH).
    Null,
    /// The integer 0 (WAIT on a server no replica can acknowledge).
    Zero,
    /// This integer (WAIT: the replicas that had acknowledged when it blocked).
    Int(i64),
}

/// What a blocking command that found nothing waits for.
#[derive(Debug, Clone)]
pub struct BlockRequest {
    /// The keys whose writes wake it.
    pub keys: Vec<Vec<u8>>,
    /// How long it waits; `None`: forever.
    pub timeout: Option<Duration>,
    /// Its reply when the time is up.
    pub on_timeout: TimeoutReply,
    /// The command line re-run when a key is written (`None`: the one given).
    pub retry: Option<Vec<Vec<u8>>>,
}

/// CLIENT UNBLOCK ... ERROR's reply to the unblocked client.
pub const UNBLOCKED_ERROR: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// The server turns into a replica (REPLICAOF host port, FAILOVER): every blocked client
/// (on keys, or in WAIT) is answered Redis's UNBLOCKED error now, as redis-server answers
/// them then. Left blocked, one would be served by a write its master sent, and pop on the
/// replica what the master keeps.
pub fn unblock_for_replica(sh: &Shared) {
    const WHY: &str =
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";
    for id in sh.blocked.blocked_ids() {
        sh.blocked.cancel(id, Cancel::Error(WHY.into()));
    }
}

/// Nothing is ready for the command `args`: blocks the connection on `req.keys` (writing
/// nothing), or inside EXEC answers the timeout reply at once. On a re-run (a waited key was
/// written), leaves the client blocked where it was.
pub fn block(
    sh: &Shared,
    conn: &mut Conn,
    args: &[Vec<u8>],
    req: BlockRequest,
    out: &mut Out,
) -> CmdResult {
    if let Some(r) = conn.retry.as_mut() {
        r.still_blocked = true;
        return Ok(());
    }
    if conn.in_exec {
        timeout_reply(req.on_timeout, out);
        return Ok(());
    }
    let mut on_timeout = Out { buf: Vec::new(), resp3: conn.resp3 };
    timeout_reply(req.on_timeout, &mut on_timeout);
    let line = req.retry.unwrap_or_else(|| args.to_vec());
    let keys: Vec<Vec<u8>> = req.keys.iter().map(|k| waited_key(conn.db, k)).collect();
    let rx = sh.blocked.register(conn.id, &keys, line, conn.resp3, on_timeout.buf);
    let deadline = req.timeout.and_then(|t| Instant::now().checked_add(t));
    let command = find(sh, &args[0]).map_or(usize::MAX, super::index_of);
    conn.blocked = Some(BlockedOn {
        rx,
        deadline,
        command,
        silent: false,
        slow: None,
        first_run: std::time::Duration::ZERO,
    });
    // A write between the handler's look and the registration served nobody: `dispatch`
    // serves these keys once the command has let go of every key lock it took.
    conn.touched = keys;
    Ok(())
}

fn timeout_reply(kind: TimeoutReply, out: &mut Out) {
    match kind {
        TimeoutReply::NullArray => out.null_array(),
        TimeoutReply::Null => out.null(),
        TimeoutReply::Zero => out.int(0),
        TimeoutReply::Int(n) => out.int(n),
    }
}

/// Whether this call is a re-run of a blocked command (one of its keys was written).
pub fn is_retry(conn: &Conn) -> bool {
    conn.retry.is_some()
}

/// On a re-run, the key whose write woke it: Redis serves a client blocked on several keys
/// from that one.
pub fn ready_key(conn: &Conn) -> Option<&[u8]> {
    conn.retry.as_ref().map(|r| r.key.as_slice())
}

/// BLPOP's (and the other list and sorted-set pops') timeout: seconds as a float, 0 for
/// forever; Redis's errors for text that is not a number, a negative or an out-of-range one.
pub fn seconds_timeout_arg(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    let secs = crate::types::number::parse_float(arg)
        .ok_or(CmdError::from("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    // Redis 7.0 converts the milliseconds to a 64-bit integer, which turns anything past
    // its range (infinity included) into its most negative value: "negative".
    if ms < 0.0 || !ms.is_finite() || ms >= i64::MAX as f64 {
        return Err("ERR timeout is negative".into());
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// XREAD and XREADGROUP's BLOCK argument: milliseconds as an integer, 0 for forever.
pub fn ms_timeout_arg(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    let ms = crate::types::number::parse_int_strict(arg)
        .ok_or(CmdError::from("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

/// The keys a write command `args` wrote, as far as blocked clients care: its key
/// arguments, the destinations its options name included (SORT's and GEORADIUS's STORE).
pub fn written_keys(cmd: &Command, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    cmd.keys.positions(args).into_iter().map(|i| args[i].clone()).collect()
}

/// The [`written_keys`] of `args` in database `db`, as waited keys (`blocked`).
fn written_in(db: usize, cmd: &Command, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    written_keys(cmd, args).iter().map(|k| waited_key(db, k)).collect()
}

/// The waited keys the write `args` on `conn` made ready by its own arguments: every one
/// (FLUSHALL), every one of the connection's database (FLUSHDB), else its keys there.
fn written_by(sh: &Shared, conn: &Conn, cmd: &Command, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    match cmd.name {
        "flushall" => sh.blocked.waited_keys(),
        "flushdb" => sh.blocked.waited_keys_in(&[conn.db]),
        _ => written_in(conn.db, cmd, args),
    }
}

/// The waited keys a top-level write `args` on `conn` may have made ready: what it noted
/// while it ran (EXEC's and a script's commands' keys, SWAPDB's two databases', the target
/// of MOVE and COPY ... DB), and for any command but EXEC and a script, [`written_by`].
fn ready_after(sh: &Shared, conn: &mut Conn, cmd: &Command, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut touched = std::mem::take(&mut conn.touched);
    if cmd.name != "exec" && !super::scripting::runs_script(cmd.name) {
        touched.extend(written_by(sh, conn, cmd, args));
    }
    touched
}

/// After the top-level command `args` ran on `conn`: serves the clients blocked on what it
/// wrote ([`ready_after`]).
pub fn signal(sh: &Shared, conn: &mut Conn, cmd: &Command, args: &[Vec<u8>]) {
    if conn.blocked.is_some() {
        // It blocked: one serving pass over its own keys (`block`).
        let touched = std::mem::take(&mut conn.touched);
        serve(sh, touched);
        return;
    }
    if sh.blocked.count() == 0 || !cmd.write {
        conn.touched.clear();
        return;
    }
    let keys = ready_after(sh, conn, cmd, args);
    serve(sh, keys);
}

/// Inside EXEC: notes what the queued write `args` wrote, for [`signal`] after EXEC.
pub fn note_in_exec(sh: &Shared, conn: &mut Conn, cmd: &Command, args: &[Vec<u8>]) {
    if !cmd.write || sh.blocked.count() == 0 {
        return;
    }
    let keys = written_by(sh, conn, cmd, args);
    conn.touched.extend(keys);
}

/// Serves the clients blocked on `keys` (waited keys: `blocked`), and on the keys their
/// served commands write.
pub fn serve(sh: &Shared, keys: Vec<Vec<u8>>) {
    let blocked: &Blocked = &sh.blocked;
    if blocked.count() == 0 {
        return;
    }
    let mut ready: VecDeque<Vec<u8>> =
        keys.into_iter().filter(|k| blocked.has_waiters(k)).collect();
    if ready.is_empty() {
        return;
    }
    let _one_pass = blocked.serving.lock();
    // The writer's own replicated write is applied before its waiters read (cluster mode),
    // and its owed WAL sync stays its own: a served client's is taken apart below.
    let _ = pending::settle_own();
    let writer_owes = sync_group::take_owed_sync();
    pending::undeferred(|| {
        while let Some(key) = ready.pop_front() {
            for id in blocked.waiters_of(&key) {
                let Some(claimed) = blocked.claim(id) else { continue };
                let mut guard = Unclaim { blocked, id, armed: true };
                let Some(reply) = rerun(sh, id, &key, &claimed.line, claimed.resp3) else {
                    continue;
                };
                guard.armed = false;
                let sync = sh.engine().owed_sync();
                blocked.served(id, Outcome { reply, sync, served: true });
                if let (Some(cmd), Some((db, _))) =
                    (find(sh, &claimed.line[0]), split_waited_key(&key))
                {
                    ready.extend(
                        written_in(db, cmd, &claimed.line)
                            .into_iter()
                            .filter(|k| *k != key && blocked.has_waiters(k)),
                    );
                }
            }
        }
    });
    if writer_owes {
        sync_group::owe_sync();
    }
}

/// Puts a claimed waiter back if its re-run did not serve it (or panicked).
struct Unclaim<'a> {
    blocked: &'a Blocked,
    id: u64,
    armed: bool,
}

impl Drop for Unclaim<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.blocked.unserved(self.id);
        }
    }
}

/// Re-runs a blocked client's command with `key` (a waited key: its database and user key)
/// ready: its reply, or `None` when it is still blocked.
fn rerun(sh: &Shared, id: u64, key: &[u8], line: &[Vec<u8>], resp3: bool) -> Option<Vec<u8>> {
    let cmd = find(sh, line.first()?)?;
    let (db, key) = split_waited_key(key)?;
    // In cluster mode, the key's partition (the woken command's keys share its slot).
    let slot = crate::slots::key_slot(key);
    let _serving = sh.router.as_ref().map(|r| serve_partition(r.partition_of(slot)));
    let mut conn = Conn::new(id, true);
    conn.resp3 = resp3;
    conn.db = db;
    conn.retry = Some(crate::state::Retry { key: key.to_vec(), still_blocked: false });
    let mut out = Out { buf: Vec::new(), resp3 };
    let started = Instant::now();
    // A served command is a write of its own in the replication stream (`propagation`).
    let top = super::propagation::enter(sh, &conn, cmd, line);
    let begun = super::propagation::begin();
    let ok = run_handler(sh, cmd, &mut conn, line, &mut out);
    super::propagation::end(sh, begun, db, cmd, line, ok);
    if let Some(top) = top {
        super::propagation::leave(top, &mut conn);
    }
    if conn.retry.is_some_and(|r| r.still_blocked) {
        return None;
    }
    // Served: the blocked command's call counts now (INFO commandstats), and it goes to
    // SLOWLOG with this run's time if that is slow enough, as in Redis.
    let took = started.elapsed();
    let us = took.as_micros() as u64;
    sh.stats.count_run(super::stats_index(super::subcommands::line_code(cmd, line)), took, ok);
    super::note_latency(sh, cmd, took);
    if sh.slowlog.is_slow(us) {
        super::log_slow(sh, id, line, us);
    }
    Some(out.buf)
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: whether client `id` was blocked (and now is not).
pub fn unblock(sh: &Shared, id: u64, error: bool) -> bool {
    let why = if error { Cancel::Error(UNBLOCKED_ERROR.into()) } else { Cancel::Timeout };
    sh.blocked.cancel(id, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_timeouts_follow_redis() {
        assert_eq!(seconds_timeout_arg(b"0").unwrap(), None);
        assert_eq!(seconds_timeout_arg(b"0.1").unwrap(), Some(Duration::from_millis(100)));
        assert_eq!(seconds_timeout_arg(b"0.0001").unwrap(), Some(Duration::from_millis(1)));
        assert_eq!(seconds_timeout_arg(b"2").unwrap(), Some(Duration::from_secs(2)));
        let err = |a: &[u8]| seconds_timeout_arg(a).unwrap_err().reply_text().into_owned();
        assert_eq!(err(b"-1"), "ERR timeout is negative");
        assert_eq!(err(b"abc"), "ERR timeout is not a float or out of range");
        assert_eq!(err(b"inf"), "ERR timeout is negative");
        assert_eq!(err(b"1e300"), "ERR timeout is negative");
    }

    #[test]
    fn millisecond_timeouts_follow_redis() {
        assert_eq!(ms_timeout_arg(b"0").unwrap(), None);
        assert_eq!(ms_timeout_arg(b"150").unwrap(), Some(Duration::from_millis(150)));
        let err = |a: &[u8]| ms_timeout_arg(a).unwrap_err().reply_text().into_owned();
        assert_eq!(err(b"-5"), "ERR timeout is negative");
        assert_eq!(err(b"1.5"), "ERR timeout is not an integer or out of range");
    }
}
