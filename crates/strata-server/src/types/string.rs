//! Strings. A string's value lives inline in its metadata record; it has no sub-keys.

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Meta, Payload};
use super::notify::{EXPIRED, GENERIC, NEW, STRING};
use super::number::parse_int_strict;
use crate::storage::locks::Guards;
use strata::WriteBatch;

/// Writes `value` as the string at `key`, expiring at `expire_ms` (0: never), in place of
/// whatever the key held. The caller holds the key's lock (also used by [`super::bitmap`]).
pub(crate) fn put(ks: &Keyspace, key: &[u8], value: Vec<u8>, expire_ms: u64) -> Result<()> {
    let mut b = WriteBatch::new();
    ks.store.put_meta(&mut b, key, Meta::encode_string(&value, expire_ms));
    ks.write(b)
}

/// The value of the string at `key` (`None`: absent).
pub fn get(ks: &Keyspace, key: &[u8]) -> Result<Option<Payload>> {
    Ok(ks.typed(key, Kind::String)?.map(|m| m.value))
}

/// The value at `key` if it is a string; `None` when absent or of another type (MGET).
pub fn get_if_string(ks: &Keyspace, key: &[u8]) -> Result<Option<Payload>> {
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
    /// The string the key held before, read with `need_string` or a condition (`None`:
    /// absent, of another type, or not read).
    pub old: Option<Vec<u8>>,
}

/// SET: writes `value` at `key` with `expiry` if `condition` holds for the key. With
/// `need_string` (GET) a key of another type is [`TypeError::WrongType`]. Raises `new`,
/// `set` and, with a time, `expire`.
pub fn set(
    ks: &Keyspace,
    key: &[u8],
    value: Vec<u8>,
    condition: Condition,
    expiry: Expiry,
    need_string: bool,
) -> Result<SetOutcome> {
    // A plain SET needs nothing of the old key (the sub-keys of a container it replaces are
    // left to the compaction filter either way) unless an event does (`new` for a key it
    // creates, `expired` for one met past its time): it writes without reading, so it need
    // not wait for the key's writes in flight either (`storage::locks`, blind writes).
    let blind = condition == Condition::Always
        && expiry != Expiry::Keep
        && !need_string
        && !ks.notifier.wants(NEW | EXPIRED);
    let _g = lock_for(ks, &[key], blind);
    let old = if blind { None } else { ks.meta(key)? };
    if need_string && old.as_ref().is_some_and(|m| m.kind != Kind::String) {
        return Err(TypeError::WrongType);
    }
    let exists = old.is_some();
    let old_expire = old.as_ref().map(|m| m.expire_ms);
    let old = old.filter(|m| m.kind == Kind::String).map(|m| m.value.into_vec());
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
    ks.notify_new(!exists && !blind, key);
    ks.notify(STRING, "set", key);
    if let Expiry::At(_) = expiry {
        ks.notify(GENERIC, "expire", key);
    }
    Ok(SetOutcome { written: true, old })
}

/// Locks `keys` for a write, without waiting for the marks of writes in flight when the
/// write is `blind` (reads nothing of them: `storage::locks`, blind writes).
fn lock_for<'a>(ks: &'a Keyspace, keys: &[&[u8]], blind: bool) -> Guards<'a> {
    if blind {
        ks.store.locks.lock_blind(keys)
    } else {
        ks.store.locks.lock(keys)
    }
}

/// SETEX: writes `value` at `key`, expiring at `expire_ms`, whatever the key held.
pub fn set_expiring(ks: &Keyspace, key: &[u8], value: Vec<u8>, expire_ms: u64) -> Result<()> {
    // It reads the key only to raise `new` (`would_create`): otherwise a blind write.
    let _g = lock_for(ks, &[key], !ks.notifier.wants(NEW));
    let created = ks.would_create(key)?;
    put(ks, key, value, expire_ms)?;
    ks.notify_new(created, key);
    ks.notify(STRING, "set", key);
    ks.notify(GENERIC, "expire", key);
    Ok(())
}

/// GETDEL: deletes the string at `key`, returning its value.
pub fn get_del(ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    if old.is_some() {
        let mut b = WriteBatch::new();
        ks.delete_meta(&mut b, key);
        ks.write(b)?;
        ks.notify(GENERIC, "del", key);
    }
    Ok(old.map(|m| m.value.into_vec()))
}

