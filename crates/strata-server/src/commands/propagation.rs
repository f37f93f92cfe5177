//! What each command puts in the replication stream (`storage::backlog`), as redis-server
//! 7.0 propagates it to its replicas.
//!
//! A top-level command that may write [`enter`]s the stream: while it is on, the command
//! holds its keys' locks (every lock for one of no keys, such as FLUSHALL) until its
//! entries are appended ([`leave`]), so the stream orders the writes of a key as they were
//! made. EXEC and scripts take their own locks and append their gathered commands under
//! them ([`append_gathered`], as one MULTI/EXEC); a blocked client served by another's write
//! is a top-level command of its own (`blocking`).
//!
//! Each command, at any depth, goes to the stream when it wrote ([`end`]): as it was sent,
//! unless its handler replaced it with the commands of its effect
//! (`storage::propagated::replace`: a relative expiry as an absolute one, a pop as the pop
//! it made, a random choice as what was chosen; XREADGROUP, XCLAIM and XAUTOCLAIM as the
//! XCLAIMs and XGROUPs of what they changed, `stream_group::propagate`). SORT ... STORE,
//! whose equal elements keep a set's order, goes as the state it left: a RESTORE of the key
//! it wrote, or its DEL. Some go whether or not they wrote: FLUSHALL, FLUSHDB, SWAPDB,
//! FUNCTION's writes and PUBLISH (for the replicas' subscribers).

use crate::state::{Conn, Shared};
use crate::storage::backlog::Entered;
use crate::storage::locks::Guards;
use crate::storage::propagated;
use crate::types::rdb::{self, key};

use super::args::is;
use super::scripting::runs_script;
use super::Command;

/// A top-level command that entered the stream.
pub struct Top<'a> {
    sh: &'a Shared,
    _entered: Entered<'a>,
    _keys: Option<Guards<'a>>,
    opened: bool,
}

/// Whether `cmd` as `args` call it goes to the stream even when it wrote nothing of the
/// keys' records.
fn always(cmd: &Command, args: &[Vec<u8>]) -> bool {
    match cmd.name {
        "flushall" | "flushdb" | "swapdb" | "publish" | "spublish" => true,
        "function" => args
            .get(1)
            .is_some_and(|s| ["load", "delete", "flush", "restore"].iter().any(|w| is(s, w))),
        _ => false,
    }
}

/// Whether `cmd` goes as the state it left (module doc).
fn as_state(cmd: &Command, args: &[Vec<u8>]) -> bool {
    cmd.name == "sort" && args.iter().any(|a| is(a, "store"))
}

/// Whether a top-level `cmd` may put anything in the stream.
fn may_propagate(cmd: &Command, args: &[Vec<u8>]) -> bool {
    cmd.write || cmd.name == "exec" || runs_script(cmd.name) || always(cmd, args)
}

/// Before a top-level command (not one an EXEC or a script runs) runs: `None` when it puts
/// nothing in the stream; else it holds what [`leave`] needs.
pub fn enter<'a>(sh: &'a Shared, conn: &Conn, cmd: &Command, args: &[Vec<u8>]) -> Option<Top<'a>> {
    // A replica's stream is its master's, as it came (the link appends its bytes:
    // `replicaof::stream`); a writable replica's own writes are local, as in Redis.
    if conn.in_exec
        || conn.in_script
        || conn.master
        || !may_propagate(cmd, args)
        || sh.master_link.following()
    {
        return None;
    }
    let engine = sh.engine();
    let entered = engine.backlog.enter();
    if !entered.active() {
        return Some(Top { sh, _entered: entered, _keys: None, opened: false });
    }
    // EXEC and scripts lock for themselves, and append under their locks.
    let own = cmd.name == "exec" || runs_script(cmd.name);
    let keys = if own || matches!(cmd.name, "publish" | "spublish") {
        None
    } else if cmd.keys.has_keys() {
        Some(engine.locks.lock(&cmd.keys.of(args)))
    } else {
        Some(engine.locks.lock_all())
    };
    let opened = propagated::open();
    Some(Top { sh, _entered: entered, _keys: keys, opened })
}

/// After the top-level command of `top` ran: appends what it gathered (several commands as
/// one MULTI/EXEC, as Redis 7.0 wraps what one command propagates: the keys it found
/// expired and deleted with its own, the XCLAIMs of an XREADGROUP), then lets its keys go.
/// The connection's last write is then at the stream's end (WAIT).
pub fn leave(top: Top<'_>, conn: &mut Conn) {
    if top.opened {
        let items = propagated::close();
        if !items.is_empty() && !became_replica(top.sh, conn) {
            top.sh.engine().backlog.append(&items, true);
            conn.repl_offset = top.sh.engine().backlog.offset();
        }
    }
}

