//! Keyspace commands: DEL, EXISTS, expiry, TYPE, SCAN/KEYS, DBSIZE, FLUSH*, RENAME.
//!
//! Deleting a key removes only its metadata entry: its sub-keys become stale (their version
//! has no live metadata) and the compaction filter collects them.

use super::{glob, int_arg, is, CmdResult, SYNTAX};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::{now_ms, score, subkey, Kind, Meta, Store};
use strata::WriteBatch;

pub fn del(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&a[1..]);
    let mut b = WriteBatch::new();
    let mut n = 0;
    let mut seen = std::collections::HashSet::new();
    for k in &a[1..] {
        if seen.insert(k) && st.meta(k)?.is_some() {
            st.delete_meta(&mut b, k);
            n += 1;
        }
    }
    st.write(b)?;
    out.int(n);
    Ok(())
}

pub fn exists(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut n = 0;
    for k in &a[1..] {
        if sh.store.meta(k)?.is_some() {
            n += 1;
        }
    }
    out.int(n);
    Ok(())
}

fn expire_generic(
    sh: &Shared,
    a: &[Vec<u8>],
    out: &mut Out,
    unit: u64,
    absolute: bool,
    name: &str,
) -> CmdResult {
    let v = int_arg(&a[2])?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for f in &a[3..] {
        if is(f, "nx") {
            nx = true;
        } else if is(f, "xx") {
            xx = true;
        } else if is(f, "gt") {
            gt = true;
        } else if is(f, "lt") {
            lt = true;
        } else {
            return Err(format!("ERR Unsupported option {}", String::from_utf8_lossy(f)));
        }
    }
    if nx && (xx || gt || lt) {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if gt && lt {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let ms = v.checked_mul(unit as i64).ok_or_else(invalid)?;
    let at = if absolute { ms } else { ms.checked_add(now_ms() as i64).ok_or_else(invalid)? };
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    let Some(mut m) = st.meta(&a[1])? else {
        out.int(0);
        return Ok(());
    };
    // A key without a TTL counts as an infinite TTL for GT/LT.
    let cur = if m.expire_ms == 0 { None } else { Some(m.expire_ms as i64) };
    let ok = !(nx && cur.is_some()
        || xx && cur.is_none()
        || gt && cur.is_none_or(|c| at <= c)
        || lt && cur.is_some_and(|c| at >= c));
    if !ok {
        out.int(0);
        return Ok(());
    }
    let mut b = WriteBatch::new();
    if at <= now_ms() as i64 {
        st.delete_meta(&mut b, &a[1]);
    } else {
        m.expire_ms = at as u64;
        st.put_meta(&mut b, &a[1], &m);
    }
    st.write(b)?;
    out.int(1);
    Ok(())
}

pub fn expire(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, a, out, 1000, false, "expire")
}
pub fn pexpire(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, a, out, 1, false, "pexpire")
}
pub fn expireat(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, a, out, 1000, true, "expireat")
}
pub fn pexpireat(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    expire_generic(sh, a, out, 1, true, "pexpireat")
}

fn ttl_generic(sh: &Shared, key: &[u8], out: &mut Out, unit: u64) -> CmdResult {
    match sh.store.meta(key)? {
        None => out.int(-2),
        Some(m) if m.expire_ms == 0 => out.int(-1),
        Some(m) => {
            let left = m.expire_ms.saturating_sub(now_ms());
            out.int(left.div_ceil(unit).min(i64::MAX as u64) as i64);
        }
    }
    Ok(())
}

pub fn ttl(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    // Redis rounds the remaining seconds to the nearest.
    match sh.store.meta(&a[1])? {
        None => out.int(-2),
        Some(m) if m.expire_ms == 0 => out.int(-1),
        Some(m) => out.int(((m.expire_ms.saturating_sub(now_ms()) + 500) / 1000) as i64),
    }
    Ok(())
}

pub fn pttl(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    ttl_generic(sh, &a[1], out, 1)
}

