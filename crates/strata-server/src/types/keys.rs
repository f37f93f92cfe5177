//! Operations on keys of any type: deletion, existence, expiry, type and encoding, walks of
//! the keyspace, RENAME.
//!
//! Deleting a key removes only its metadata record: its sub-keys become stale (their version
//! has no live metadata) and the compaction filter collects them ([`super::gc`]).

use super::error::{Result, TypeError};
use super::keyspace::{Keyspace, Page};
use super::metadata::{Kind, Meta};
use super::notify::{GENERIC, NEW};
use super::number::parse_int_strict;
use super::seen::Seen;
use super::{score, subkey};
use strata::WriteBatch;

/// DEL: deletes `keys` (repeats count once); the number that existed.
pub fn delete(ks: &Keyspace, keys: &[Vec<u8>]) -> Result<u64> {
    delete_with(ks, keys, |_, _| Ok(()))
}

/// [`delete`], calling `deleting` with each key that exists and its metadata, under the keys'
/// locks and before the deletion is written (an error from it deletes nothing).
pub fn delete_with(
    ks: &Keyspace,
    keys: &[Vec<u8>],
    mut deleting: impl FnMut(&[u8], &Meta) -> Result<()>,
) -> Result<u64> {
    let _g = ks.store.locks.lock(keys);
    let mut b = WriteBatch::new();
    let mut n = 0;
    let mut seen = Seen::with_capacity(keys.len());
    // With notifications on, every key is read before the batch is built (a key met expired
    // is then removed on the spot, as Redis removes it when DEL looks at it: `Keyspace::meta`)
    // and the deleted ones are kept to be announced.
    let announce = ks.notifier.flags() != 0;
    let mut gone = Vec::new();
    for k in keys {
        if !seen.note(k) {
            continue;
        }
        if let Some(m) = ks.meta(k)? {
            deleting(k, &m)?;
            n += 1;
            if announce {
                gone.push(k);
            } else {
                ks.delete_meta(&mut b, k);
            }
        }
    }
    for k in &gone {
        ks.delete_meta(&mut b, k);
    }
    ks.write(b)?;
    for k in &gone {
        ks.notify(GENERIC, "del", k);
    }
    Ok(n)
}

/// EXISTS: how many of `keys` exist (repeats count each time).
pub fn count_existing(ks: &Keyspace, keys: &[Vec<u8>]) -> Result<u64> {
    let mut n = 0;
    for k in keys {
        if ks.meta(k)?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

/// When [`expire`] sets the expiry, against the key's current one (none counts as
/// infinite for GT and LT).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpireIf {
    /// Only if the key has no expiry (NX).
    pub nx: bool,
    /// Only if the key has one (XX).
    pub xx: bool,
    /// Only if the new one is later (GT).
    pub gt: bool,
    /// Only if the new one is earlier (LT).
    pub lt: bool,
}

/// EXPIRE: makes `key` expire at `at_ms` (Unix ms) if `cond` holds (raising `expire`); a
/// time not after now deletes it (raising `del`). Whether the key existed and `cond` held.
pub fn expire(ks: &Keyspace, key: &[u8], at_ms: i64, cond: ExpireIf) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut m) = ks.meta(key)? else {
        return Ok(false);
    };
    let cur = if m.expire_ms == 0 { None } else { Some(m.expire_ms as i64) };
    let refused = cond.nx && cur.is_some()
        || cond.xx && cur.is_none()
        || cond.gt && cur.is_none_or(|c| at_ms <= c)
        || cond.lt && cur.is_some_and(|c| at_ms >= c);
    if refused {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    // A replica running its master's command keeps the key with its time up until the
    // master's DEL (`keyspace::as_master`), as redis-server's replica does.
    let at = at_ms.max(1) as u64;
    let deleted = super::keyspace::past(at, ks.now_ms);
    if deleted {
        ks.delete_meta(&mut b, key);
    } else {
        m.expire_ms = at;
        ks.put_meta(&mut b, key, &m);
    }
    ks.write(b)?;
    ks.notify(GENERIC, if deleted { "del" } else { "expire" }, key);
    Ok(true)
}

/// What TTL finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// The key does not exist.
    NoKey,
    /// The key does not expire.
    Never,
    /// Milliseconds left.
    Left(u64),
}

/// TTL: how long `key` has left.
pub fn ttl(ks: &Keyspace, key: &[u8]) -> Result<Ttl> {
    Ok(match ks.meta(key)? {
        None => Ttl::NoKey,
        Some(m) if m.expire_ms == 0 => Ttl::Never,
        Some(m) => Ttl::Left(m.expire_ms.saturating_sub(ks.now_ms)),
    })
}