/// Inside EXEC or a script, under its locks, once its writes are written: appends what its
/// commands gathered, as one MULTI/EXEC when there are several.
pub fn append_gathered(sh: &Shared, conn: &mut Conn) {
    if !propagated::is_open() {
        return;
    }
    let items = propagated::close();
    propagated::open();
    if !items.is_empty() && !became_replica(sh, conn) {
        sh.engine().backlog.append(&items, true);
        conn.repl_offset = sh.engine().backlog.offset();
    }
}

/// Whether this server started following a master while `conn`'s command ran (a REPLICAOF
/// inside its transaction): its writes are then local, as a replica's (Redis drops the
/// transaction from the stream).
fn became_replica(sh: &Shared, conn: &Conn) -> bool {
    !conn.master && sh.master_link.following()
}

/// Drops what an EXEC or a script gathered: its writes failed.
pub fn discard_gathered() {
    if propagated::is_open() {
        propagated::close();
        propagated::open();
    }
}

/// A command (at any depth) begins: its state for [`end`], `None` when nothing gathers.
pub fn begin() -> Option<(bool, u64)> {
    propagated::is_open().then(propagated::begin_command)
}

/// The command begun with `begun` ran in database `db` (the connection's when it began),
/// `ok` if it did not fail: it goes to the stream by the module doc's rules.
pub fn end(
    sh: &Shared,
    begun: Option<(bool, u64)>,
    db: usize,
    cmd: &Command,
    args: &[Vec<u8>],
    ok: bool,
) {
    let Some(begun) = begun else { return };
    let (replaced, wrote) = propagated::end_command(begun);
    if replaced || !ok || cmd.name == "exec" || runs_script(cmd.name) {
        return;
    }
    if !(wrote || always(cmd, args)) {
        return;
    }
    if as_state(cmd, args) {
        for k in written_keys(cmd, args) {
            push_state(sh, db, &k);
        }
        return;
    }
    propagated::push(db, args);
}

/// The keys `cmd` wrote, of those its line names: SORT's STORE destination; the others'
/// keys.
fn written_keys(cmd: &Command, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    if cmd.name == "sort" {
        return args
            .iter()
            .position(|a| is(a, "store"))
            .and_then(|i| args.get(i + 1))
            .map(|k| vec![k.clone()])
            .unwrap_or_default();
    }
    cmd.keys.of(args).into_iter().map(<[u8]>::to_vec).collect()
}

/// Gathers `key`'s state in database `db`: a RESTORE of its value with its expiry time, or
/// a DEL when it is gone.
pub fn push_state(sh: &Shared, db: usize, k: &[u8]) {
    let ks = sh.keyspace(db);
    let state = (|| -> crate::types::Result<Option<(Vec<u8>, u64)>> {
        let Some(m) = ks.meta(k)? else { return Ok(None) };
        let v = key::read_of(&ks, k, m.clone())?;
        Ok(Some((rdb::encode_payload(&v, &super::dump::encodings(sh)), m.expire_ms)))
    })();
    let argv = match state {
        Ok(Some((payload, at))) => vec![
            b"RESTORE".to_vec(),
            k.to_vec(),
            at.to_string().into_bytes(),
            payload,
            b"REPLACE".to_vec(),
            b"ABSTTL".to_vec(),
        ],
        // A key gone, or one whose records cannot be read (the replica's copy goes rather
        // than stay different).
        _ => propagated::del(k),
    };
    propagated::push(db, &argv);
}

/// Replaces the running command with `PEXPIREAT key at`, or with `DEL key` when `at` had
/// passed (the key was deleted).
pub fn expire_at(db: usize, k: &[u8], at: u64, deleted: bool) {
    if !propagated::is_open() {
        return;
    }
    if deleted {
        propagated::replace(db, &propagated::del(k));
    } else {
        propagated::replace(db, &[b"PEXPIREAT".as_slice(), k, at.to_string().as_bytes()]);
    }
}

/// Replaces the running command with the command line `words`.
pub fn replace(db: usize, words: &[&[u8]]) {
    if propagated::is_open() {
        propagated::replace(db, words);
    }
}

/// Whether the stream gathers the running command (its handler builds a replacement only
/// then).
pub fn gathering() -> bool {
    propagated::is_open()
}
