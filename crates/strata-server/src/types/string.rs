//! Strings. A string's value lives inline in its metadata record; it has no sub-keys.

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Meta};
use super::number::parse_int_strict;
use strata::WriteBatch;

/// Writes `value` as the string at `key`, expiring at `expire_ms` (0: never), in place of
/// whatever the key held. The caller holds the key's lock.
fn put(ks: &Keyspace, key: &[u8], value: Vec<u8>, expire_ms: u64) -> Result<()> {
    let mut b = WriteBatch::new();
    ks.put_meta(&mut b, key, &Meta::string(value, expire_ms));
    ks.write(b)
}

/// The value of the string at `key` (`None`: absent).
pub fn get(ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
    Ok(ks.typed(key, Kind::String)?.map(|m| m.value))
}

/// The value at `key` if it is a string; `None` when absent or of another type (MGET).
pub fn get_if_string(ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
    Ok(ks.meta(key)?.filter(|m| m.kind == Kind::String).map(|m| m.value))
}

/// The length of the string at `key` (0: absent).
pub fn len(ks: &Keyspace, key: &[u8]) -> Result<usize> {
    Ok(ks.typed(key, Kind::String)?.map_or(0, |m| m.value.len()))
}

/// When [`set`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Whether or not the key exists.
    Always,
    /// Only if the key does not exist (NX).
    IfAbsent,
    /// Only if the key exists (XX).
    IfPresent,
}

/// The expiry [`set`] gives the string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// None.
    Never,
    /// At this Unix time in milliseconds.
    At(u64),
    /// The key's current expiry (KEEPTTL; none if the key is absent).
    Keep,
}

/// What [`set`] did.
pub struct SetOutcome {
    /// Whether it wrote (the condition held).
    pub written: bool,
    /// The string the key held before (`None`: absent or of another type).
    pub old: Option<Vec<u8>>,
}

/// SET: writes `value` at `key` with `expiry` if `condition` holds for the key. With
/// `need_string` (GET) a key of another type is [`TypeError::WrongType`].
pub fn set(
    ks: &Keyspace,
    key: &[u8],
    value: Vec<u8>,
    condition: Condition,
    expiry: Expiry,
    need_string: bool,
) -> Result<SetOutcome> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.meta(key)?;
    if need_string && old.as_ref().is_some_and(|m| m.kind != Kind::String) {
        return Err(TypeError::WrongType);
    }
    let exists = old.is_some();
    let old_expire = old.as_ref().map(|m| m.expire_ms);
    let old = old.filter(|m| m.kind == Kind::String).map(|m| m.value);
    let go = match condition {
        Condition::Always => true,
        Condition::IfAbsent => !exists,
        Condition::IfPresent => exists,
    };
    if !go {
        return Ok(SetOutcome { written: false, old });
    }
    let expire_ms = match (expiry, old_expire) {
        (Expiry::At(at), _) => at,
        (Expiry::Keep, Some(at)) => at,
        _ => 0,
    };
    put(ks, key, value, expire_ms)?;
    Ok(SetOutcome { written: true, old })
}

/// SETEX: writes `value` at `key`, expiring at `expire_ms`, whatever the key held.
pub fn set_expiring(ks: &Keyspace, key: &[u8], value: Vec<u8>, expire_ms: u64) -> Result<()> {
    let _g = ks.store.locks.lock(&[key]);
    put(ks, key, value, expire_ms)
}

/// GETDEL: deletes the string at `key`, returning its value.
pub fn get_del(ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    if old.is_some() {
        let mut b = WriteBatch::new();
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
    }
    Ok(old.map(|m| m.value))
}

/// MSET: writes every (key, value) of `pairs` in one batch, without expiry; with
/// `if_none_exist` (MSETNX) only if no key of them exists. Whether it wrote.
pub fn set_many(ks: &Keyspace, pairs: &[(&[u8], &[u8])], if_none_exist: bool) -> Result<bool> {
    let keys: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
    let _g = ks.store.locks.lock(&keys);
    if if_none_exist {
        for k in &keys {
            if ks.meta(k)?.is_some() {
                return Ok(false);
            }
        }
    }
    let mut b = WriteBatch::new();
    for (k, v) in pairs {
        ks.put_meta(&mut b, k, &Meta::string(v.to_vec(), 0));
    }
    ks.write(b)?;
    Ok(true)
}

/// INCRBY: adds `by` to the integer at `key` (absent: 0), keeping its expiry; the new value.
pub fn incr_by(ks: &Keyspace, key: &[u8], by: i64) -> Result<i64> {
    let _g = ks.store.locks.lock(&[key]);
    let (cur, expire_ms) = match ks.typed(key, Kind::String)? {
        Some(m) => (parse_int_strict(&m.value).ok_or(TypeError::NotAnInteger)?, m.expire_ms),
        None => (0, 0),
    };
    let new = cur.checked_add(by).ok_or(TypeError::Overflow)?;
    put(ks, key, new.to_string().into_bytes(), expire_ms)?;
    Ok(new)
}

/// APPEND: appends `tail` to the string at `key` (absent: empty), keeping its expiry; the
/// new length.
pub fn append(ks: &Keyspace, key: &[u8], tail: &[u8]) -> Result<usize> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    let (mut v, expire_ms) = old.map_or((Vec::new(), 0), |m| (m.value, m.expire_ms));
    v.extend_from_slice(tail);
    let len = v.len();
    put(ks, key, v, expire_ms)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SyncPolicy;
    use crate::types::compact_hash::Limits;

    #[test]
    fn failures_are_type_errors_and_expiry_is_judged_at_the_keyspace_time() {
        let dir = tempfile::tempdir().unwrap();
        let opts = strata::Options::default();
        let store = crate::types::open(opts, dir.path(), SyncPolicy::No).unwrap();
        let limits = Limits::default();
        let at = |now_ms| Keyspace::new(&store, &limits, now_ms);
        let ks = at(1_000);
        set(&ks, b"s", b"abc".to_vec(), Condition::Always, Expiry::At(2_000), false).unwrap();
        assert!(matches!(incr_by(&ks, b"s", 1), Err(TypeError::NotAnInteger)));
        assert_eq!(get(&at(1_999), b"s").unwrap().as_deref(), Some(&b"abc"[..]));
        assert_eq!(get(&at(2_000), b"s").unwrap(), None);
        // KEEPTTL keeps the expiry; an absent key's condition.
        let kept = set(&ks, b"s", b"x".to_vec(), Condition::IfPresent, Expiry::Keep, true);
        assert_eq!(kept.unwrap().old.as_deref(), Some(&b"abc"[..]));
        assert_eq!(get(&at(2_000), b"s").unwrap(), None);
        let absent = set(&ks, b"t", b"x".to_vec(), Condition::IfPresent, Expiry::Never, false);
        assert!(!absent.unwrap().written);
        set_expiring(&ks, b"n", i64::MAX.to_string().into_bytes(), 0).unwrap();
        assert!(matches!(incr_by(&ks, b"n", 1), Err(TypeError::Overflow)));
        crate::types::hash::set_fields(&ks, b"h", &[(b"f", b"v")]).unwrap();
        assert!(matches!(get(&ks, b"h"), Err(TypeError::WrongType)));
        assert_eq!(get_if_string(&ks, b"h").unwrap(), None);
        store.close().unwrap();
    }
}
