//! List commands (`types::list`), the blocking pops included (`blocking`).

use super::args::{int_arg, is, pop_count};
use super::blocking::{self, seconds_timeout_arg, BlockRequest, TimeoutReply};
use super::errors::{arity_err, CmdError, SYNTAX};
use super::{propagation, CmdResult};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::list::{self, End};
use crate::types::number::parse_int_strict;
use crate::types::{Kind, TypeError};
use std::time::Duration;

fn push(sh: &Shared, db: usize, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let len = list::push(&sh.keyspace(db), &a[1], end, &a[2..])?;
    out.int(len as i64);
    Ok(())
}

pub fn lpush(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, c.db, a, End::Left, out)
}

pub fn rpush(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push(sh, c.db, a, End::Right, out)
}

fn pop(sh: &Shared, db: usize, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        // Redis 7.0's LPOP/RPOP take one count at most: an arity error (SPOP's is a syntax
        // error).
        let name = if end == End::Left { "lpop" } else { "rpop" };
        return Err(arity_err(name).into());
    }
    let count = pop_count(a)?;
    match (list::pop(&sh.keyspace(db), &a[1], end, count.unwrap_or(1))?, count) {
        (None, Some(_)) => out.null_array(),
        (None, None) => out.null(),
        (Some(vals), None) => out.opt_bulk(vals.first().map(|v| v.as_slice())),
        (Some(vals), Some(_)) => {
            out.array(vals.len());
            for v in &vals {
                out.bulk(v);
            }
        }
    }
    Ok(())
}

pub fn lpop(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, c.db, a, End::Left, out)
}

pub fn rpop(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, c.db, a, End::Right, out)
}

pub fn lrange(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let mark = out.buf.len();
    let mut sent = 0;
    let ranged = list::range_each(&sh.keyspace(c.db), &a[1], start, stop, |n, v| {
        if sent == 0 {
            out.array(n);
        }
        sent += 1;
        out.bulk(v);
    });
    if let Err(e) = ranged {
        // Nothing of a range that turned out incomplete goes out.
        out.buf.truncate(mark);
        return Err(e.into());
    }
    if sent == 0 {
        out.array(0);
    }
    Ok(())
}

pub fn llen(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let len = list::len(&sh.keyspace(c.db), &a[1])?;
    out.int(len as i64);
    Ok(())
}

pub fn lindex(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let i = int_arg(&a[2])?;
    let v = list::index(&sh.keyspace(c.db), &a[1], i)?;
    out.opt_bulk(v.as_deref());
    Ok(())
}

fn push_existing(sh: &Shared, db: usize, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let len = list::push_existing(&sh.keyspace(db), &a[1], end, &a[2..])?;
    out.int(len as i64);
    Ok(())
}

pub fn lpushx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push_existing(sh, c.db, a, End::Left, out)
}

pub fn rpushx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    push_existing(sh, c.db, a, End::Right, out)
}

/// LINSERT key BEFORE|AFTER pivot element
pub fn linsert(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let before = if is(&a[2], "after") {
        false
    } else if is(&a[2], "before") {
        true
    } else {
        return Err(SYNTAX.into());
    };
    let n = list::insert(&sh.keyspace(c.db), &a[1], before, &a[3], &a[4])?;
    out.int(n);
    Ok(())
}

/// LSET key index element
pub fn lset(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    list::set(&sh.keyspace(c.db), &a[1], parse_int_strict(&a[2]), &a[3])?;
    out.ok();
    Ok(())
}

/// LREM key count element
pub fn lrem(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let count = int_arg(&a[2])?;
    let n = list::remove(&sh.keyspace(c.db), &a[1], count, &a[3])?;
    out.int(n as i64);
    Ok(())
}

/// LTRIM key start stop
pub fn ltrim(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (start, stop) = (int_arg(&a[2])?, int_arg(&a[3])?);
    list::trim(&sh.keyspace(c.db), &a[1], start, stop)?;
    out.ok();
    Ok(())
}

