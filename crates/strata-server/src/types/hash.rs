//! Hashes. A hash has one of two encodings: compact, every pair inside its metadata record
//! ([`compact_hash`]), while it fits the keyspace's limits (`hash-max-listpack-entries`,
//! `hash-max-listpack-value`); else one sub-key per field (value = the field's value). A new
//! hash starts compact; a write that takes it past a limit converts it to sub-keys, and it
//! never converts back. Every operation behaves the same in both encodings: reads go through
//! [`has_field`], [`field`] and [`for_each`], writes through `commit`, which alone picks the
//! encoding.

use super::compact_hash::{self, Edit as Change};
use super::error::{Result, TypeError};
use super::hash_delta;
use super::keyspace::{Keyspace, Page};
use super::metadata::{Kind, Meta};
use super::notify::HASH;
use super::number::parse_int_strict;
use super::seen::Seen;
use super::subkey;
use crate::storage::LAYOUT_DELTAS;
use strata::WriteBatch;

/// (field, value) pairs of a hash, in field order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The live hash at `key` (its metadata, to read with [`field`] and [`for_each`]);
/// `Ok(None)` when absent, [`TypeError::WrongType`] for another type.
pub fn read(ks: &Keyspace, key: &[u8]) -> Result<Option<Meta>> {
    ks.typed(key, Kind::Hash)
}

/// The live hash at `key`, or a new empty compact one (and true: the write creates it).
fn read_or_new(ks: &Keyspace, key: &[u8]) -> Result<(Meta, bool)> {
    Ok(match read(ks, key)? {
        Some(m) => (m, false),
        None => (Meta::compact_hash(), true),
    })
}

/// Whether the hash `key` (metadata `m`) has `f`.
pub fn has_field(ks: &Keyspace, key: &[u8], m: &Meta, f: &[u8]) -> Result<bool> {
    if m.compact {
        Ok(compact_hash::get(&m.value, f).is_some())
    } else {
        Ok(ks.get_sub(key, m.version, f)?.is_some())
    }
}

/// The value of `f` in the hash `key` (metadata `m`).
pub fn field(ks: &Keyspace, key: &[u8], m: &Meta, f: &[u8]) -> Result<Option<Vec<u8>>> {
    if m.compact {
        Ok(compact_hash::get(&m.value, f).map(<[u8]>::to_vec))
    } else {
        ks.get_sub(key, m.version, f)
    }
}

/// Visits the pairs of the hash `key` (metadata `m`) in field order from the first field at
/// or above `from`, until `f` returns false.
pub fn for_each(
    ks: &Keyspace,
    key: &[u8],
    m: &Meta,
    from: &[u8],
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    if !m.compact {
        return ks.scan(&ks.store.sub_cf, key, m.version, from, false, f);
    }
    for (k, v) in compact_hash::iter(&m.value) {
        if k >= from && !f(k, v) {
            break;
        }
    }
    Ok(())
}

/// How many pairs a whole [`for_each`] of the hash visits, when its encoding knows before
/// the walk (a compact hash). A sub-key hash's count is known only by walking it: its
/// metadata is read apart from its sub-keys, without a snapshot.
pub fn known_len(m: &Meta) -> Option<usize> {
    m.compact.then_some(m.size as usize)
}

