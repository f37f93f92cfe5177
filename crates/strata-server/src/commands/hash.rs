//! Hash commands. A hash has one of two encodings: compact, every pair inside its metadata
//! entry ([`compact_hash`]), while it fits the store's limits (`hash-max-listpack-entries`,
//! `hash-max-listpack-value`); else one sub-key per field (value = the field's value). A new
//! hash starts compact; a write that takes it past a limit converts it to sub-keys, and it
//! never converts back. Every command behaves the same in both encodings: reads go through
//! `has_field`, `field` and `for_each`, writes through `commit`, which alone picks
//! the encoding.

use super::{int_arg, CmdResult, NOT_INT, OVERFLOW, SYNTAX};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::compact_hash::{self, Edit as Change};
use crate::storage::{subkey, Kind, Meta, Store};
use strata::WriteBatch;

/// The live hash at `key`, or a new empty compact one; WRONGTYPE for another type.
fn hash_or_new(st: &Store, key: &[u8]) -> Result<Meta, String> {
    Ok(st.typed(key, Kind::Hash)?.unwrap_or_else(Meta::compact_hash))
}

/// Whether the hash `key` (metadata `m`) has `f`.
fn has_field(st: &Store, key: &[u8], m: &Meta, f: &[u8]) -> Result<bool, String> {
    if m.compact {
        Ok(compact_hash::get(&m.value, f).is_some())
    } else {
        Ok(st.get_sub(key, m.version, f)?.is_some())
    }
}

/// The value of `f` in the hash `key` (metadata `m`).
fn field(st: &Store, key: &[u8], m: &Meta, f: &[u8]) -> Result<Option<Vec<u8>>, String> {
    if m.compact {
        Ok(compact_hash::get(&m.value, f).map(<[u8]>::to_vec))
    } else {
        st.get_sub(key, m.version, f)
    }
}

/// Visits the pairs of the hash `key` (metadata `m`) in field order from the first field at
/// or above `from`, until `f` returns false.
fn for_each(
    st: &Store,
    key: &[u8],
    m: &Meta,
    from: &[u8],
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), String> {
    if !m.compact {
        return st.scan(&st.sub_cf, key, m.version, from, false, f);
    }
    for (k, v) in compact_hash::iter(&m.value) {
        if k >= from && !f(k, v) {
            break;
        }
    }
    Ok(())
}

/// Writes `changes` (in order: a later change of a field wins) to the hash `key` whose
/// metadata is `m`, in one batch. The caller has counted the fields added or removed into
/// `m.size` and says whether it changed (a sub-key hash rewrites its metadata only then). A
/// compact hash that no longer fits the limits is converted to sub-keys at a fresh version;
/// an emptied hash is deleted.
fn commit(
    st: &Store,
    key: &[u8],
    mut m: Meta,
    changes: &[Change],
    size_changed: bool,
) -> Result<(), String> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut b;
    if m.compact {
        if let Some((payload, n)) = compact_hash::apply(&m.value, changes, &st.hash_limits) {
            m.size = n;
            m.value = payload;
            b = WriteBatch::with_capacity_bytes(key.len() + m.value.len() + 64);
            st.put_or_delete_meta(&mut b, key, &m);
            return st.write(b);
        }
        // Past a limit: every pair to sub-keys of a fresh version.
        let mut pairs = compact_hash::to_map(&m.value);
        for c in changes {
            match *c {
                Change::Put(f, v) => pairs.insert(f, v),
                Change::Del(f) => pairs.remove(f),
            };
        }
        let version = st.new_version();
        let bytes: usize = pairs.iter().map(|(f, v)| key.len() + f.len() + v.len() + 32).sum();
        b = WriteBatch::with_capacity_bytes(bytes + 64);
        for (f, v) in &pairs {
            b.put_cf(&*st.sub_cf, subkey::encode(key, version, f), v);
        }
        let mut sub = Meta::composite(Kind::Hash, version);
        sub.expire_ms = m.expire_ms;
        sub.size = pairs.len() as u64;
        st.put_meta(&mut b, key, &sub);
    } else {
        let bytes: usize = changes
            .iter()
            .map(|c| match c {
                Change::Put(f, v) => key.len() + f.len() + v.len() + 32,
                Change::Del(f) => key.len() + f.len() + 32,
            })
            .sum();
        b = WriteBatch::with_capacity_bytes(bytes + 64);
        for c in changes {
            match *c {
                Change::Put(f, v) => b.put_cf(&*st.sub_cf, subkey::encode(key, m.version, f), v),
                Change::Del(f) => b.delete_cf(&*st.sub_cf, subkey::encode(key, m.version, f)),
            }
        }
        if size_changed {
            st.put_or_delete_meta(&mut b, key, &m);
        }
    }
    st.write(b)
}