/// A non-negative integer option, or `msg` (Redis's `getPositiveLongFromObjectOrReply`).
fn non_negative(arg: &[u8], msg: &'static str) -> Result<u64, CmdError> {
    match parse_int_strict(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(msg.into()),
    }
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
pub fn lpos(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
    let mut i = 3;
    while i < a.len() {
        let more = i + 1 < a.len();
        if is(&a[i], "rank") && more {
            rank = int_arg(&a[i + 1])?;
            if rank == 0 {
                return Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from \
                            the second ... or use negative to start from the end of the list"
                    .into());
            }
        } else if is(&a[i], "count") && more {
            count = Some(non_negative(&a[i + 1], "ERR COUNT can't be negative")?);
        } else if is(&a[i], "maxlen") && more {
            maxlen = non_negative(&a[i + 1], "ERR MAXLEN can't be negative")?;
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    // `i64::MIN` has no positive counterpart: Redis 7.0 negates it into itself, searches
    // from the tail and takes every match from the first on, as RANK -1 does.
    let rank = if rank == i64::MIN { -1 } else { rank };
    let want = count.map_or(1, |c| c);
    let found = list::positions(&sh.keyspace(c.db), &a[1], &a[2], rank, want, maxlen)?;
    match count {
        None => match found.as_ref().and_then(|f| f.first()) {
            Some(&p) => out.int(p as i64),
            None => out.null(),
        },
        Some(_) => {
            let found = found.unwrap_or_default();
            out.array(found.len());
            for p in found {
                out.int(p as i64);
            }
        }
    }
    Ok(())
}

/// LEFT or RIGHT, or a syntax error.
fn end_arg(arg: &[u8]) -> Result<End, CmdError> {
    if is(arg, "left") {
        Ok(End::Left)
    } else if is(arg, "right") {
        Ok(End::Right)
    } else {
        Err(SYNTAX.into())
    }
}

fn move_one(sh: &Shared, db: usize, a: &[Vec<u8>], from: End, to: End, out: &mut Out) -> CmdResult {
    let v = list::move_one(&sh.keyspace(db), &a[1], &a[2], from, to)?;
    out.opt_bulk(v.as_deref());
    Ok(())
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
pub fn lmove(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (from, to) = (end_arg(&a[3])?, end_arg(&a[4])?);
    move_one(sh, c.db, a, from, to, out)
}

/// RPOPLPUSH source destination
pub fn rpoplpush(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    move_one(sh, c.db, a, End::Right, End::Left, out)
}

/// The arguments of LMPOP and BLMPOP from `numkeys_at` on: `numkeys key [key ...]
/// LEFT|RIGHT [COUNT count]`; the keys' index range, the end and the count.
fn mpop_args(
    a: &[Vec<u8>],
    numkeys_at: usize,
) -> Result<(std::ops::Range<usize>, End, u64), CmdError> {
    const NUMKEYS: &str = "ERR numkeys should be greater than 0";
    let numkeys = match parse_int_strict(&a[numkeys_at]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(NUMKEYS.into()),
    };
    let where_idx = numkeys.saturating_add(numkeys_at as u64 + 1);
    if where_idx >= a.len() as u64 {
        return Err(SYNTAX.into());
    }
    let where_idx = where_idx as usize;
    let end = end_arg(&a[where_idx])?;
    let mut count = None;
    let mut i = where_idx + 1;
    while i < a.len() {
        if count.is_none() && is(&a[i], "count") && i + 1 < a.len() {
            count = Some(match parse_int_strict(&a[i + 1]) {
                Some(n) if n >= 1 => n as u64,
                _ => return Err("ERR count should be greater than 0".into()),
            });
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok((numkeys_at + 1..where_idx, end, count.unwrap_or(1)))
}

/// The running pop goes to the replicas as the LPOP or RPOP of what it took from `key`
/// (with its count when `counted`).
fn propagate_pop(db: usize, key: &[u8], end: End, n: usize, counted: bool) {
    let name: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
    let n = n.to_string();
    if counted {
        propagation::replace(db, &[name, key, n.as_bytes()]);
    } else {
        propagation::replace(db, &[name, key]);
    }
}

fn reply_popped(out: &mut Out, key: &[u8], vals: &[Vec<u8>]) {
    out.array(2);
    out.bulk(key);
    out.array(vals.len());
    for v in vals {
        out.bulk(v);
    }
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
pub fn lmpop(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (keys, end, count) = mpop_args(a, 1)?;
    match list::pop_first(&sh.keyspace(c.db), &a[keys], end, count)? {
        None => out.null_array(),
        Some((key, vals)) => {
            propagate_pop(c.db, &key, end, vals.len(), true);
            reply_popped(out, &key, &vals);
        }
    }
    Ok(())
}

/// The blocking pops' first look, or a re-run's: pops from the first non-empty list of
/// `keys` (on a re-run, from the written key only, and only if it is a list: Redis's
/// rule), or `None` when there is nothing to pop.
fn pop_ready(
    sh: &Shared,
    db: usize,
    conn: &Conn,
    keys: &[Vec<u8>],
    end: End,
    count: u64,
) -> Result<Option<list::Popped>, CmdError> {
    let ks = sh.keyspace(db);
    match blocking::ready_key(conn) {
        None => Ok(list::pop_first(&ks, keys, end, count)?),
        Some(k) => match list::pop_first(&ks, &[k.to_vec()], end, count) {
            Err(TypeError::WrongType) => Ok(None),
            r => Ok(r?),
        },
    }
}

fn block_on(keys: &[Vec<u8>], timeout: Option<Duration>, on_timeout: TimeoutReply) -> BlockRequest {
    BlockRequest { keys: keys.to_vec(), timeout, on_timeout, retry: None }
}

fn bpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let timeout = seconds_timeout_arg(&a[a.len() - 1])?;
    let keys = &a[1..a.len() - 1];
    match pop_ready(sh, conn.db, conn, keys, end, 1)? {
        Some((key, vals)) => {
            propagate_pop(conn.db, &key, end, vals.len(), false);
            out.array(2);
            out.bulk(&key);
            out.bulk(vals.first().map_or(&[][..], |v| v.as_slice()));
            Ok(())
        }
        None => blocking::block(sh, conn, a, block_on(keys, timeout, TimeoutReply::NullArray), out),
    }
}

/// BLPOP key [key ...] timeout
pub fn blpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bpop(sh, conn, a, End::Left, out)
}

/// BRPOP key [key ...] timeout
pub fn brpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bpop(sh, conn, a, End::Right, out)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
pub fn blmpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let timeout = seconds_timeout_arg(&a[1])?;
    let (keys, end, count) = mpop_args(a, 2)?;
    match pop_ready(sh, conn.db, conn, &a[keys.clone()], end, count)? {
        Some((key, vals)) => {
            propagate_pop(conn.db, &key, end, vals.len(), true);
            reply_popped(out, &key, &vals);
            Ok(())
        }
        None => {
            let req = block_on(&a[keys], timeout, TimeoutReply::NullArray);
            blocking::block(sh, conn, a, req, out)
        }
    }
}

/// BLMOVE and BRPOPLPUSH (`rpoplpush`: propagated as RPOPLPUSH, as Redis 7.0 does; BLMOVE as
/// LMOVE).
fn bmove(
    sh: &Shared,
    conn: &mut Conn,
    a: &[Vec<u8>],
    (from, to): (End, End),
    rpoplpush: bool,
    out: &mut Out,
) -> CmdResult {
    let timeout = seconds_timeout_arg(&a[a.len() - 1])?;
    let moved = match list::move_one(&sh.keyspace(conn.db), &a[1], &a[2], from, to) {
        // A re-run leaves a source of another type waiting (Redis serves lists only); the
        // destination's type is checked before anything moves, and fails the command.
        Err(TypeError::WrongType) if blocking::is_retry(conn) && !is_list(sh, conn.db, &a[1])? => {
            None
        }
        r => r?,
    };
    match moved {
        Some(v) => {
            // Its replicas move what it moved, without waiting.
            let side =
                |e: End| if e == End::Left { b"LEFT".as_slice() } else { b"RIGHT".as_slice() };
            if rpoplpush {
                propagation::replace(conn.db, &[b"RPOPLPUSH", &a[1], &a[2]]);
            } else {
                propagation::replace(conn.db, &[b"LMOVE", &a[1], &a[2], side(from), side(to)]);
            }
            out.bulk(&v);
            Ok(())
        }
        None => blocking::block(sh, conn, a, block_on(&a[1..2], timeout, TimeoutReply::Null), out),
    }
}

fn is_list(sh: &Shared, db: usize, key: &[u8]) -> Result<bool, CmdError> {
    Ok(sh.keyspace(db).meta(key)?.is_some_and(|m| m.kind == Kind::List))
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
pub fn blmove(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (from, to) = (end_arg(&a[3])?, end_arg(&a[4])?);
    bmove(sh, conn, a, (from, to), false, out)
}

/// BRPOPLPUSH source destination timeout
pub fn brpoplpush(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bmove(sh, conn, a, (End::Right, End::Left), true, out)
}
