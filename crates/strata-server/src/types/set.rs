//! Sets: one sub-key per member, empty value.

use super::error::{Result, TypeError};
use super::keyspace::{Keyspace, Page};
use super::metadata::{Kind, Meta};
use super::notify::{GENERIC, SET};
use super::seen::Seen;
use super::subkey;
use crate::storage::pop_hints::Family;
use std::collections::{BTreeSet, HashSet};
use strata::WriteBatch;

/// SADD: adds `members` (repeats count once); the number added.
pub fn add(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let old = ks.typed(key, Kind::Set)?;
    let created = old.is_none();
    let mut m = old.unwrap_or_else(|| Meta::composite(Kind::Set, st.new_version()));
    let mut b = WriteBatch::new();
    let mut added = Seen::with_capacity(members.len());
    let prefix = subkey::prefix(st.filing, key, m.version);
    for mem in members {
        if !added.contains(mem) && ks.get_sub(key, m.version, mem)?.is_none() {
            added.note(mem);
            b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, mem), b"");
            st.pop_hints.inserted(Family::SetMembers, &prefix, mem);
        }
    }
    m.size += added.len() as u64;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    ks.notify_new(created, key);
    if !added.is_empty() {
        ks.notify(SET, "sadd", key);
    }
    Ok(added.len() as u64)
}

/// SREM: removes `members` (repeats count once); the number removed. An emptied set is
/// deleted.
pub fn remove(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::Set)? else {
        return Ok(0);
    };
    let mut b = WriteBatch::new();
    let mut gone = Seen::with_capacity(members.len());
    for mem in members {
        if !gone.contains(mem) && ks.get_sub(key, m.version, mem)?.is_some() {
            gone.note(mem);
            b.delete_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, mem));
        }
    }
    m.size -= gone.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write(b)?;
    if !gone.is_empty() {
        ks.notify_removal(SET, "srem", key, m.size == 0);
    }
    Ok(gone.len() as u64)
}

/// SMEMBERS: every member, in byte order.
pub fn members(ks: &Keyspace, key: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    if let Some(m) = ks.typed(key, Kind::Set)? {
        ks.scan(&ks.store.sub_cf, key, m.version, b"", false, |f, _| {
            v.push(f.to_vec());
            true
        })?;
    }
    Ok(v)
}

/// SSCAN: one step of a walk over the members from `from` (a member; empty: the first):
/// `count` members visited, those `keep` keeps returned, and where the next step starts.
pub fn scan(
    ks: &Keyspace,
    key: &[u8],
    from: &[u8],
    count: usize,
    keep: impl FnMut(&[u8]) -> bool,
) -> Result<Page<Vec<u8>>> {
    let Some(m) = ks.typed(key, Kind::Set)? else {
        return Ok(Page { items: Vec::new(), next: None });
    };
    let page = ks.scan_page(key, m.version, from, count, keep)?;
    Ok(Page { items: page.items.into_iter().map(|(f, _)| f).collect(), next: page.next })
}

/// SRANDMEMBER: members picked at random, the set left as it is (`None`: no key). With
/// `distinct`, up to `n` different members (all of them when the set has no more), in random
/// order; else `n` picks, each of any member (repeats possible). Reads every member: O(size).
pub fn random_members(
    ks: &Keyspace,
    key: &[u8],
    n: usize,
    distinct: bool,
) -> Result<Option<Vec<Vec<u8>>>> {
    use rand::seq::SliceRandom;
    if ks.typed(key, Kind::Set)?.is_none() {
        return Ok(None);
    }
    let mut all = members(ks, key)?;
    let mut rng = rand::thread_rng();
    if distinct {
        all.shuffle(&mut rng);
        all.truncate(n);
        return Ok(Some(all));
    }
    let picks = (0..n).filter_map(|_| all.choose(&mut rng).cloned()).collect();
    Ok(Some(picks))
}

/// SISMEMBER: whether `member` is in the set.
pub fn is_member(ks: &Keyspace, key: &[u8], member: &[u8]) -> Result<bool> {
    match ks.typed(key, Kind::Set)? {
        Some(m) => Ok(ks.get_sub(key, m.version, member)?.is_some()),
        None => Ok(false),
    }
}

/// SCARD: the number of members.
pub fn card(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    Ok(ks.typed(key, Kind::Set)?.map_or(0, |m| m.size))
}

