//! Sorted-set commands (`types::zset`).

use super::args::{float_arg, int_arg, is, scan_args, ScanArgs};
use super::blocking::{self, seconds_timeout_arg, BlockRequest, TimeoutReply};
use super::errors::{CmdError, NOT_POSITIVE, SYNTAX};
use super::{glob, CmdResult};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_float;
use crate::types::zset::{self, AddFlags, End, ScoreBound};

pub fn zadd(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut i = 2;
    while i < a.len() {
        let f = &a[i];
        if is(f, "nx") {
            flags.nx = true;
        } else if is(f, "xx") {
            flags.xx = true;
        } else if is(f, "gt") {
            flags.gt = true;
        } else if is(f, "lt") {
            flags.lt = true;
        } else if is(f, "ch") {
            ch = true;
        } else if is(f, "incr") {
            flags.incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(SYNTAX.into());
    }
    if flags.nx && flags.xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if flags.incr && rest.len() > 2 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        pairs.push((float_arg(&p[0])?, &p[1][..]));
    }
    let done = zset::add(&sh.keyspace(c.db), &a[1], flags, &pairs)?;
    if flags.incr {
        match done.score {
            Some(v) => out.double(v),
            None => out.null(),
        }
    } else {
        let n = if ch { done.added + done.changed } else { done.added };
        out.int(n as i64);
    }
    Ok(())
}

pub fn zincrby(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = float_arg(&a[2])?;
    let new = zset::incr_by(&sh.keyspace(c.db), &a[1], &a[3], by)?;
    out.double(new);
    Ok(())
}

pub fn zrem(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = zset::remove(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn zscore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match zset::score(&sh.keyspace(c.db), &a[1], &a[2])? {
        Some(s) => out.double(s),
        None => out.null(),
    }
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: members and scores.
pub fn zscan(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ScanArgs { cursor, pattern, count, .. } = scan_args(a, 2, false)?;
    let from =
        if cursor == 0 { Vec::new() } else { sh.cursors.lock().load(cursor).unwrap_or_default() };
    let keep = |m: &[u8]| pattern.as_ref().is_none_or(|p| glob::matches(p, m));
    let page = zset::scan(&sh.keyspace(c.db), &a[1], &from, count, keep)?;
    let next = page.next.map_or(0, |m| sh.cursors.lock().save(m));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(page.items.len() * 2);
    for (m, s) in &page.items {
        out.bulk(m);
        out.bulk_double(*s);
    }
    Ok(())
}

pub fn zcard(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = zset::card(&sh.keyspace(c.db), &a[1])?;
    out.int(n as i64);
    Ok(())
}

/// A score bound argument: a float, `(` in front for an exclusive one.
pub(super) fn parse_bound(b: &[u8]) -> Result<ScoreBound, CmdError> {
    let (exclusive, rest) = match b.first() {
        Some(b'(') => (true, &b[1..]),
        _ => (false, b),
    };
    let value = parse_float(rest).ok_or("ERR min or max is not a float")?;
    Ok(ScoreBound { value, exclusive })
}

pub(super) fn reply_scored(out: &mut Out, items: &[(f64, Vec<u8>)], withscores: bool) {
    if !withscores {
        out.array(items.len());
        for (_, m) in items {
            out.bulk(m);
        }
    } else if out.resp3 {
        out.array(items.len());
        for (s, m) in items {
            out.array(2);
            out.bulk(m);
            out.double(*s);
        }
    } else {
        out.array(items.len() * 2);
        for (s, m) in items {
            out.bulk(m);
            out.bulk_double(*s);
        }
    }
}

pub fn zcount(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (min, max) = (parse_bound(&a[2])?, parse_bound(&a[3])?);
    let n = zset::count(&sh.keyspace(c.db), &a[1], min, max)?;
    out.int(n as i64);
    Ok(())
}

pub fn zrank(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match zset::rank(&sh.keyspace(c.db), &a[1], &a[2])? {
        Some(r) => out.int(r),
        None => out.null(),
    }
    Ok(())
}

/// ZREVRANK: the rank counted from the highest score.
pub fn zrevrank(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    match zset::rank(&ks, &a[1], &a[2])? {
        Some(r) => out.int(zset::card(&ks, &a[1])? as i64 - 1 - r),
        None => out.null(),
    }
    Ok(())
}

/// ZMSCORE: each member's score, nil for a missing one.
pub fn zmscore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let scores =
        a[2..].iter().map(|m| zset::score(&ks, &a[1], m)).collect::<Result<Vec<_>, _>>()?;
    out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => out.double(s),
            None => out.null(),
        }
    }
    Ok(())
}

