//! The commands over databases (`storage::databases`): SELECT, MOVE, SWAPDB, and the
//! database argument of COPY ... DB. Each refuses what Redis refuses, with its replies: an
//! index that is not an integer, one out of range, and in cluster mode any database but 0.

use super::errors::{CmdError, NOT_INT};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::databases::{self, DbError};
use crate::types::keys;

/// Redis's reply to an index past the databases configured (or negative).
pub const OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// A database index argument (`not_int`: the reply when it is not an integer), checked to
/// be one of this server's databases, whose set then exists (`Databases::ensure`).
pub fn db_arg(sh: &Shared, arg: &[u8], not_int: &str) -> Result<usize, CmdError> {
    let db = usize::try_from(index_arg(arg, not_int)?).map_err(|_| CmdError::from(OUT_OF_RANGE))?;
    sh.dbs.ensure(db).map_err(db_error)?;
    Ok(db)
}

/// An index argument as Redis reads it, a C int: one past that range is "not an integer"
/// (`not_int`, the reply).
fn index_arg(arg: &[u8], not_int: &str) -> Result<i32, CmdError> {
    crate::types::number::parse_int_strict(arg)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| CmdError::from(not_int.to_string()))
}

/// The reply to a failed [`databases::Databases::ensure`] or swap.
fn db_error(e: DbError) -> CmdError {
    match e {
        DbError::OutOfRange(_) => OUT_OF_RANGE.into(),
        DbError::Engine(e) => format!("ERR {e}").into(),
    }
}

/// SELECT index.
pub fn select(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        if index_arg(&a[1], NOT_INT)? != 0 {
            return Err("ERR SELECT is not allowed in cluster mode".into());
        }
        out.ok();
        return Ok(());
    }
    let db = db_arg(sh, &a[1], NOT_INT)?;
    note_db(sh, c, db);
    out.ok();
    Ok(())
}

/// Puts connection `c` on database `db` (its set exists), as CLIENT LIST shows it too.
pub fn note_db(sh: &Shared, c: &mut Conn, db: usize) {
    if c.db != db {
        c.db = db;
        if let Some(e) = sh.clients.lock().get_mut(&c.id) {
            e.db = db;
        }
    }
}

/// MOVE key db.
pub fn move_(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR MOVE is not allowed in cluster mode".into());
    }
    let to = db_arg(sh, &a[2], NOT_INT)?;
    if sh.dbs.set_of(to) == sh.dbs.set_of(c.db) {
        return Err("ERR source and destination objects are the same".into());
    }
    let moved = keys::move_key(&sh.keyspace(c.db), &sh.keyspace(to), &a[1])?;
    if moved {
        // Clients blocked on the key in the target database (`blocking::signal`).
        c.touched.push(crate::blocked::waited_key(to, &a[1]));
    }
    out.int(i64::from(moved));
    Ok(())
}

/// SWAPDB index1 index2: the two databases exchange their data, for every connection.
/// It runs with the map pinned exclusively (`dispatch`): no other command, nor the expiry
/// task, runs meanwhile. A script's call cannot have that pin.
pub fn swapdb(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR SWAPDB is not allowed in cluster mode".into());
    }
    let first = db_arg(sh, &a[1], "ERR invalid first DB index")?;
    let second = db_arg(sh, &a[2], "ERR invalid second DB index")?;
    if !databases::pinned_exclusively() {
        return Err("ERR SWAPDB is not allowed from scripts on this server".into());
    }
    if first != second {
        sh.dbs.swap(first, second).map_err(db_error)?;
    }
    sh.notifier.count_changes(1);
    // The tracking table ignores databases: every cached key may now be another's.
    super::client_tracking::flushed(sh);
    // The clients blocked on keys of either database look again (`blocking::signal`).
    c.touched.extend(sh.blocked.waited_keys_in(&[first, second]));
    out.ok();
    Ok(())
}
