//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis's semantics and replies.
//!
//! After MULTI a connection's commands are checked (name, arity, authentication, cluster
//! routing) and queued (`+QUEUED`) instead of run ([`queue`], from `dispatch`); a refused
//! one is answered with its error and dooms the transaction, which EXEC then discards
//! (`EXECABORT`). EXEC runs the queued commands one after another while holding the
//! key-lock stripes of every key they name (and of the watched keys), so no other writer of
//! those keys runs in between; their writes gather in the thread's overlay
//! (`storage::overlay`), which their own reads see, and are written as one batch at the end
//! (`Store::commit_overlay`): readers elsewhere see all of the transaction or none, and a
//! crash keeps all or none. The reply is the array of the commands' replies (an error among
//! them is that command's reply only, as in Redis). If the final write fails, EXEC's reply
//! is that error and nothing was written.
//!
//! WATCH notes the store's watch point per key, and whether the key had expired in place;
//! EXEC, under the locks, answers a null array and runs nothing when a watched key was
//! written since (by anyone, this connection included, FLUSHALL, or the expiry task), when a
//! key live at WATCH has expired since (as Redis), or when the engine can no longer tell
//! (its memtables flushed since: a retry, not a wrong answer). EXEC and DISCARD forget the
//! watches.
//!
//! In cluster mode every key of the transaction must hash to one slot (`CROSSSLOT`
//! otherwise), as Redis Cluster requires; the batch is then one entry of that slot's group.

use super::cluster::CROSSSLOT;
use super::{dispatch, find, CmdResult};
use crate::resp::Out;
use crate::slots::key_slot;
use crate::state::{Conn, Multi, Shared, Watched};
use crate::storage::databases::{serve_partition, serving};
use crate::storage::{meta_key, overlay};
use crate::types::subkey;

/// Redis's reply to EXEC after a command was refused while queuing.
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// The commands that run at once inside MULTI instead of being queued.
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch" | "unwatch" | "quit" | "reset")
}

/// Commands Redis refuses inside MULTI (its `no-multi` flag): the refusal dooms the
/// transaction.
pub fn refused_inside_multi(name: &str) -> bool {
    matches!(name, "save" | "shutdown" | "sync" | "psync")
}

/// Whether a command may read or write a database other than its connection's (or all of
/// them): a transaction or script running one settles the metadata cache wholesale.
pub fn spans_databases(name: &str) -> bool {
    matches!(name, "select" | "move" | "copy" | "swapdb" | "flushdb" | "flushall")
}

/// Whether the transaction being queued runs SWAPDB (its EXEC then runs alone).
pub fn swaps(conn: &Conn) -> bool {
    conn.multi
        .as_ref()
        .is_some_and(|m| m.queued.iter().any(|a| a[0].eq_ignore_ascii_case(b"swapdb")))
}

/// Queues `args` (checked) for EXEC and answers `+QUEUED`.
pub fn queue(conn: &mut Conn, args: &[Vec<u8>], out: &mut Out) {
    if let Some(m) = conn.multi.as_mut() {
        m.queued.push(args.to_vec());
        m.queued_bytes += args.iter().map(Vec::len).sum::<usize>();
        out.simple("QUEUED");
    }
}

/// Marks the transaction being queued as doomed (a command was refused).
pub fn doom(conn: &mut Conn) {
    if let Some(m) = conn.multi.as_mut() {
        m.failed = true;
    }
}

/// MULTI.
pub fn multi(_: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if conn.multi.is_some() {
        return Err("ERR MULTI calls can not be nested".into());
    }
    conn.multi = Some(Multi::default());
    out.ok();
    Ok(())
}

/// DISCARD.
pub fn discard(_: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if conn.multi.take().is_none() {
        return Err("ERR DISCARD without MULTI".into());
    }
    conn.watched.clear();
    out.ok();
    Ok(())
}

/// WATCH key [key ...].
pub fn watch(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if conn.multi.is_some() {
        return Err("ERR WATCH inside MULTI is not allowed".into());
    }
    let point = sh.engine().watch_point();
    let db = conn.db;
    let ks = sh.keyspace(db);
    let (set, swaps) = (sh.dbs.set_of(db), sh.dbs.swaps_of(db));
    for k in &a[1..] {
        if !conn.watched.iter().any(|w| w.key == *k && w.db == db) {
            let expired = ks.expired_in_place(k)?;
            let partition = serving();
            let w = Watched { key: k.clone(), db, set, swaps, point, expired, partition };
            conn.watched.push(w);
        }
    }
    out.ok();
    Ok(())
}

/// UNWATCH.
pub fn unwatch(_: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    conn.watched.clear();
    out.ok();
    Ok(())
}

