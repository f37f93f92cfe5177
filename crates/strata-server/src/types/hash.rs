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
use crate::filing::Filing;
use crate::storage::{LAYOUT_DELTAS, LAYOUT_HASH_ORDER};
use strata::WriteBatch;

/// (field, value) pairs of a hash, in its order (`for_each`).
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

/// Visits the pairs of the hash `key` (metadata `m`) until `f` returns false: a compact
/// hash's in the order their fields were first set (Redis's listpack order,
/// [`compact_hash`]), a sub-key hash's in field order.
pub fn for_each(
    ks: &Keyspace,
    key: &[u8],
    m: &Meta,
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    if !m.compact {
        return ks.scan(&ks.store.sub_cf, key, m.version, b"", false, f);
    }
    for (k, v) in compact_hash::iter(&m.value) {
        if !f(k, v) {
            break;
        }
    }
    Ok(())
}

/// Marks the store for compact hashes out of byte order before `payload`, a compact hash's,
/// is written, when it is one (`storage::LAYOUT_HASH_ORDER`: a version that kept them in byte
/// order would miss fields in it). A cluster node's store is marked for them at open.
pub(super) fn mark_order(ks: &Keyspace, payload: &[u8]) -> Result<()> {
    let st = ks.store;
    if !matches!(st.filing, Filing::Slot)
        || st.has_layout(LAYOUT_HASH_ORDER)
        || compact_hash::in_field_order(payload)
    {
        return Ok(());
    }
    Ok(st.raise_layout(LAYOUT_HASH_ORDER)?)
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
            mark_order(ks, &payload)?;
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
        let (pairs, n) = compact_hash::apply_unlimited(&m.value, changes);
        let version = st.new_version();
        b = WriteBatch::with_capacity_bytes(pairs.len() + n as usize * (key.len() + 32) + 64);
        for (f, v) in compact_hash::iter(&pairs) {
            b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, version, f), v);
        }
        let mut sub = Meta::composite(Kind::Hash, version);
        sub.expire_ms = m.expire_ms;
        sub.size = n;
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
        for_each(ks, key, &m, |f, val| {
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
/// field `keep` accepts. A compact hash answers whole, whatever `from` and `count` (its order
/// is not its fields'), as Redis answers for a listpack.
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
        if m.compact {
            for (f, v) in compact_hash::iter(&m.value) {
                if keep(f) {
                    found.push((f.to_vec(), v.to_vec()));
                }
            }
            return Ok(Page { items: found, next });
        }
        let mut seen = 0;
        ks.scan(&ks.store.sub_cf, key, m.version, from, false, |f, v| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LAYOUT_REGISTER_DELTAS;
    use crate::types::compact_hash::Limits;
    use crate::types::open_test_databases;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    }

    /// A compact hash lists its fields in the order they were first set, as Redis's listpack
    /// does: a field's new value in place, a new field last, a field deleted and set again
    /// last; whole writes and field deltas alike, and after a reopen. Past a limit the
    /// sub-keys list them in field order.
    #[test]
    fn compact_hashes_keep_the_insertion_order() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits::new(5, 128);
        let big = "v".repeat(100);
        let want = fields(&[("z", "1"), ("b", &big), ("m", "33"), ("a", "4"), ("y", "2")]);
        {
            let dbs = open_test_databases(dir.path());
            let ks = Keyspace::new(dbs.store(0), &limits, 0);
            set_fields(&ks, b"h", &[(b"z", b"1"), (b"y", b"2"), (b"b", big.as_bytes())]).unwrap();
            assert_eq!(delete_fields(&ks, b"h", &[b"y".to_vec()]).unwrap(), 1);
            set_fields(&ks, b"h", &[(b"m", b"3"), (b"a", b"4"), (b"z", b"1")]).unwrap();
            set_fields(&ks, b"h", &[(b"y", b"2")]).unwrap();
            // A one-field write to a hash of 100-byte values goes as a delta.
            let deltas = || dbs.engine().field_deltas.load(std::sync::atomic::Ordering::Relaxed);
            let before = deltas();
            assert_eq!(incr_by(&ks, b"h", b"m", 30).unwrap(), 33);
            assert_eq!(deltas(), before + 1);
            assert_eq!(all(&ks, b"h").unwrap(), want);
            let page = scan(&ks, b"h", b"", 1, |_| true).unwrap();
            assert_eq!((page.items, page.next), (want.clone(), None), "a compact hash scans whole");
            let page = scan(&ks, b"h", b"c", 1, |f| f != b"b").unwrap();
            assert_eq!(page.items.len(), 4, "whatever the cursor");
            dbs.close().unwrap();
        }
        let dbs = open_test_databases(dir.path());
        let ks = Keyspace::new(dbs.store(0), &limits, 0);
        assert_eq!(all(&ks, b"h").unwrap(), want);
        assert_eq!(get(&ks, b"h", b"a").unwrap().as_deref(), Some(&b"4"[..]));
        // Past the limit of five pairs: sub-keys, in field order.
        set_fields(&ks, b"h", &[(b"c", b"5")]).unwrap();
        assert!(!read(&ks, b"h").unwrap().unwrap().compact);
        let sorted =
            fields(&[("a", "4"), ("b", &big), ("c", "5"), ("m", "33"), ("y", "2"), ("z", "1")]);
        assert_eq!(all(&ks, b"h").unwrap(), sorted);
        let page = scan(&ks, b"h", b"", 2, |_| true).unwrap();
        assert_eq!((page.items, page.next), (sorted[..2].to_vec(), Some(b"c".to_vec())));
    }

    /// The first compact hash out of byte order marks the store's layout `slot-prefixed 5`
    /// (synced, before the hash is written), which a version keeping byte order refuses at
    /// open; hashes in byte order mark nothing.
    #[test]
    fn the_first_hash_out_of_byte_order_marks_a_layout_older_versions_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits::default();
        let dbs = open_test_databases(dir.path());
        let ks = Keyspace::new(dbs.store(0), &limits, 0);
        set_fields(&ks, b"h", &[(b"a", b"1"), (b"b", b"2")]).unwrap();
        set_fields(&ks, b"h", &[(b"c", b"3"), (b"a", b"0")]).unwrap();
        assert_eq!(dbs.layout_marker().as_deref(), Some(crate::storage::LAYOUT));
        let p = compact_hash::encode([(&b"a"[..], &b"1"[..]), (b"b", b"2")]);
        mark_order(&ks, &p).unwrap();
        assert_eq!(dbs.layout_marker().as_deref(), Some(crate::storage::LAYOUT));
        set_fields(&ks, b"g", &[(b"b", b"1"), (b"a", b"2")]).unwrap();
        assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_HASH_ORDER));
        // A lower layout asked for later keeps the marker.
        dbs.engine().raise_layout(LAYOUT_REGISTER_DELTAS).unwrap();
        assert_eq!(dbs.layout_marker().as_deref(), Some(LAYOUT_HASH_ORDER));
        dbs.close().unwrap();
        drop(dbs);
        let dbs = open_test_databases(dir.path());
        let ks = Keyspace::new(dbs.store(0), &limits, 0);
        assert!(dbs.engine().has_layout(LAYOUT_HASH_ORDER));
        assert_eq!(all(&ks, b"g").unwrap(), fields(&[("b", "1"), ("a", "2")]));
    }
}