fn pop(sh: &Shared, db: usize, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        return Err(SYNTAX.into());
    }
    let count = match a.get(2) {
        Some(c) => {
            let c = int_arg(c)?;
            if c < 0 {
                return Err(NOT_POSITIVE.into());
            }
            Some(c as usize)
        }
        None => None,
    };
    let items = zset::pop(&sh.keyspace(db), &a[1], end, count.unwrap_or(1))?;
    if count.is_none() || !out.resp3 {
        // Flat member, score list.
        out.array(items.len() * 2);
        for (s, mem) in &items {
            out.bulk(mem);
            out.double(*s);
        }
    } else {
        reply_scored(out, &items, true);
    }
    Ok(())
}

pub fn zpopmin(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, c.db, a, End::Min, out)
}

pub fn zpopmax(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    pop(sh, c.db, a, End::Max, out)
}

/// ZRANDMEMBER key [count [WITHSCORES]]
pub fn zrandmember(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() < 3 {
        let one = zset::random_members(&sh.keyspace(c.db), &a[1], 1, true)?;
        out.opt_bulk(one.as_ref().and_then(|v| v.first()).map(|(_, m)| m.as_slice()));
        return Ok(());
    }
    let (n, withscores) = super::args::random_count(a, "withscores")?;
    let picks = zset::random_members(&sh.keyspace(c.db), &a[1], n.unsigned_abs() as usize, n >= 0)?;
    reply_scored(out, &picks.unwrap_or_default(), withscores);
    Ok(())
}

