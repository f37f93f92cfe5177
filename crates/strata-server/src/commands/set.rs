//! Set commands (`types::set`).

use super::args::{is, pop_count, scan_args, ScanArgs};
use super::errors::{NOT_INT, SYNTAX};
use super::glob;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_int_strict;
use crate::types::set::{self, Algebra};

pub fn sadd(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::add(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn srem(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::remove(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn smembers(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = set::members(&sh.keyspace(c.db), &a[1])?;
    out.set(v.len());
    for m in &v {
        out.bulk(m);
    }
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count].
pub fn sscan(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ScanArgs { cursor, pattern, count, .. } = scan_args(a, 2, false)?;
    let from =
        if cursor == 0 { Vec::new() } else { sh.cursors.lock().load(cursor).unwrap_or_default() };
    let keep = |m: &[u8]| pattern.as_ref().is_none_or(|p| glob::matches(p, m));
    let page = set::scan(&sh.keyspace(c.db), &a[1], &from, count, keep)?;
    let next = page.next.map_or(0, |m| sh.cursors.lock().save(m));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(page.items.len());
    for m in &page.items {
        out.bulk(m);
    }
    Ok(())
}

/// SRANDMEMBER key [count]: a random member; with a count >= 0, that many distinct ones (at
/// most the set's size); with a negative count, that many picks with repeats.
pub fn srandmember(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        return Err(SYNTAX.into());
    }
    let Some(c) = a.get(2) else {
        let one = set::random_members(&sh.keyspace(conn.db), &a[1], 1, true)?;
        out.opt_bulk(one.as_ref().and_then(|v| v.first()).map(Vec::as_slice));
        return Ok(());
    };
    let n = parse_int_strict(c).ok_or(NOT_INT)?;
    if n == i64::MIN {
        return Err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
                .into(),
        );
    }
    if n < 0 && n.unsigned_abs() > super::errors::MAX_DRAWS {
        return Err(super::errors::TOO_MANY_DRAWS.into());
    }
    let picks =
        set::random_members(&sh.keyspace(conn.db), &a[1], n.unsigned_abs() as usize, n >= 0)?;
    let picks = picks.unwrap_or_default();
    out.array(picks.len());
    for m in &picks {
        out.bulk(m);
    }
    Ok(())
}

pub fn sismember(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let found = set::is_member(&sh.keyspace(c.db), &a[1], &a[2])?;
    out.int(i64::from(found));
    Ok(())
}

pub fn scard(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set::card(&sh.keyspace(c.db), &a[1])?;
    out.int(n as i64);
    Ok(())
}

pub fn spop(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let count = pop_count(a)?.map(|c| c as usize);
    let popped = set::pop(&sh.keyspace(c.db), &a[1], count.unwrap_or(1))?;
    // Its replicas remove what it chose.
    if let Some(v) = popped.as_ref().filter(|v| !v.is_empty() && super::propagation::gathering()) {
        let mut words: Vec<&[u8]> = vec![b"SREM", &a[1]];
        words.extend(v.iter().map(Vec::as_slice));
        super::propagation::replace(c.db, &words);
    }
    match (popped, count) {
        (None, Some(_)) => out.set(0),
        (None, None) => out.null(),
        (Some(v), None) => out.opt_bulk(v.first().map(|x| x.as_slice())),
        (Some(v), Some(_)) => {
            out.set(v.len());
            for mem in &v {
                out.bulk(mem);
            }
        }
    }
    Ok(())
}

pub fn smismember(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let found = set::are_members(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.array(found.len());
    for f in found {
        out.int(i64::from(f));
    }
    Ok(())
}

pub fn smove(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let moved = set::move_member(&sh.keyspace(c.db), &a[1], &a[2], &a[3])?;
    out.int(i64::from(moved));
    Ok(())
}

fn reply_members(out: &mut Out, members: &[Vec<u8>]) {
    out.set(members.len());
    for m in members {
        out.bulk(m);
    }
}

pub fn sinter(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    reply_members(out, &set::combine(&sh.keyspace(c.db), Algebra::Inter, &a[1..])?);
    Ok(())
}

pub fn sunion(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    reply_members(out, &set::combine(&sh.keyspace(c.db), Algebra::Union, &a[1..])?);
    Ok(())
}

pub fn sdiff(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    reply_members(out, &set::combine(&sh.keyspace(c.db), Algebra::Diff, &a[1..])?);
    Ok(())
}

fn store(sh: &Shared, db: usize, op: Algebra, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.int(set::combine_store(&sh.keyspace(db), op, &a[1], &a[2..])? as i64);
    Ok(())
}

pub fn sinterstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, Algebra::Inter, a, out)
}

pub fn sunionstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, Algebra::Union, a, out)
}

pub fn sdiffstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    store(sh, c.db, Algebra::Diff, a, out)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit], with Redis's error replies.
pub fn sintercard(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let numkeys = match parse_int_strict(&a[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0".into()),
    };
    if numkeys > (a.len() - 2) as u64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut i = end;
    while i < a.len() {
        if is(&a[i], "limit") && i + 1 < a.len() {
            limit = match parse_int_strict(&a[i + 1]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err("ERR LIMIT can't be negative".into()),
            };
            i += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    out.int(set::inter_card(&sh.keyspace(c.db), &a[2..end], limit)? as i64);
    Ok(())
}
