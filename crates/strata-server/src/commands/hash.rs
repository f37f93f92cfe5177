//! Hash commands (`types::hash`).

use super::args::{int_arg, scan_args, ScanArgs};
use super::errors::{arity_err, CmdError};
use super::{glob, CmdResult};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::hash;

/// HSET and HMSET: the number of fields added.
fn set_fields(sh: &Shared, db: usize, a: &[Vec<u8>], name: &str) -> Result<u64, CmdError> {
    if !a.len().is_multiple_of(2) {
        return Err(arity_err(name).into());
    }
    let pairs: Vec<(&[u8], &[u8])> = a[2..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    Ok(hash::set_fields(&sh.keyspace(db), &a[1], &pairs)?)
}

pub fn hset(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set_fields(sh, c.db, a, "hset")?;
    out.int(n as i64);
    Ok(())
}

pub fn hmset(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_fields(sh, c.db, a, "hmset")?;
    out.ok();
    Ok(())
}

pub fn hsetnx(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = hash::set_if_absent(&sh.keyspace(c.db), &a[1], &a[2], &a[3])?;
    out.int(i64::from(done));
    Ok(())
}

pub fn hget(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = hash::get(&sh.keyspace(c.db), &a[1], &a[2])?;
    out.opt_bulk(v.as_deref());
    Ok(())
}

pub fn hmget(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let values = hash::get_many(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.array(values.len());
    for v in &values {
        out.opt_bulk(v.as_deref());
    }
    Ok(())
}

/// Replies with the fields and values as they are read (no per-field copies). When the
/// count is known only at the end of the walk (`hash::known_len`), the map header is put in
/// front of them afterwards.
pub fn hgetall(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let Some(m) = hash::read(&ks, &a[1])? else {
        out.map(0);
        return Ok(());
    };
    let start = out.buf.len();
    let known = hash::known_len(&m);
    if let Some(n) = known {
        out.map(n);
    }
    let mut n = 0usize;
    let walked = hash::for_each(&ks, &a[1], &m, |f, v| {
        out.bulk(f);
        out.bulk(v);
        n += 1;
        true
    });
    if let Err(e) = walked {
        out.buf.truncate(start);
        return Err(e.into());
    }
    if known.is_none() {
        let mut head = Out { buf: Vec::with_capacity(16), resp3: out.resp3 };
        head.map(n);
        out.buf.splice(start..start, head.buf);
    }
    Ok(())
}

pub fn hkeys(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let all = hash::all(&sh.keyspace(c.db), &a[1])?;
    out.array(all.len());
    for (f, _) in &all {
        out.bulk(f);
    }
    Ok(())
}

pub fn hvals(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let all = hash::all(&sh.keyspace(c.db), &a[1])?;
    out.array(all.len());
    for (_, v) in &all {
        out.bulk(v);
    }
    Ok(())
}

pub fn hdel(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = hash::delete_fields(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.int(n as i64);
    Ok(())
}

pub fn hlen(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = hash::len(&sh.keyspace(c.db), &a[1])?;
    out.int(n as i64);
    Ok(())
}

pub fn hexists(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let found = hash::exists(&sh.keyspace(c.db), &a[1], &a[2])?;
    out.int(i64::from(found));
    Ok(())
}

pub fn hincrby(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = int_arg(&a[3])?;
    let new = hash::incr_by(&sh.keyspace(c.db), &a[1], &a[2], by)?;
    out.int(new);
    Ok(())
}

/// HINCRBYFLOAT key field increment
pub fn hincrbyfloat(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = hash::incr_by_float(&sh.keyspace(c.db), &a[1], &a[2], &a[3])?;
    // Its replicas get the value it made.
    super::propagation::replace(c.db, &[b"HSET", &a[1], &a[2], &v]);
    out.bulk(&v);
    Ok(())
}

/// HSTRLEN key field
pub fn hstrlen(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let v = hash::get(&sh.keyspace(c.db), &a[1], &a[2])?;
    out.int(v.map_or(0, |v| v.len() as i64));
    Ok(())
}

/// HRANDFIELD key [count [WITHVALUES]]
pub fn hrandfield(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() < 3 {
        let one = hash::random_fields(&sh.keyspace(c.db), &a[1], 1, true)?;
        out.opt_bulk(one.as_ref().and_then(|p| p.first()).map(|(f, _)| f.as_slice()));
        return Ok(());
    }
    let (n, withvalues) = super::args::random_count(a, "withvalues")?;
    let picks = hash::random_fields(&sh.keyspace(c.db), &a[1], n.unsigned_abs() as usize, n >= 0)?;
    let picks = picks.unwrap_or_default();
    if !withvalues {
        out.array(picks.len());
        for (f, _) in &picks {
            out.bulk(f);
        }
    } else if out.resp3 {
        out.array(picks.len());
        for (f, v) in &picks {
            out.array(2);
            out.bulk(f);
            out.bulk(v);
        }
    } else {
        out.array(picks.len() * 2);
        for (f, v) in &picks {
            out.bulk(f);
            out.bulk(v);
        }
    }
    Ok(())
}

pub fn hscan(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ScanArgs { cursor, pattern, count, .. } = scan_args(a, 2, false)?;
    let ks = sh.keyspace(c.db);
    let from =
        if cursor == 0 { Vec::new() } else { sh.cursors.lock().load(cursor).unwrap_or_default() };
    let keep = |f: &[u8]| pattern.as_ref().is_none_or(|p| glob::matches(p, f));
    let page = hash::scan(&ks, &a[1], &from, count, keep)?;
    let next = page.next.map_or(0, |f| sh.cursors.lock().save(f));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(page.items.len() * 2);
    for (f, v) in &page.items {
        out.bulk(f);
        out.bulk(v);
    }
    Ok(())
}
