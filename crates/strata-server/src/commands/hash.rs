//! Hash commands: one sub-key per field, value = the field's value.

use super::{int_arg, CmdResult, NOT_INT, OVERFLOW, SYNTAX};
use crate::resp::Out;
use crate::server::{Conn, Shared};
use crate::storage::{subkey, Kind};
use strata::WriteBatch;

fn set_fields(sh: &Shared, a: &[Vec<u8>], name: &str) -> Result<i64, String> {
    if !a.len().is_multiple_of(2) {
        return Err(super::arity_err(name));
    }
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::Hash)?;
    let bytes: usize = a[2..].iter().map(|x| x.len() + a[1].len() + 32).sum();
    let mut b = WriteBatch::with_capacity_bytes(bytes + 64);
    let mut added = 0;
    let mut fresh = std::collections::HashSet::new();
    for pair in a[2..].chunks(2) {
        if st.get_sub(&a[1], m.version, &pair[0])?.is_none() && fresh.insert(&pair[0]) {
            added += 1;
        }
        b.put_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, &pair[0]), &pair[1]);
    }
    // Overwriting fields of an existing hash leaves its metadata as it is.
    if added > 0 {
        m.size += added as u64;
        st.put_meta(&mut b, &a[1], &m);
    }
    st.write(b)?;
    Ok(added)
}

pub fn hset(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = set_fields(sh, a, "hset")?;
    out.int(n);
    Ok(())
}

pub fn hmset(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_fields(sh, a, "hmset")?;
    out.ok();
    Ok(())
}

pub fn hsetnx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::Hash)?;
    if st.get_sub(&a[1], m.version, &a[2])?.is_some() {
        out.int(0);
        return Ok(());
    }
    let mut b = WriteBatch::new();
    b.put_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, &a[2]), &a[3]);
    m.size += 1;
    st.put_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(1);
    Ok(())
}

pub fn hget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let v = match st.typed(&a[1], Kind::Hash)? {
        Some(m) => st.get_sub(&a[1], m.version, &a[2])?,
        None => None,
    };
    out.opt_bulk(v.as_deref());
    Ok(())
}

pub fn hmget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let m = st.typed(&a[1], Kind::Hash)?;
    out.array(a.len() - 2);
    for f in &a[2..] {
        let v = match &m {
            Some(m) => st.get_sub(&a[1], m.version, f)?,
            None => None,
        };
        out.opt_bulk(v.as_deref());
    }
    Ok(())
}

/// All (field, value) pairs of the hash at `key`.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn all_fields(sh: &Shared, key: &[u8]) -> Result<Pairs, String> {
    let st = &sh.store;
    let mut v = Vec::new();
    if let Some(m) = st.typed(key, Kind::Hash)? {
        st.scan(&st.sub_cf, key, m.version, b"", false, |f, val| {
            v.push((f.to_vec(), val.to_vec()));
            true
        })?;
    }
    Ok(v)
}

/// Replies with the fields and values as they are scanned (no per-field copies); the map
/// header, whose count is known only at the end, is put in front of them afterwards.
pub fn hgetall(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let Some(m) = st.typed(&a[1], Kind::Hash)? else {
        out.map(0);
        return Ok(());
    };
    let start = out.buf.len();
    let mut n = 0usize;
    let scanned = st.scan(&st.sub_cf, &a[1], m.version, b"", false, |f, v| {
        out.bulk(f);
        out.bulk(v);
        n += 1;
        true
    });
    if let Err(e) = scanned {
        out.buf.truncate(start);
        return Err(e);
    }
    let mut head = Out { buf: Vec::with_capacity(16), resp3: out.resp3 };
    head.map(n);
    out.buf.splice(start..start, head.buf);
    Ok(())
}

pub fn hkeys(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let all = all_fields(sh, &a[1])?;
    out.array(all.len());
    for (f, _) in &all {
        out.bulk(f);
    }
    Ok(())
}

pub fn hvals(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let all = all_fields(sh, &a[1])?;
    out.array(all.len());
    for (_, v) in &all {
        out.bulk(v);
    }
    Ok(())
}

pub fn hdel(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.typed(&a[1], Kind::Hash)? else {
        out.int(0);
        return Ok(());
    };
    let mut b = WriteBatch::new();
    let mut n = 0;
    let mut gone = std::collections::HashSet::new();
    for f in &a[2..] {
        if !gone.contains(f) && st.get_sub(&a[1], m.version, f)?.is_some() {
            gone.insert(f);
            b.delete_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, f));
            n += 1;
        }
    }
    m.size -= n;
    st.put_or_delete_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(n as i64);
    Ok(())
}

pub fn hlen(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let m = sh.store.typed(&a[1], Kind::Hash)?;
    out.int(m.map_or(0, |m| m.size as i64));
    Ok(())
}

pub fn hexists(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let found = match st.typed(&a[1], Kind::Hash)? {
        Some(m) => st.get_sub(&a[1], m.version, &a[2])?.is_some(),
        None => false,
    };
    out.int(i64::from(found));
    Ok(())
}

pub fn hincrby(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = int_arg(&a[3])?;
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = st.typed_or_new(&a[1], Kind::Hash)?;
    let old = st.get_sub(&a[1], m.version, &a[2])?;
    let cur = match &old {
        Some(v) => super::parse_int_strict(v).ok_or("ERR hash value is not an integer")?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or(OVERFLOW)?;
    let mut b = WriteBatch::new();
    b.put_cf(&*st.sub_cf, subkey::encode(&a[1], m.version, &a[2]), new.to_string());
    if old.is_none() {
        m.size += 1;
    }
    st.put_meta(&mut b, &a[1], &m);
    st.write(b)?;
    out.int(new);
    Ok(())
}

pub fn hscan(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let cursor = std::str::from_utf8(&a[2]).ok().and_then(|s| s.parse::<u64>().ok());
    let cursor = cursor.ok_or("ERR invalid cursor")?;
    let (mut pattern, mut count) = (None, 10usize);
    let mut i = 3;
    while i < a.len() {
        let val = a.get(i + 1).ok_or(SYNTAX)?;
        if super::is(&a[i], "match") {
            pattern = Some(val.clone());
        } else if super::is(&a[i], "count") {
            let c = super::parse_int_strict(val).ok_or(NOT_INT)?;
            if c < 1 {
                return Err(SYNTAX.into());
            }
            count = c as usize;
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    let st = &sh.store;
    let mut found = Vec::new();
    let mut next_field = None;
    if let Some(m) = st.typed(&a[1], Kind::Hash)? {
        let from = if cursor == 0 {
            Vec::new()
        } else {
            sh.cursors.lock().load(cursor).unwrap_or_default()
        };
        let mut seen = 0;
        st.scan(&st.sub_cf, &a[1], m.version, &from, false, |f, v| {
            if seen == count {
                next_field = Some(f.to_vec());
                return false;
            }
            seen += 1;
            if pattern.as_ref().is_none_or(|p| super::glob::matches(p, f)) {
                found.push((f.to_vec(), v.to_vec()));
            }
            true
        })?;
    }
    let next = next_field.map_or(0, |f| sh.cursors.lock().save(f));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(found.len() * 2);
    for (f, v) in &found {
        out.bulk(f);
        out.bulk(v);
    }
    Ok(())
}