/// PERSIST: removes `key`'s expiry; whether it had one.
pub fn persist(ks: &Keyspace, key: &[u8]) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    match ks.meta(key)? {
        Some(mut m) if m.expire_ms != 0 => {
            m.expire_ms = 0;
            let mut b = WriteBatch::new();
            ks.put_meta(&mut b, key, &m);
            ks.write(b)?;
            ks.notify(GENERIC, "persist", key);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// TYPE: the type of `key`.
pub fn kind(ks: &Keyspace, key: &[u8]) -> Result<Option<Kind>> {
    Ok(ks.meta(key)?.map(|m| m.kind))
}

/// OBJECT ENCODING: Redis's name for the encoding of a value from its metadata record (a
/// compact hash is `listpack`, a hash of sub-keys `hashtable`); sets and sorted sets that
/// Redis would keep compact are named by `set::intset_shaped` and `zset::listpack_shaped`.
pub fn encoding_of(m: &Meta) -> &'static str {
    match m.kind {
        Kind::String if parse_int_strict(&m.value).is_some() => "int",
        Kind::String if m.value.len() <= 44 => "embstr",
        Kind::String => "raw",
        Kind::Hash if m.compact => "listpack",
        Kind::Hash | Kind::Set => "hashtable",
        Kind::List => "quicklist",
        Kind::ZSet => "skiplist",
        Kind::Stream => "stream",
    }
}

/// MEMORY USAGE: an estimate of the bytes `key`'s records take (`None`: no such key): its
/// metadata record, and for a value of sub-keys their number times the average size of the
/// first `samples` of them (all of them when `samples` is 0), with their score-index
/// entries for a sorted set. The records as stored, before compression: what the data
/// weighs, not what the engine's files or caches hold for it.
pub fn memory_usage(ks: &Keyspace, key: &[u8], samples: usize) -> Result<Option<u64>> {
    let Some(m) = ks.meta(key)? else { return Ok(None) };
    let meta_bytes = (2 + key.len() + m.encode().len()) as u64;
    if m.kind == Kind::String || m.compact || m.size == 0 {
        return Ok(Some(meta_bytes));
    }
    let prefix_len = subkey::prefix(ks.store.filing, key, m.version).len() as u64;
    let (mut seen, mut bytes) = (0u64, 0u64);
    ks.scan(&ks.store.sub_cf, key, m.version, b"", false, |field, value| {
        seen += 1;
        bytes += prefix_len + (field.len() + value.len()) as u64;
        samples == 0 || seen < samples as u64
    })?;
    // A stream's sub-keys outnumber its entries (groups, nodes...): what was seen stands
    // for itself when the walk ended before the sample size.
    let count = if m.kind == Kind::Stream { seen.max(m.size) } else { m.size.max(seen) };
    let mut per_element = bytes.checked_div(seen).unwrap_or(0);
    if m.kind == Kind::ZSet {
        // The score index repeats the member with its 8-byte score.
        per_element *= 2;
    }
    Ok(Some(meta_bytes + per_element * count))
}

/// SCAN: walks `count` live keys from the stored position `from` (inclusive; empty: the
/// first) in stored order, keeping those `keep` accepts (given the key's position, the key
/// and its type); the page's `next` is the position the next step starts at.
pub fn scan(
    ks: &Keyspace,
    from: &[u8],
    count: usize,
    mut keep: impl FnMut(&[u8], &[u8], Kind) -> bool,
) -> Result<Page<Vec<u8>>> {
    let mut found = Vec::new();
    let mut examined = 0;
    let mut next = None;
    ks.scan_keys_expiring(from, |at, k, m| {
        if examined == count {
            next = Some(at.to_vec());
            return false;
        }
        examined += 1;
        if keep(at, k, m.kind) {
            found.push(k.to_vec());
        }
        true
    })?;
    Ok(Page { items: found, next })
}

/// DBSIZE: the number of stored keys that `keep` keeps (given each one's position and the
/// key; a walk of the metadata family). As Redis counts, a key whose expiry passed counts
/// until it is removed (by a read that finds it expired, or by active expiry).
pub fn count(ks: &Keyspace, mut keep: impl FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
    let mut n = 0;
    ks.scan_stored_keys(|at, k, _| {
        n += u64::from(keep(at, k));
        true
    })?;
    Ok(n)
}

/// The number of stored keys and of those with an expiry (INFO keyspace; counted as
/// [`count`] counts).
pub fn stats(ks: &Keyspace) -> Result<(u64, u64)> {
    let (mut keys, mut expires) = (0u64, 0u64);
    ks.scan_stored_keys(|_, _, expire_ms| {
        keys += 1;
        expires += u64::from(expire_ms != 0);
        true
    })?;
    Ok((keys, expires))
}

/// RANDOMKEY: the first live key that `keep` keeps (given its position and the key) at or
/// after a random point of the key space (or the first of all).
pub fn random(
    ks: &Keyspace,
    mut keep: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<Option<Vec<u8>>> {
    let seed = ks.store.random_position(ks.store.new_version())?;
    for from in [&seed[..], b""] {
        let mut first = None;
        ks.scan_keys_expiring(from, |at, k, _| {
            if keep(at, k) {
                first = Some(k.to_vec());
            }
            first.is_none()
        })?;
        if first.is_some() {
            return Ok(first);
        }
    }
    Ok(None)
}

/// FLUSHDB: deletes every key of the keyspace's database.
pub fn flush(ks: &Keyspace) -> Result<()> {
    Ok(ks.store.flush()?)
}

/// FLUSHALL in cluster mode, for one partition this node leads: deletes every key of slots
/// `first..=last`.
pub fn flush_slots(ks: &Keyspace, first: u16, last: u16) -> Result<()> {
    Ok(ks.store.flush_slots(first, last)?)
}

/// Puts into `b` a copy of `src` of keyspace `from` (with metadata `m`) under `dst` of
/// keyspace `to` (the same one, or another database's), at a new version.
fn copy_key(
    from: &Keyspace,
    to: &Keyspace,
    b: &mut WriteBatch,
    src: &[u8],
    m: &Meta,
    dst: &[u8],
) -> Result<()> {
    let out = to.store;
    let mut nm = m.clone();
    // Strings and compact hashes are whole in their metadata record.
    if m.kind != Kind::String && !m.compact {
        nm.version = out.new_version();
        let mut corrupt = false;
        from.scan(&from.store.sub_cf, src, m.version, b"", false, |f, v| {
            b.put_cf(&*out.sub_cf, subkey::encode(out.filing, dst, nm.version, f), v);
            if m.kind == Kind::ZSet {
                match v.try_into() {
                    Ok(bits) => {
                        let s = f64::from_bits(u64::from_le_bytes(bits));
                        b.put_cf(
                            &*out.score_cf,
                            score::index_key(out.filing, dst, nm.version, s, f),
                            b"",
                        );
                    }
                    Err(_) => corrupt = true,
                }
            }
            true
        })?;
        if corrupt {
            return Err(TypeError::Corrupt("sorted set score".into()));
        }
    }
    to.put_meta(b, dst, &nm);
    Ok(())
}

/// COPY: copies `src`'s value (its expiry included) of keyspace `from` to `dst` of keyspace
/// `to` (COPY ... DB: another database's), replacing what `dst` held only with `replace`.
/// Whether it copied: not without `src`, nor onto an existing `dst` without `replace`.
/// `src` and `dst` must differ when the keyspaces are one (checked by the caller). Raises
/// `new` (Redis makes `dst` anew even when it replaces it) and `copy_to` on `dst`.
pub fn copy(from: &Keyspace, to: &Keyspace, src: &[u8], dst: &[u8], replace: bool) -> Result<bool> {
    let _g = from.store.locks.lock(&[src, dst]);
    let Some(m) = from.meta(src)? else { return Ok(false) };
    if !replace && to.meta(dst)?.is_some() {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    copy_key(from, to, &mut b, src, &m, dst)?;
    to.write(b)?;
    to.notify(NEW, "new", dst);
    to.notify(GENERIC, "copy_to", dst);
    Ok(true)
}

/// MOVE: moves `key` (its value and expiry) from keyspace `from` to keyspace `to`, another
/// database's, in one batch. Whether it moved: not when `from` has no such key or `to`
/// has one already. Raises `move_from` in `from`'s database and `move_to` (after `new`) in
/// `to`'s.
pub fn move_key(from: &Keyspace, to: &Keyspace, key: &[u8]) -> Result<bool> {
    let _g = from.store.locks.lock(&[key]);
    let Some(m) = from.meta(key)? else { return Ok(false) };
    if to.meta(key)?.is_some() {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    copy_key(from, to, &mut b, key, &m, key)?;
    from.delete_meta(&mut b, key);
    from.write(b)?;
    to.notify(NEW, "new", key);
    from.notify(GENERIC, "move_from", key);
    to.notify(GENERIC, "move_to", key);
    Ok(true)
}

/// RENAME: moves `src`'s value to `dst`, replacing what `dst` held; with `if_absent`
/// (RENAMENX) only if `dst` does not exist. Whether it moved ([`TypeError::NoSuchKey`]
/// without `src`; renaming a key to itself moves nothing and counts as done unless
/// `if_absent`). A move raises `new` on `dst` (made anew, as Redis does even when it
/// replaces a key), then `rename_from` on `src` and `rename_to` on `dst`.
pub fn rename(ks: &Keyspace, src: &[u8], dst: &[u8], if_absent: bool) -> Result<bool> {
    let _g = ks.store.locks.lock(&[src, dst]);
    let m = ks.meta(src)?.ok_or(TypeError::NoSuchKey)?;
    if src == dst {
        return Ok(!if_absent);
    }
    if if_absent && ks.meta(dst)?.is_some() {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    copy_key(ks, ks, &mut b, src, &m, dst)?;
    ks.delete_meta(&mut b, src);
    ks.write(b)?;
    ks.notify(NEW, "new", dst);
    ks.notify(GENERIC, "rename_from", src);
    ks.notify(GENERIC, "rename_to", dst);
    Ok(true)
}