fn set_fields(sh: &Shared, a: &[Vec<u8>], name: &str) -> Result<i64, String> {
    if !a.len().is_multiple_of(2) {
        return Err(super::arity_err(name));
    }
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = hash_or_new(st, &a[1])?;
    let mut added = 0;
    let mut fresh = std::collections::HashSet::new();
    let mut changes = Vec::with_capacity(a.len() / 2);
    for pair in a[2..].chunks(2) {
        if !has_field(st, &a[1], &m, &pair[0])? && fresh.insert(&pair[0]) {
            added += 1;
        }
        changes.push(Change::Put(&pair[0], &pair[1]));
    }
    m.size += added as u64;
    commit(st, &a[1], m, &changes, added > 0)?;
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
    let mut m = hash_or_new(st, &a[1])?;
    if has_field(st, &a[1], &m, &a[2])? {
        out.int(0);
        return Ok(());
    }
    m.size += 1;
    commit(st, &a[1], m, &[Change::Put(&a[2], &a[3])], true)?;
    out.int(1);
    Ok(())
}

pub fn hget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    match st.typed(&a[1], Kind::Hash)? {
        Some(m) if m.compact => out.opt_bulk(compact_hash::get(&m.value, &a[2])),
        Some(m) => out.opt_bulk(st.get_sub(&a[1], m.version, &a[2])?.as_deref()),
        None => out.opt_bulk(None),
    }
    Ok(())
}

pub fn hmget(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let m = st.typed(&a[1], Kind::Hash)?;
    out.array(a.len() - 2);
    for f in &a[2..] {
        let v = match &m {
            Some(m) => field(st, &a[1], m, f)?,
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
        for_each(st, key, &m, b"", |f, val| {
            v.push((f.to_vec(), val.to_vec()));
            true
        })?;
    }
    Ok(v)
}

/// Replies with the fields and values as they are read (no per-field copies). A sub-key
/// hash's map header, whose count is known only at the end of its scan, is put in front of
/// them afterwards.
pub fn hgetall(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let Some(m) = st.typed(&a[1], Kind::Hash)? else {
        out.map(0);
        return Ok(());
    };
    if m.compact {
        out.map(m.size as usize);
        for (f, v) in compact_hash::iter(&m.value) {
            out.bulk(f);
            out.bulk(v);
        }
        return Ok(());
    }
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
    let mut changes = Vec::new();
    let mut gone = std::collections::HashSet::new();
    for f in &a[2..] {
        if !gone.contains(f) && has_field(st, &a[1], &m, f)? {
            gone.insert(f);
            changes.push(Change::Del(f));
        }
    }
    let n = changes.len();
    m.size -= n as u64;
    commit(st, &a[1], m, &changes, n > 0)?;
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
        Some(m) => has_field(st, &a[1], &m, &a[2])?,
        None => false,
    };
    out.int(i64::from(found));
    Ok(())
}

pub fn hincrby(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let by = int_arg(&a[3])?;
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let mut m = hash_or_new(st, &a[1])?;
    let old = field(st, &a[1], &m, &a[2])?;
    let cur = match &old {
        Some(v) => super::parse_int_strict(v).ok_or("ERR hash value is not an integer")?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or(OVERFLOW)?;
    let text = new.to_string();
    if old.is_none() {
        m.size += 1;
    }
    commit(st, &a[1], m, &[Change::Put(&a[2], text.as_bytes())], old.is_none())?;
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
        for_each(st, &a[1], &m, &from, |f, v| {
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