/// Writes `changes` (in order: a later change of a field wins) to the hash `key` whose
/// metadata is `m`, in one batch. The caller has counted the fields added or removed into
/// `m.size` and says whether it changed (a sub-key hash rewrites its metadata only then), and
/// whether the hash `existed` before (`m` is what it read, not a new record). A compact hash
/// that no longer fits the limits is converted to sub-keys at a fresh version; an emptied
/// hash is deleted; an existing compact hash that stays one takes the changes as a field
/// delta where the store allows ([`hash_delta`], `Store::merge_meta`) and the delta is at
/// most half the entry's size, else whole.
fn commit(
    ks: &Keyspace,
    key: &[u8],
    mut m: Meta,
    changes: &[Change],
    size_changed: bool,
    existed: bool,
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let st = ks.store;
    let mut b;
    if m.compact {
        if let Some((payload, n)) = compact_hash::apply(&m.value, changes, ks.hash_limits) {
            m.size = n;
            m.value = payload.into();
            if existed && n > 0 {
                let raw = m.encode();
                b = WriteBatch::with_capacity_bytes(key.len() + raw.len() + 64);
                // A delta of most of the hash saves little, and every read would merge it.
                let small = hash_delta::encoded_len(changes) * 2 <= raw.len();
                let whole = if small {
                    st.merge_meta(&mut b, key, LAYOUT_DELTAS, raw, || hash_delta::encode(changes))
                        .err()
                } else {
                    Some(raw)
                };
                if let Some(raw) = whole {
                    st.put_meta(&mut b, key, raw);
                }
                return ks.write(b);
            }
            b = WriteBatch::with_capacity_bytes(key.len() + m.value.len() + 64);
            ks.put_or_delete_meta(&mut b, key, &m);
            return ks.write(b);
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
            b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, version, f), v);
        }
        let mut sub = Meta::composite(Kind::Hash, version);
        sub.expire_ms = m.expire_ms;
        sub.size = pairs.len() as u64;
        ks.put_meta(&mut b, key, &sub);
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
                Change::Put(f, v) => {
                    b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, f), v);
                }
                Change::Del(f) => {
                    b.delete_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, f));
                }
            }
        }
        if size_changed {
            ks.put_or_delete_meta(&mut b, key, &m);
        }
    }
    ks.write(b)
}

/// HSET: sets every (field, value) of `pairs` (a later pair of a field wins); the number of
/// fields added. Raises `hset` even when no value changed, as Redis.
pub fn set_fields(ks: &Keyspace, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut m, created) = read_or_new(ks, key)?;
    let mut added = 0;
    let mut fresh = Seen::with_capacity(pairs.len());
    let mut changes = Vec::with_capacity(pairs.len());
    for &(f, v) in pairs {
        if !has_field(ks, key, &m, f)? && fresh.note(f) {
            added += 1;
        }
        changes.push(Change::Put(f, v));
    }
    m.size += added;
    commit(ks, key, m, &changes, added > 0, !created)?;
    ks.notify_new(created, key);
    ks.notify(HASH, "hset", key);
    Ok(added)
}

/// HSETNX: sets `f` to `v` unless the hash has `f`; whether it did.
pub fn set_if_absent(ks: &Keyspace, key: &[u8], f: &[u8], v: &[u8]) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut m, created) = read_or_new(ks, key)?;
    if has_field(ks, key, &m, f)? {
        return Ok(false);
    }
    m.size += 1;
    commit(ks, key, m, &[Change::Put(f, v)], true, !created)?;
    ks.notify_new(created, key);
    ks.notify(HASH, "hset", key);
    Ok(true)
}

/// HGET: the value of `f`.
pub fn get(ks: &Keyspace, key: &[u8], f: &[u8]) -> Result<Option<Vec<u8>>> {
    match read(ks, key)? {
        Some(m) => field(ks, key, &m, f),
        None => Ok(None),
    }
}

/// HMGET: the value of each of `fields`.
pub fn get_many(ks: &Keyspace, key: &[u8], fields: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
    let m = read(ks, key)?;
    let mut values = Vec::with_capacity(fields.len());
    for f in fields {
        values.push(match &m {
            Some(m) => field(ks, key, m, f)?,
            None => None,
        });
    }
    Ok(values)
}

/// Every (field, value) pair (HKEYS, HVALS).
pub fn all(ks: &Keyspace, key: &[u8]) -> Result<Pairs> {
    let mut v = Vec::new();
    if let Some(m) = read(ks, key)? {
        for_each(ks, key, &m, b"", |f, val| {
            v.push((f.to_vec(), val.to_vec()));
            true
        })?;
    }
    Ok(v)
}

/// HDEL: removes `fields` (repeats count once); the number removed. An emptied hash is
/// deleted.
pub fn delete_fields(ks: &Keyspace, key: &[u8], fields: &[Vec<u8>]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut m) = read(ks, key)? else {
        return Ok(0);
    };
    let mut changes = Vec::new();
    let mut gone = Seen::with_capacity(fields.len());
    for f in fields {
        if !gone.contains(f) && has_field(ks, key, &m, f)? {
            gone.note(f);
            changes.push(Change::Del(f));
        }
    }
    let n = changes.len() as u64;
    m.size -= n;
    let emptied = m.size == 0;
    commit(ks, key, m, &changes, n > 0, true)?;
    if n > 0 {
        ks.notify_removal(HASH, "hdel", key, emptied);
    }
    Ok(n)
}

/// HLEN: the number of fields.
pub fn len(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    Ok(read(ks, key)?.map_or(0, |m| m.size))
}