/// MSET: writes every (key, value) of `pairs` in one batch, without expiry; with
/// `if_none_exist` (MSETNX) only if no key of them exists. Whether it wrote.
pub fn set_many(ks: &Keyspace, pairs: &[(&[u8], &[u8])], if_none_exist: bool) -> Result<bool> {
    let keys: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
    // MSET reads its keys only to raise `new`: otherwise a blind write.
    let _g = lock_for(ks, &keys, !if_none_exist && !ks.notifier.wants(NEW));
    if if_none_exist {
        for k in &keys {
            if ks.meta(k)?.is_some() {
                return Ok(false);
            }
        }
    }
    // The keys this creates, when `new` is wanted (a key named twice is created once).
    let mut created: Vec<&[u8]> = Vec::new();
    if ks.notifier.wants(NEW) {
        for k in &keys {
            if !created.contains(k) && ks.meta(k)?.is_none() {
                created.push(k);
            }
        }
    }
    let mut b = WriteBatch::new();
    for (k, v) in pairs {
        ks.store.put_meta(&mut b, k, Meta::encode_string(v, 0));
    }
    ks.write(b)?;
    for k in keys {
        if let Some(i) = created.iter().position(|c| *c == k) {
            created.swap_remove(i);
            ks.notify_new(true, k);
        }
        ks.notify(STRING, "set", k);
    }
    Ok(true)
}

/// DEBUG POPULATE: string keys `prefix:0` to `prefix:count-1` (Redis's form: the name cut
/// to 127 bytes), each holding `value:j`, or with `size` that text in `size` zero bytes (cut
/// to them), where no key is; the keys there stay. Written a thousand keys to a batch,
/// without keyspace events (as Redis), though tracking clients are told. How many it made.
pub fn populate(ks: &Keyspace, count: u64, prefix: &[u8], size: Option<usize>) -> Result<u64> {
    const BATCH: u64 = 1000;
    let mut made = 0;
    let mut from = 0;
    while from < count {
        let names: Vec<Vec<u8>> = (from..count.min(from + BATCH))
            .map(|j| {
                let mut k = prefix.to_vec();
                k.extend_from_slice(format!(":{j}").as_bytes());
                k.truncate(127);
                k
            })
            .collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let _g = ks.store.locks.lock(&keys);
        let mut b = WriteBatch::new();
        let mut written = Vec::new();
        // Names cut to 127 bytes may repeat within a batch.
        let mut seen = std::collections::HashSet::new();
        for (j, k) in (from..).zip(&keys) {
            if !seen.insert(*k) || ks.meta(k)?.is_some() {
                continue;
            }
            let text = format!("value:{j}").into_bytes();
            let value = match size {
                None => text,
                Some(n) => {
                    let mut v = vec![0; n];
                    let m = n.min(text.len());
                    v[..m].copy_from_slice(&text[..m]);
                    v
                }
            };
            ks.store.put_meta(&mut b, k, Meta::encode_string(&value, 0));
            written.push(*k);
        }
        ks.write(b)?;
        for k in &written {
            // No channel's event: the change is there for the tracking clients alone.
            ks.notify(0, "populate", k);
        }
        made += written.len() as u64;
        from += BATCH;
    }
    Ok(made)
}

/// INCRBY: adds `by` to the integer at `key` (absent: 0), keeping its expiry; the new value.
pub fn incr_by(ks: &Keyspace, key: &[u8], by: i64) -> Result<i64> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    let created = old.is_none();
    let (cur, expire_ms) = match old {
        Some(m) => (parse_int_strict(&m.value).ok_or(TypeError::NotAnInteger)?, m.expire_ms),
        None => (0, 0),
    };
    let new = cur.checked_add(by).ok_or(TypeError::Overflow)?;
    put(ks, key, new.to_string().into_bytes(), expire_ms)?;
    ks.notify_new(created, key);
    ks.notify(STRING, "incrby", key);
    Ok(new)
}

/// APPEND: appends `tail` to the string at `key` (absent: empty), keeping its expiry; the
/// new length. Appending to an existing string past `max_len` is
/// [`TypeError::StringTooLong`] (Redis does not check a new key's length).
pub fn append(ks: &Keyspace, key: &[u8], tail: &[u8], max_len: u64) -> Result<usize> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    if old.as_ref().is_some_and(|m| (m.value.len() + tail.len()) as u64 > max_len) {
        return Err(TypeError::StringTooLong);
    }
    let created = old.is_none();
    let (mut v, expire_ms) = old.map_or((Vec::new(), 0), |m| (m.value.into_vec(), m.expire_ms));
    v.extend_from_slice(tail);
    let len = v.len();
    put(ks, key, v, expire_ms)?;
    ks.notify_new(created, key);
    ks.notify(STRING, "append", key);
    Ok(len)
}