pub fn persist(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let st = &sh.store;
    let _g = st.locks.lock(&[&a[1]]);
    match st.meta(&a[1])? {
        Some(mut m) if m.expire_ms != 0 => {
            m.expire_ms = 0;
            let mut b = WriteBatch::new();
            st.put_meta(&mut b, &a[1], &m);
            st.write(b)?;
            out.int(1);
        }
        _ => out.int(0),
    }
    Ok(())
}

pub fn type_(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let t = sh.store.meta(&a[1])?.map_or("none", |m| m.kind.name());
    out.simple(t);
    Ok(())
}

/// OBJECT ENCODING: Redis's names for this server's encodings (a compact hash is
/// `listpack`, a hash of sub-keys `hashtable`).
pub fn object(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if !is(&a[1], "encoding") {
        return Err(format!(
            "ERR unknown subcommand '{}'. Try OBJECT HELP.",
            String::from_utf8_lossy(&a[1])
        ));
    }
    if a.len() != 3 {
        return Err(super::arity_err("object|encoding"));
    }
    let name = sh.store.meta(&a[2])?.map(|m| match m.kind {
        Kind::String if super::parse_int_strict(&m.value).is_some() => "int",
        Kind::String if m.value.len() <= 44 => "embstr",
        Kind::String => "raw",
        Kind::Hash if m.compact => "listpack",
        Kind::Hash | Kind::Set => "hashtable",
        Kind::List => "quicklist",
        Kind::ZSet => "skiplist",
    });
    out.opt_bulk(name.map(str::as_bytes));
    Ok(())
}

fn kind_by_name(name: &[u8]) -> Option<Kind> {
    [Kind::String, Kind::Hash, Kind::List, Kind::Set, Kind::ZSet]
        .into_iter()
        .find(|k| is(name, k.name()))
}

pub fn scan(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let cursor = std::str::from_utf8(&a[1]).ok().and_then(|s| s.parse::<u64>().ok());
    let cursor = cursor.ok_or("ERR invalid cursor")?;
    let (mut pattern, mut count, mut kind) = (None, 10usize, None);
    let mut i = 2;
    while i < a.len() {
        let val = a.get(i + 1).ok_or(SYNTAX)?;
        if is(&a[i], "match") {
            pattern = Some(val.clone());
        } else if is(&a[i], "count") {
            let c = int_arg(val)?;
            if c < 1 {
                return Err(SYNTAX.into());
            }
            count = c as usize;
        } else if is(&a[i], "type") {
            // An unknown type matches nothing (as Redis).
            kind = Some(kind_by_name(val));
        } else {
            return Err(SYNTAX.into());
        }
        i += 2;
    }
    let from =
        if cursor == 0 { Vec::new() } else { sh.cursors.lock().load(cursor).unwrap_or_default() };
    let mut found = Vec::new();
    let mut examined = 0;
    let mut next_key = None;
    sh.store.scan_keys(&from, |k, m| {
        if examined == count {
            next_key = Some(k.to_vec());
            return false;
        }
        examined += 1;
        let type_ok = match kind {
            None => true,
            Some(want) => want == Some(m.kind),
        };
        if type_ok && pattern.as_ref().is_none_or(|p| glob::matches(p, k)) {
            found.push(k.to_vec());
        }
        true
    })?;
    let next = next_key.map_or(0, |k| sh.cursors.lock().save(k));
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(found.len());
    for k in &found {
        out.bulk(k);
    }
    Ok(())
}

pub fn keys(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut found = Vec::new();
    sh.store.scan_keys(b"", |k, _| {
        if glob::matches(&a[1], k) {
            found.push(k.to_vec());
        }
        true
    })?;
    out.array(found.len());
    for k in &found {
        out.bulk(k);
    }
    Ok(())
}

/// Live keys (a full scan of the metadata family).
pub fn count_keys(st: &Store) -> Result<u64, String> {
    let mut n = 0;
    st.scan_keys(b"", |_, _| {
        n += 1;
        true
    })?;
    Ok(n)
}

pub fn dbsize(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.int(count_keys(&sh.store)? as i64);
    Ok(())
}

pub fn flushdb(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 2 || (a.len() == 2 && !is(&a[1], "sync") && !is(&a[1], "async")) {
        return Err(SYNTAX.into());
    }
    sh.store.flush_all()?;
    out.ok();
    Ok(())
}