/// Whether the watched key `w` may have changed since it was watched: its metadata record,
/// sub-keys or score entries written since its watch point (in the set it was watched in);
/// or, when a SWAPDB named its database since, whether it is live on either side (Redis's
/// rule: a swap touches a watched key that exists, or comes to exist, and leaves one that
/// was and stays absent or expired).
fn touched_since(sh: &Shared, w: &Watched) -> strata::Result<bool> {
    if sh.dbs.swaps_of(w.db) != w.swaps {
        let now = crate::types::now_ms();
        let live = |set: u32| -> strata::Result<bool> {
            let Some(st) = sh.dbs.store_of_set(set) else { return Ok(false) };
            let raw = st.read_meta_uncached(&w.key)?;
            let meta = raw.as_deref().and_then(|r| crate::types::Meta::decode(r).ok());
            Ok(meta.is_some_and(|m| !m.expired(now)))
        };
        if live(w.set)? || live(sh.dbs.set_of(w.db))? {
            return Ok(true);
        }
    }
    // On a cluster node, the view of the partition it was watched in (served by the caller).
    let store = if sh.dbs.is_partitioned() {
        sh.dbs.store(w.db)
    } else {
        let Some(store) = sh.dbs.store_of_set(w.set) else { return Ok(true) };
        store
    };
    let (key, point) = (w.key.as_slice(), w.point);
    let meta = meta_key(store.filing, key);
    let mut meta_end = meta.clone();
    meta_end.push(0);
    let (sub, sub_end) = subkey::key_range(store.filing, key);
    Ok(store.written_since(&store.meta_cf, &meta, &meta_end, point)?
        || store.written_since(&store.sub_cf, &sub, &sub_end, point)?
        || store.written_since(&store.score_cf, &sub, &sub_end, point)?)
}

/// Ends this thread's overlay however EXEC leaves (an early return, a panic).
struct OverlayScope;

impl Drop for OverlayScope {
    fn drop(&mut self) {
        overlay::take();
    }
}

/// EXEC.
pub fn exec(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let Some(m) = conn.multi.take() else {
        return Err("ERR EXEC without MULTI".into());
    };
    let watched = std::mem::take(&mut conn.watched);
    if m.failed {
        return Err(EXECABORT.into());
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut wide = false;
    for args in &m.queued {
        if let Some(cmd) = find(sh, &args[0]) {
            keys.extend(cmd.keys.of(args));
            wide |= spans_databases(cmd.name);
        }
    }
    // In cluster mode the transaction's keys share a slot, whose partition its writes are
    // filed under (each queued command checked it when queued, and sets it again when run).
    let mut _serving = None;
    if let Some(router) = sh.router.as_ref() {
        let mut slots = keys.iter().map(|k| key_slot(k));
        if let Some(first) = slots.next() {
            if slots.any(|s| s != first) {
                return Err(CROSSSLOT.into());
            }
            _serving = Some(serve_partition(router.partition_of(first)));
        }
    }
    let mut locked: Vec<&[u8]> = keys.clone();
    locked.extend(watched.iter().map(|w| w.key.as_slice()));
    let _held = sh.engine().locks.lock(&locked);
    for w in &watched {
        let _watched_in = sh.router.is_some().then(|| serve_partition(w.partition));
        // A key swapped away is judged by the swap's rule alone (`touched_since`).
        let swapped = sh.dbs.swaps_of(w.db) != w.swaps;
        let mut expired_since = false;
        if !swapped {
            let ks = sh.keyspace(w.db);
            let stored = ks.stored_meta(&w.key)?;
            // A key already expired at WATCH and removed since (read, deleted, flushed) did
            // not change for the client, who saw it absent and sees it absent (Redis 7.0's
            // rule). A key made and removed again in between passes too where Redis would
            // fail the EXEC: the transaction still runs on the state the client saw.
            if w.expired && stored.is_none() {
                continue;
            }
            // A key live at WATCH whose time is up since did change (Redis's rule).
            expired_since = !w.expired && stored.is_some_and(|m| m.expired(ks.now_ms));
        }
        if expired_since || touched_since(sh, w)? {
            out.null_array();
            return Ok(());
        }
    }
    let first_db = conn.db;
    let mut body = Out { buf: Vec::new(), resp3: out.resp3 };
    let _scope = OverlayScope;
    overlay::begin();
    conn.in_exec = true;
    // One time for the whole transaction, as Redis 7.0 keeps the clock of the EXEC's call:
    // a key does not expire between two of its commands.
    crate::types::keyspace::with_time_held(|| {
        for args in &m.queued {
            dispatch(sh, conn, args, &mut body);
        }
    });
    conn.in_exec = false;
    if let Err(e) = sh.dbs.store(first_db).commit_overlay(&keys, wide) {
        conn.touched.clear();
        crate::types::notify::discard();
        super::propagation::discard_gathered();
        return Err(crate::types::TypeError::from(e).into());
    }
    // Its writes go to the replicas as one transaction, under its locks.
    super::propagation::append_gathered(sh, conn);
    out.array(m.queued.len());
    out.buf.extend_from_slice(&body.buf);
    Ok(())
}