/// The arguments of ZMPOP and BZMPOP from `numkeys_at` on: `numkeys key [key ...] MIN|MAX
/// [COUNT count]`; the keys' index range, the end and the count.
fn mpop_args(
    a: &[Vec<u8>],
    numkeys_at: usize,
) -> Result<(std::ops::Range<usize>, End, usize), CmdError> {
    let numkeys = match crate::types::number::parse_int_strict(&a[numkeys_at]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0".into()),
    };
    let where_idx = numkeys.saturating_add(numkeys_at as u64 + 1);
    if where_idx >= a.len() as u64 {
        return Err(SYNTAX.into());
    }
    let where_idx = where_idx as usize;
    let end = if is(&a[where_idx], "min") {
        End::Min
    } else if is(&a[where_idx], "max") {
        End::Max
    } else {
        return Err(SYNTAX.into());
    };
    let mut count = None;
    let mut i = where_idx + 1;
    while i < a.len() {
        if count.is_none() && is(&a[i], "count") && i + 1 < a.len() {
            count = Some(match crate::types::number::parse_int_strict(&a[i + 1]) {
                Some(n) if n >= 1 => n as usize,
                _ => return Err("ERR count should be greater than 0".into()),
            });
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok((numkeys_at + 1..where_idx, end, count.unwrap_or(1)))
}

/// Pops up to `count` from the first sorted set of `keys` (`WRONGTYPE` for another type met
/// before it; on a blocked command's re-run, from the written key only, if it is a sorted
/// set: Redis's rule); that key and the (score, member) pairs, or `None`.
fn pop_first(
    sh: &Shared,
    db: usize,
    conn: &Conn,
    keys: &[Vec<u8>],
    end: End,
    count: usize,
) -> Result<Option<(Vec<u8>, zset::Scored)>, CmdError> {
    let ready;
    let keys = match blocking::ready_key(conn) {
        Some(k) => {
            ready = [k.to_vec()];
            &ready[..]
        }
        None => keys,
    };
    let ks = sh.keyspace(db);
    let _g = sh.engine().locks.lock(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>());
    for key in keys {
        let Some(m) = ks.meta(key)? else { continue };
        if m.kind != crate::types::Kind::ZSet {
            if blocking::is_retry(conn) {
                return Ok(None);
            }
            return Err(crate::types::TypeError::WrongType.into());
        }
        return Ok(Some((key.clone(), zset::pop(&ks, key, end, count)?)));
    }
    Ok(None)
}

/// The running pop goes to the replicas as the ZPOPMIN or ZPOPMAX of what it took from
/// `key` (with its count when `counted`).
fn propagate_pop(db: usize, key: &[u8], end: End, n: usize, counted: bool) {
    let name: &[u8] = if end == End::Min { b"ZPOPMIN" } else { b"ZPOPMAX" };
    let n = n.to_string();
    if counted {
        super::propagation::replace(db, &[name, key, n.as_bytes()]);
    } else {
        super::propagation::replace(db, &[name, key]);
    }
}

fn reply_mpopped(out: &mut Out, key: &[u8], items: &zset::Scored) {
    out.array(2);
    out.bulk(key);
    out.array(items.len());
    for (s, mem) in items {
        out.array(2);
        out.bulk(mem);
        out.double(*s);
    }
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: pops from the first of the keys that
/// holds a sorted set (`WRONGTYPE` for another type met before it); nil when none does, else
/// the key and its (member, score) pairs.
pub fn zmpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (keys, end, count) = mpop_args(a, 1)?;
    match pop_first(sh, conn.db, conn, &a[keys], end, count)? {
        Some((key, items)) => {
            propagate_pop(conn.db, &key, end, items.len(), true);
            reply_mpopped(out, &key, &items);
        }
        None => out.null_array(),
    }
    Ok(())
}

fn bzpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], end: End, out: &mut Out) -> CmdResult {
    let timeout = seconds_timeout_arg(&a[a.len() - 1])?;
    let keys = &a[1..a.len() - 1];
    match pop_first(sh, conn.db, conn, keys, end, 1)? {
        Some((key, items)) => {
            propagate_pop(conn.db, &key, end, items.len(), false);
            let (s, mem) = &items[0];
            out.array(3);
            out.bulk(&key);
            out.bulk(mem);
            out.double(*s);
            Ok(())
        }
        None => {
            let req = BlockRequest {
                keys: keys.to_vec(),
                timeout,
                on_timeout: TimeoutReply::NullArray,
                retry: None,
            };
            blocking::block(sh, conn, a, req, out)
        }
    }
}

/// BZPOPMIN key [key ...] timeout
pub fn bzpopmin(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bzpop(sh, conn, a, End::Min, out)
}

/// BZPOPMAX key [key ...] timeout
pub fn bzpopmax(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    bzpop(sh, conn, a, End::Max, out)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
pub fn bzmpop(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let timeout = seconds_timeout_arg(&a[1])?;
    let (keys, end, count) = mpop_args(a, 2)?;
    match pop_first(sh, conn.db, conn, &a[keys.clone()], end, count)? {
        Some((key, items)) => {
            propagate_pop(conn.db, &key, end, items.len(), true);
            reply_mpopped(out, &key, &items);
            Ok(())
        }
        None => {
            let req = BlockRequest {
                keys: a[keys].to_vec(),
                timeout,
                on_timeout: TimeoutReply::NullArray,
                retry: None,
            };
            blocking::block(sh, conn, a, req, out)
        }
    }
}