/// HEXISTS: whether the hash has `f`.
pub fn exists(ks: &Keyspace, key: &[u8], f: &[u8]) -> Result<bool> {
    match read(ks, key)? {
        Some(m) => has_field(ks, key, &m, f),
        None => Ok(false),
    }
}

/// HINCRBY: adds `by` to the integer in `f` (absent: 0); the new value.
pub fn incr_by(ks: &Keyspace, key: &[u8], f: &[u8], by: i64) -> Result<i64> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut m, created) = read_or_new(ks, key)?;
    let old = field(ks, key, &m, f)?;
    let cur = match &old {
        Some(v) => parse_int_strict(v).ok_or(TypeError::HashValueNotAnInteger)?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or(TypeError::Overflow)?;
    let text = new.to_string();
    if old.is_none() {
        m.size += 1;
    }
    commit(ks, key, m, &[Change::Put(f, text.as_bytes())], old.is_none(), !created)?;
    ks.notify_new(created, key);
    ks.notify(HASH, "hincrby", key);
    Ok(new)
}

/// HINCRBYFLOAT: adds `by` to the number in `f` (absent: 0) in x87 long double arithmetic
/// as redis-server does (`super::long_double`); the new value as stored (Redis's human form).
/// The increment itself must be finite ([`TypeError::IncrNanOrInfinity`]), the field a float
/// ([`TypeError::HashValueNotAFloat`]), the sum finite ([`TypeError::NanOrInfinity`]).
pub fn incr_by_float(ks: &Keyspace, key: &[u8], f: &[u8], by: &[u8]) -> Result<Vec<u8>> {
    use super::long_double::{add, format_human, parse, LongDouble};
    let by = parse(by).ok_or(TypeError::NotAFloat)?;
    if matches!(by, LongDouble::Inf { .. }) {
        return Err(TypeError::IncrNanOrInfinity);
    }
    let _g = ks.store.locks.lock(&[key]);
    let (mut m, created) = read_or_new(ks, key)?;
    let old = field(ks, key, &m, f)?;
    let cur = match &old {
        Some(v) => parse(v).ok_or(TypeError::HashValueNotAFloat)?,
        None => LongDouble::Finite { neg: false, mant: 0, exp: 0 },
    };
    let new = match add(cur, by) {
        Some(v @ LongDouble::Finite { .. }) => format_human(v).into_bytes(),
        _ => return Err(TypeError::NanOrInfinity),
    };
    if old.is_none() {
        m.size += 1;
    }
    commit(ks, key, m, &[Change::Put(f, &new)], old.is_none(), !created)?;
    ks.notify_new(created, key);
    ks.notify(HASH, "hincrbyfloat", key);
    Ok(new)
}

/// HRANDFIELD: `n` random (field, value) pairs of the hash at `key`, distinct ones (at most
/// its size, in random order) or, when `distinct` is false, drawn with repeats; `None` when
/// the key is absent. Reads every field, as SRANDMEMBER does.
pub fn random_fields(ks: &Keyspace, key: &[u8], n: usize, distinct: bool) -> Result<Option<Pairs>> {
    use rand::seq::SliceRandom;
    if read(ks, key)?.is_none() {
        return Ok(None);
    }
    let mut pairs = all(ks, key)?;
    let mut rng = rand::thread_rng();
    if distinct {
        pairs.shuffle(&mut rng);
        pairs.truncate(n);
        return Ok(Some(pairs));
    }
    Ok(Some((0..n).filter_map(|_| pairs.choose(&mut rng).cloned()).collect()))
}

/// HSCAN: walks `count` fields from the first at or above `from`, keeping the pairs whose
/// field `keep` accepts.
pub fn scan(
    ks: &Keyspace,
    key: &[u8],
    from: &[u8],
    count: usize,
    mut keep: impl FnMut(&[u8]) -> bool,
) -> Result<Page<(Vec<u8>, Vec<u8>)>> {
    let mut found = Vec::new();
    let mut next = None;
    if let Some(m) = read(ks, key)? {
        let mut seen = 0;
        for_each(ks, key, &m, from, |f, v| {
            if seen == count {
                next = Some(f.to_vec());
                return false;
            }
            seen += 1;
            if keep(f) {
                found.push((f.to_vec(), v.to_vec()));
            }
            true
        })?;
    }
    Ok(Page { items: found, next })
}