/// What GETEX does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryChange {
    /// Nothing (plain GETEX).
    Keep,
    /// Removes it (PERSIST).
    Persist,
    /// Sets it to this Unix time in ms (EX, PX, EXAT, PXAT); a time not after the
    /// keyspace's deletes the key.
    At(u64),
}

/// GETEX: the string at `key` (`None`: absent), changing its expiry by `change`.
pub fn get_ex(ks: &Keyspace, key: &[u8], change: ExpiryChange) -> Result<Option<Vec<u8>>> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(m) = ks.typed(key, Kind::String)? else {
        return Ok(None);
    };
    match change {
        ExpiryChange::Keep => {}
        ExpiryChange::Persist => {
            if m.expire_ms != 0 {
                put(ks, key, m.value.to_vec(), 0)?;
                ks.notify(GENERIC, "persist", key);
            }
        }
        ExpiryChange::At(at) if super::keyspace::past(at, ks.now_ms) => {
            let mut b = WriteBatch::new();
            ks.delete_meta(&mut b, key);
            ks.write(b)?;
            ks.notify(GENERIC, "del", key);
        }
        ExpiryChange::At(at) => {
            put(ks, key, m.value.to_vec(), at)?;
            ks.notify(GENERIC, "expire", key);
        }
    }
    Ok(Some(m.value.into_vec()))
}

/// GETRANGE: the bytes of the string at `key` from `start` to `end` (inclusive; negative:
/// from the end), as Redis clamps them; empty for an absent key.
pub fn get_range(ks: &Keyspace, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
    let Some(m) = ks.typed(key, Kind::String)? else {
        return Ok(Vec::new());
    };
    let v = &m.value;
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Vec::new());
    }
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { (len + end).max(0) } else { end };
    let end = end.min(len - 1);
    if start > end || len == 0 {
        return Ok(Vec::new());
    }
    Ok(v[start as usize..=end as usize].to_vec())
}

/// SETRANGE: overwrites the string at `key` from `offset` with `value`, padding with zero
/// bytes (absent: an empty string), keeping its expiry; the new length. A string longer than
/// `max_len` is [`TypeError::StringTooLong`]. An empty `value` writes nothing.
pub fn set_range(
    ks: &Keyspace,
    key: &[u8],
    offset: u64,
    value: &[u8],
    max_len: u64,
) -> Result<usize> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    if value.is_empty() {
        return Ok(old.map_or(0, |m| m.value.len()));
    }
    let end = offset.checked_add(value.len() as u64).ok_or(TypeError::StringTooLong)?;
    if end > max_len {
        return Err(TypeError::StringTooLong);
    }
    let created = old.is_none();
    let (mut v, expire_ms) = old.map_or((Vec::new(), 0), |m| (m.value.into_vec(), m.expire_ms));
    let end = end as usize;
    if v.len() < end {
        v.resize(end, 0);
    }
    v[offset as usize..end].copy_from_slice(value);
    let len = v.len();
    put(ks, key, v, expire_ms)?;
    ks.notify_new(created, key);
    ks.notify(STRING, "setrange", key);
    Ok(len)
}

/// GETBIT: the bit at `offset` of the string at `key` (bit 0 is the most significant bit of
/// the first byte); 0 past the end or without the key.
pub fn get_bit(ks: &Keyspace, key: &[u8], offset: u64) -> Result<bool> {
    let Some(m) = ks.typed(key, Kind::String)? else { return Ok(false) };
    let byte = usize::try_from(offset / 8).ok().and_then(|i| m.value.get(i).copied()).unwrap_or(0);
    Ok(byte & (0x80 >> (offset % 8)) != 0)
}

/// SETBIT: sets the bit at `offset` to `on`, growing the string with zero bytes (absent key:
/// a new one) to at most `max_len` bytes, keeping its expiry; the bit's old value.
pub fn set_bit(ks: &Keyspace, key: &[u8], offset: u64, on: bool, max_len: u64) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    let byte = offset / 8;
    if byte >= max_len {
        return Err(TypeError::StringTooLong);
    }
    let created = old.is_none();
    let (mut v, expire_ms) = old.map_or((Vec::new(), 0), |m| (m.value.into_vec(), m.expire_ms));
    let i = byte as usize;
    let grown = v.len() <= i;
    if grown {
        v.resize(i + 1, 0);
    }
    let mask = 0x80u8 >> (offset % 8);
    let was = v[i] & mask != 0;
    if on {
        v[i] |= mask;
    } else {
        v[i] &= !mask;
    }
    put(ks, key, v, expire_ms)?;
    ks.notify_new(created, key);
    // As Redis: only when the string was created or grown, or the bit changed.
    if created || grown || was != on {
        ks.notify(STRING, "setbit", key);
    }
    Ok(was)
}