/// SPOP: removes and returns up to `count` members (`None`: the key is absent). It takes the
/// first members in byte order (as Kvrocks): cheap, not random. It starts where the previous
/// pop of this key generation stopped (`pop_hints`), not over the tombstones of the members
/// popped before. An emptied set is deleted.
pub fn pop(ks: &Keyspace, key: &[u8], count: usize) -> Result<Option<Vec<Vec<u8>>>> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let Some(mut m) = ks.typed(key, Kind::Set)? else {
        return Ok(None);
    };
    let mut v = Vec::new();
    let prefix = subkey::prefix(st.filing, key, m.version);
    if count > 0 {
        let from = st.pop_hints.low(Family::SetMembers, &prefix);
        ks.scan(&st.sub_cf, key, m.version, &from, false, |f, _| {
            v.push(f.to_vec());
            v.len() < count
        })?;
    }
    let mut b = WriteBatch::new();
    for mem in &v {
        b.delete_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, mem));
    }
    m.size -= v.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write_applied(b)?;
    if let (Some(last), true) = (v.last(), m.size > 0) {
        st.pop_hints.popped_low(Family::SetMembers, &prefix, last);
    }
    if !v.is_empty() {
        ks.notify_removal(SET, "spop", key, m.size == 0);
    }
    Ok(Some(v))
}

/// SMISMEMBER: whether each of `members` is in the set.
pub fn are_members(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<Vec<bool>> {
    let Some(m) = ks.typed(key, Kind::Set)? else {
        return Ok(vec![false; members.len()]);
    };
    members.iter().map(|mem| Ok(ks.get_sub(key, m.version, mem)?.is_some())).collect()
}

/// SMOVE: moves `member` from `src` to `dst`; whether it was in `src`. An absent `src` moves
/// nothing (before any type check, as Redis); either key holding another type is an error;
/// `src` = `dst` moves nothing. An emptied `src` is deleted; `dst` is made if absent.
pub fn move_member(ks: &Keyspace, src: &[u8], dst: &[u8], member: &[u8]) -> Result<bool> {
    let st = ks.store;
    let _g = st.locks.lock(&[src, dst]);
    let Some(mut from) = ks.meta(src)? else { return Ok(false) };
    if from.kind != Kind::Set {
        return Err(TypeError::WrongType);
    }
    let to = ks.typed(dst, Kind::Set)?;
    if ks.get_sub(src, from.version, member)?.is_none() {
        return Ok(false);
    }
    if src == dst {
        return Ok(true);
    }
    let mut b = WriteBatch::new();
    b.delete_cf(&*st.sub_cf, subkey::encode(st.filing, src, from.version, member));
    from.size -= 1;
    ks.put_or_delete_meta(&mut b, src, &from);
    let created = to.is_none();
    let mut to = to.unwrap_or_else(|| Meta::composite(Kind::Set, st.new_version()));
    let added = ks.get_sub(dst, to.version, member)?.is_none();
    if added {
        b.put_cf(&*st.sub_cf, subkey::encode(st.filing, dst, to.version, member), b"");
        st.pop_hints.inserted(
            Family::SetMembers,
            &subkey::prefix(st.filing, dst, to.version),
            member,
        );
        to.size += 1;
        ks.put_meta(&mut b, dst, &to);
    }
    ks.write(b)?;
    ks.notify_removal(SET, "srem", src, from.size == 0);
    ks.notify_new(created, dst);
    if added {
        ks.notify(SET, "sadd", dst);
    }
    Ok(true)
}

/// How SINTER, SUNION and SDIFF combine their sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algebra {
    /// Members of every set.
    Inter,
    /// Members of any set.
    Union,
    /// Members of the first set and of no other.
    Diff,
}