/// Adds to `b` a copy of `src` (with metadata `m`) under `dst` at a new version.
fn copy_key(
    st: &Store,
    b: &mut WriteBatch,
    src: &[u8],
    m: &Meta,
    dst: &[u8],
) -> Result<(), String> {
    let mut nm = m.clone();
    // Strings and compact hashes are whole in their metadata entry.
    if m.kind != Kind::String && !m.compact {
        nm.version = st.new_version();
        let mut err = None;
        st.scan(&st.sub_cf, src, m.version, b"", false, |f, v| {
            b.put_cf(&*st.sub_cf, subkey::encode(dst, nm.version, f), v);
            if m.kind == Kind::ZSet {
                match v.try_into() {
                    Ok(bits) => {
                        let s = f64::from_bits(u64::from_le_bytes(bits));
                        b.put_cf(&*st.score_cf, score::index_key(dst, nm.version, s, f), b"");
                    }
                    Err(_) => err = Some("ERR corrupt sorted set score".to_string()),
                }
            }
            true
        })?;
        if let Some(e) = err {
            return Err(e);
        }
    }
    st.put_meta(b, dst, &nm);
    Ok(())
}

fn rename_generic(sh: &Shared, a: &[Vec<u8>], nx: bool) -> Result<bool, String> {
    let st = &sh.store;
    let _g = st.locks.lock(&a[1..3]);
    let m = st.meta(&a[1])?.ok_or("ERR no such key")?;
    if a[1] == a[2] {
        return Ok(!nx);
    }
    if nx && st.meta(&a[2])?.is_some() {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    copy_key(st, &mut b, &a[1], &m, &a[2])?;
    st.delete_meta(&mut b, &a[1]);
    st.write(b)?;
    Ok(true)
}

pub fn rename(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    rename_generic(sh, a, false)?;
    out.ok();
    Ok(())
}

pub fn renamenx(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let done = rename_generic(sh, a, true)?;
    out.int(i64::from(done));
    Ok(())
}

pub fn randomkey(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    // Seek to a random point of the key space and take the next key (or the first).
    let seed = sh.store.new_version().to_le_bytes();
    let mut first = None;
    sh.store.scan_keys(&seed[..2], |k, _| {
        first = Some(k.to_vec());
        false
    })?;
    if first.is_none() {
        sh.store.scan_keys(b"", |k, _| {
            first = Some(k.to_vec());
            false
        })?;
    }
    out.opt_bulk(first.as_deref());
    Ok(())
}

/// Deletes up to `budget` expired metadata entries starting after `from`; returns where the
/// next round starts (empty = wrap around) and how many were deleted. The active expiry task
/// calls it periodically, so keys nobody reads still leave.
pub fn expire_cycle(st: &Store, from: &[u8], budget: usize) -> Result<(Vec<u8>, usize), String> {
    let now = now_ms();
    let mut it = st.db.raw_iterator_cf(&*st.meta_cf);
    it.seek(from);
    let mut expired = Vec::new();
    let mut seen = 0;
    let mut next = Vec::new();
    while let Some((k, v)) = it.item() {
        if seen == budget {
            next = k.to_vec();
            break;
        }
        seen += 1;
        // The header first: most keys are live, and decoding a compact hash copies it.
        let due = crate::storage::metadata::raw_expire_ms(v).is_some_and(|e| e != 0 && e <= now);
        if due && Meta::decode(v).is_ok_and(|m| m.expired(now)) {
            expired.push(k.to_vec());
        }
        it.next();
    }
    it.status().map_err(crate::storage::engine_err)?;
    let mut n = 0;
    for k in expired {
        let _g = st.locks.lock(&[&k]);
        // Re-check under the lock: a writer may have replaced it.
        let raw = st.db.get_cf(&*st.meta_cf, &k).map_err(crate::storage::engine_err)?;
        if raw.as_deref().and_then(|r| Meta::decode(r).ok()).is_some_and(|m| m.expired(now_ms())) {
            let mut b = WriteBatch::new();
            st.delete_meta(&mut b, &k);
            st.write(b)?;
            n += 1;
        }
    }
    Ok((next, n))
}