/// INCRBYFLOAT: adds `incr` (text) to the number at `key` (absent: 0) in x87 long double
/// arithmetic as redis-server does ([`super::long_double`]), keeping the key's expiry; the
/// new value as stored (Redis's human form).
pub fn incr_by_float(ks: &Keyspace, key: &[u8], incr: &[u8]) -> Result<Vec<u8>> {
    use super::long_double::{add, format_human, parse, LongDouble};
    let _g = ks.store.locks.lock(&[key]);
    let old = ks.typed(key, Kind::String)?;
    let cur = match &old {
        Some(m) => parse(&m.value).ok_or(TypeError::NotAFloat)?,
        None => LongDouble::Finite { neg: false, mant: 0, exp: 0 },
    };
    let by = parse(incr).ok_or(TypeError::NotAFloat)?;
    let new = format_human(add(cur, by).ok_or(TypeError::NanOrInfinity)?).into_bytes();
    let created = old.is_none();
    put(ks, key, new.clone(), old.map_or(0, |m| m.expire_ms))?;
    ks.notify_new(created, key);
    ks.notify(STRING, "incrbyfloat", key);
    Ok(new)
}

/// The two strings LCS compares (absent: empty); [`TypeError::LcsNotStrings`] when either
/// key holds another type.
pub fn lcs_inputs(ks: &Keyspace, a: &[u8], b: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let (ma, mb) = (ks.meta(a)?, ks.meta(b)?);
    if ma.as_ref().is_some_and(|m| m.kind != Kind::String)
        || mb.as_ref().is_some_and(|m| m.kind != Kind::String)
    {
        return Err(TypeError::LcsNotStrings);
    }
    Ok((
        ma.map(|m| m.value.into_vec()).unwrap_or_default(),
        mb.map(|m| m.value.into_vec()).unwrap_or_default(),
    ))
}

/// One run of consecutive common bytes LCS found: `a[a.0..=a.1]` equals `b[b.0..=b.1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LcsMatch {
    /// The range in the first string (inclusive).
    pub a: (u32, u32),
    /// The range in the second string (inclusive).
    pub b: (u32, u32),
}

impl LcsMatch {
    /// The run's length (at least 1).
    pub fn run_len(&self) -> u32 {
        self.a.1 - self.a.0 + 1
    }
}

/// The longest common subsequence of `a` and `b` and its runs, as redis-server reports them.
pub struct Lcs {
    /// The subsequence.
    pub seq: Vec<u8>,
    /// The runs from the end of the strings back to their start, in the order Redis's
    /// backtrack meets them.
    pub matches: Vec<LcsMatch>,
}

/// Computes [`Lcs`] with the dynamic programming table Redis uses, walking it back the way
/// Redis does (on a tie the second string's index steps back first), so that the runs are
/// the ones Redis reports. The caller bounds the table's size first.
pub fn lcs(a: &[u8], b: &[u8]) -> Lcs {
    let (alen, blen) = (a.len(), b.len());
    let w = blen + 1;
    let mut t = vec![0u32; (alen + 1) * w];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen] as usize;
    let mut seq = vec![0u8; total];
    let mut matches = Vec::new();
    let (mut i, mut j, mut k) = (alen, blen, total);
    // The run being extended backwards: (a start, a end, b start, b end).
    let mut run: Option<(usize, usize, usize, usize)> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            seq[k - 1] = a[i - 1];
            match run {
                None => run = Some((i - 1, i - 1, j - 1, j - 1)),
                Some((as_, ae, bs, be)) if as_ == i && bs == j => {
                    run = Some((as_ - 1, ae, bs - 1, be));
                }
                Some(_) => emit = true,
            }
            if run.is_some_and(|r| r.0 == 0 || r.2 == 0) {
                emit = true;
            }
            k -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = run.is_some();
        }
        if emit {
            if let Some((as_, ae, bs, be)) = run.take() {
                matches.push(LcsMatch { a: (as_ as u32, ae as u32), b: (bs as u32, be as u32) });
            }
        }
    }
    Lcs { seq, matches }
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
        // KEEPTTL keeps the expiry (a read at 2,000 finds the key expired, and deletes it);
        // an absent key's condition.
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