/// The members of each of `keys` (`None`: absent), in byte order. Every key is checked to be
/// a set before any member is read: one of another type fails the command even when another
/// key is absent, as in Redis.
fn load_all(ks: &Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<Vec<u8>>>>> {
    let metas = keys.iter().map(|k| ks.typed(k, Kind::Set)).collect::<Result<Vec<_>>>()?;
    keys.iter()
        .zip(metas)
        .map(|(k, m)| {
            let Some(m) = m else { return Ok(None) };
            let mut v = Vec::with_capacity(m.size as usize);
            ks.scan(&ks.store.sub_cf, k, m.version, b"", false, |f, _| {
                v.push(f.to_vec());
                true
            })?;
            Ok(Some(v))
        })
        .collect()
}

/// `op` over `sets` (each in byte order; `None`: an absent key, an empty set), in byte order.
fn combine_sets(op: Algebra, sets: Vec<Option<Vec<Vec<u8>>>>) -> Vec<Vec<u8>> {
    match op {
        Algebra::Inter => {
            if sets.iter().any(Option::is_none) {
                return Vec::new();
            }
            let mut sets: Vec<Vec<Vec<u8>>> = sets.into_iter().flatten().collect();
            // From the smallest: the result is at most its size.
            sets.sort_by_key(Vec::len);
            let mut it = sets.into_iter();
            let mut acc = it.next().unwrap_or_default();
            for s in it {
                let s: HashSet<Vec<u8>> = s.into_iter().collect();
                acc.retain(|m| s.contains(m));
            }
            acc
        }
        Algebra::Union => {
            let all: BTreeSet<Vec<u8>> = sets.into_iter().flatten().flatten().collect();
            all.into_iter().collect()
        }
        Algebra::Diff => {
            let mut it = sets.into_iter();
            let Some(Some(mut acc)) = it.next() else { return Vec::new() };
            for s in it.flatten() {
                let s: HashSet<Vec<u8>> = s.into_iter().collect();
                acc.retain(|m| !s.contains(m));
            }
            acc
        }
    }
}

/// SINTER, SUNION, SDIFF: the members of `op` over the sets at `keys`, in byte order.
pub fn combine(ks: &Keyspace, op: Algebra, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    Ok(combine_sets(op, load_all(ks, keys)?))
}

/// SINTERCARD: the size of the intersection of the sets at `keys`, at most `limit` (0: no
/// limit).
pub fn inter_card(ks: &Keyspace, keys: &[Vec<u8>], limit: u64) -> Result<u64> {
    let n = combine(ks, Algebra::Inter, keys)?.len() as u64;
    Ok(if limit > 0 { n.min(limit) } else { n })
}

/// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: stores `op` over the sets at `keys` at `dst` (a new
/// set replacing whatever `dst` held, with no expiry; an empty result deletes `dst`); the
/// result's size. `dst` may be one of `keys`. Raises `sinterstore`, `sunionstore` or
/// `sdiffstore` (or `del` for an empty result that deleted `dst`).
pub fn combine_store(ks: &Keyspace, op: Algebra, dst: &[u8], keys: &[Vec<u8>]) -> Result<u64> {
    let st = ks.store;
    let mut locked: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    locked.push(dst);
    let _g = st.locks.lock(&locked);
    let members = combine(ks, op, keys)?;
    let mut b = WriteBatch::new();
    // Whether `dst` holds a key now (read only when an event could need it).
    let had = if members.is_empty() || ks.notifier.wants(super::notify::NEW) {
        ks.meta(dst)?.is_some()
    } else {
        true
    };
    if members.is_empty() {
        if had {
            ks.delete_meta(&mut b, dst);
        }
    } else {
        // A new generation: the sub-keys of what `dst` held before are left to the
        // compaction filter.
        let mut m = Meta::composite(Kind::Set, st.new_version());
        for mem in &members {
            b.put_cf(&*st.sub_cf, subkey::encode(st.filing, dst, m.version, mem), b"");
        }
        m.size = members.len() as u64;
        ks.put_meta(&mut b, dst, &m);
    }
    ks.write(b)?;
    if !members.is_empty() {
        ks.notify_new(!had, dst);
        let event = match op {
            Algebra::Inter => "sinterstore",
            Algebra::Union => "sunionstore",
            Algebra::Diff => "sdiffstore",
        };
        ks.notify(SET, event, dst);
    } else if had {
        ks.notify(GENERIC, "del", dst);
    }
    Ok(members.len() as u64)
}

/// Whether Redis 7.0 would keep the set `m` as an intset: at most `max_entries` members, each
/// a 64-bit integer in canonical form (the rule `OBJECT ENCODING` reports; reads at most
/// `max_entries` members).
pub fn intset_shaped(ks: &Keyspace, key: &[u8], m: &Meta, max_entries: u64) -> Result<bool> {
    if m.size > max_entries {
        return Ok(false);
    }
    let mut all = true;
    ks.scan(&ks.store.sub_cf, key, m.version, b"", false, |f, _| {
        all = crate::types::number::parse_int_strict(f).is_some();
        all
    })?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::pending::{deferring, Settlement};
    use crate::storage::{Replicate, SyncPolicy};
    use crate::types::compact_hash::Limits;
    use std::sync::Arc;

    /// Fails every proposal a moment later, as a node that lost its leadership does.
    struct Deposed;

    impl Replicate for Deposed {
        fn propose(&self, _: u16, _slot: u16, _batch: WriteBatch, done: Arc<Settlement>) {
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(10));
                done.settle(Err("MOVED 1 127.0.0.1:7002".into()));
            });
        }
    }

    /// Regression: a pop moved its hint once its write was proposed, so a pop whose write
    /// then failed left a hint past members still there, and later pops skipped them.
    #[test]
    fn a_pop_whose_replicated_write_fails_leaves_the_hint_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // A cluster node's store, as partition 0's command sees it.
        let dbs =
            crate::types::open_partitioned(strata::Options::default(), dir.path(), SyncPolicy::No)
                .unwrap();
        let store = dbs.partition(0).clone();
        let limits = Limits::default();
        let ks = Keyspace::new(&store, &limits, 0);
        add(&ks, b"s", &[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]).unwrap();
        let version = ks.typed(b"s", Kind::Set).unwrap().unwrap().version;
        assert!(store.set_replicate(Arc::new(Deposed)));
        let (popped, owed) = deferring(|| pop(&ks, b"s", 1));
        assert!(popped.is_err(), "the pop fails with its write");
        assert!(matches!(owed, Some(Err(r)) if r.starts_with("MOVED")));
        let prefix = subkey::prefix(store.filing, b"s", version);
        assert!(store.pop_hints.low(Family::SetMembers, &prefix).is_empty());
        assert_eq!(members(&ks, b"s").unwrap().len(), 3);
    }
}
