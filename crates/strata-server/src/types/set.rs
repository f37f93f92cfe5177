//! Sets: one sub-key per member, empty value.

use super::error::Result;
use super::keyspace::Keyspace;
use super::metadata::Kind;
use super::subkey;
use crate::storage::pop_hints::Family;
use std::collections::HashSet;
use strata::WriteBatch;

/// SADD: adds `members` (repeats count once); the number added.
pub fn add(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<u64> {
    let st = ks.store;
    let _g = st.locks.lock(&[key]);
    let mut m = ks.typed_or_new(key, Kind::Set)?;
    let mut b = WriteBatch::new();
    let mut added = HashSet::new();
    let prefix = subkey::prefix(key, m.version);
    for mem in members {
        if !added.contains(mem) && ks.get_sub(key, m.version, mem)?.is_none() {
            added.insert(mem);
            b.put_cf(&*st.sub_cf, subkey::encode(key, m.version, mem), b"");
            st.pop_hints.inserted(Family::SetMembers, &prefix, mem);
        }
    }
    m.size += added.len() as u64;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
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
    let mut gone = HashSet::new();
    for mem in members {
        if !gone.contains(mem) && ks.get_sub(key, m.version, mem)?.is_some() {
            gone.insert(mem);
            b.delete_cf(&*st.sub_cf, subkey::encode(key, m.version, mem));
        }
    }
    m.size -= gone.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write(b)?;
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
    let prefix = subkey::prefix(key, m.version);
    if count > 0 {
        let from = st.pop_hints.low(Family::SetMembers, &prefix);
        ks.scan(&st.sub_cf, key, m.version, &from, false, |f, _| {
            v.push(f.to_vec());
            v.len() < count
        })?;
    }
    let mut b = WriteBatch::new();
    for mem in &v {
        b.delete_cf(&*st.sub_cf, subkey::encode(key, m.version, mem));
    }
    m.size -= v.len() as u64;
    ks.put_or_delete_meta(&mut b, key, &m);
    ks.write_applied(b)?;
    if let (Some(last), true) = (v.last(), m.size > 0) {
        st.pop_hints.popped_low(Family::SetMembers, &prefix, last);
    }
    Ok(Some(v))
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
        fn propose(&self, _slot: u16, _batch: WriteBatch, done: Arc<Settlement>) {
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
        let store =
            crate::types::open(strata::Options::default(), dir.path(), SyncPolicy::No).unwrap();
        let limits = Limits::default();
        let ks = Keyspace::new(&store, &limits, 0);
        add(&ks, b"s", &[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]).unwrap();
        let version = ks.typed(b"s", Kind::Set).unwrap().unwrap().version;
        assert!(store.set_replicate(Arc::new(Deposed)));
        let (popped, owed) = deferring(|| pop(&ks, b"s", 1));
        assert!(popped.is_err(), "the pop fails with its write");
        assert!(matches!(owed, Some(Err(r)) if r.starts_with("MOVED")));
        let prefix = subkey::prefix(b"s", version);
        assert!(store.pop_hints.low(Family::SetMembers, &prefix).is_empty());
        assert_eq!(members(&ks, b"s").unwrap().len(), 3);
    }
}
