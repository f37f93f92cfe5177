//! A stream's entries: adding (XADD, with its trimming), reading ranges, deleting (XDEL),
//! trimming (XTRIM) and setting the last id (XSETID). Each write is one batch under the
//! key's lock: the entry sub-keys, the node records (`super::node`) and the metadata record.

use super::id::StreamId;
use super::node::{Node, LISTPACK_MAX};
use super::{entry_field, load, node_field, records, save, Records, Stream, StreamError};
use super::{TAG_ENTRY, TAG_NODE};
use crate::types::error::{Result, TypeError};
use crate::types::keyspace::Keyspace;
use crate::types::notify::STREAM;
use std::collections::{HashMap, HashSet};
use strata::WriteBatch;

/// An entry: its id and its field-value pairs, flat (field, value, field, value...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The id.
    pub id: StreamId,
    /// Fields and values, alternating.
    pub pairs: Vec<Vec<u8>>,
}

/// The value of an entry sub-key.
pub fn encode_pairs(pairs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + pairs.iter().map(|p| 4 + p.len()).sum::<usize>());
    out.extend_from_slice(&((pairs.len() / 2) as u32).to_le_bytes());
    for p in pairs {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Reads [`encode_pairs`]'s form; `None` when it does not decode.
pub fn decode_pairs(v: &[u8]) -> Option<Vec<Vec<u8>>> {
    let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
    let mut at = 4;
    let mut out = Vec::with_capacity(n.saturating_mul(2).min(4096));
    for _ in 0..n.checked_mul(2)? {
        let len = u32::from_le_bytes(v.get(at..at + 4)?.try_into().ok()?) as usize;
        at += 4;
        out.push(v.get(at..at.checked_add(len)?)?.to_vec());
        at += len;
    }
    (at == v.len()).then_some(out)
}

fn corrupt_entry() -> TypeError {
    TypeError::Corrupt("stream entry".into())
}

/// The id of an entry field suffix (after the tag).
fn suffix_id(rest: &[u8]) -> Option<StreamId> {
    (rest.len() == 16).then(|| StreamId::from_be_bytes(rest)).flatten()
}

/// The fields of entry `id`, if it exists.
pub fn get(rec: &Records, id: StreamId) -> Result<Option<Vec<Vec<u8>>>> {
    rec.get(&entry_field(id))?.map(|v| decode_pairs(&v).ok_or_else(corrupt_entry)).transpose()
}

/// Adapts `f` to a walk over entry records: each record's id from its key; a key without
/// one stops the walk and clears `ok`.
fn by_id<'a>(
    ok: &'a mut bool,
    mut f: impl FnMut(StreamId, &[u8]) -> bool + 'a,
) -> impl FnMut(&[u8], &[u8]) -> bool + 'a {
    move |rest, v| match suffix_id(rest) {
        Some(id) => f(id, v),
        None => {
            *ok = false;
            false
        }
    }
}

/// Visits entries from `start` up, in id order, until `f` returns false.
pub fn walk_from(
    rec: &Records,
    start: StreamId,
    f: impl FnMut(StreamId, &[u8]) -> bool,
) -> Result<()> {
    let mut ok = true;
    rec.walk(&[TAG_ENTRY], &start.to_be_bytes(), by_id(&mut ok, f))?;
    if ok {
        Ok(())
    } else {
        Err(corrupt_entry())
    }
}

/// Visits entries from `end` down, in reverse id order, until `f` returns false.
fn walk_down_from(
    rec: &Records,
    end: StreamId,
    f: impl FnMut(StreamId, &[u8]) -> bool,
) -> Result<()> {
    let mut below = end.to_be_bytes().to_vec();
    below.push(0);
    let mut ok = true;
    rec.walk_back(&[TAG_ENTRY], Some(&below), by_id(&mut ok, f))?;
    if ok {
        Ok(())
    } else {
        Err(corrupt_entry())
    }
}

/// The id of the last entry (Redis's last valid id: tombstones are not entries here).
pub fn last_entry_id(rec: &Records) -> Result<Option<StreamId>> {
    let mut last = None;
    walk_down_from(rec, StreamId::MAX, |id, _| {
        last = Some(id);
        false
    })?;
    Ok(last)
}

/// The id of the first entry at or after `from`.
fn first_entry_from(rec: &Records, from: StreamId) -> Result<Option<StreamId>> {
    let mut first = None;
    walk_from(rec, from, |id, _| {
        first = Some(id);
        false
    })?;
    Ok(first)
}

/// Entries from `start` to `end` (inclusive), in id order or (`rev`) reverse, at most
/// `count` (`None`: all).
fn collect(
    rec: &Records,
    start: StreamId,
    end: StreamId,
    count: Option<u64>,
    rev: bool,
) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    if start > end || count == Some(0) {
        return Ok(out);
    }
    let mut bad = false;
    let mut take = |id: StreamId, v: &[u8]| {
        if (rev && id < start) || (!rev && id > end) {
            return false;
        }
        match decode_pairs(v) {
            Some(pairs) => out.push(Entry { id, pairs }),
            None => {
                bad = true;
                return false;
            }
        }
        count.is_none_or(|c| (out.len() as u64) < c)
    };
    if rev {
        walk_down_from(rec, end, &mut take)?;
    } else {
        walk_from(rec, start, &mut take)?;
    }
    if bad {
        return Err(corrupt_entry());
    }
    Ok(out)
}

/// XRANGE and XREVRANGE: the entries of `key` from `start` to `end`, at most `count`
/// (`None`: all); `None` when the key does not exist.
pub fn range(
    ks: &Keyspace,
    key: &[u8],
    start: StreamId,
    end: StreamId,
    count: Option<u64>,
    rev: bool,
) -> Result<Option<Vec<Entry>>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    collect(&records(ks, key, &s), start, end, count, rev).map(Some)
}

/// XREAD on one stream: the entries after `after`, at most `count` (`None`: all); `None`
/// when there are none (no key, or no entry above `after`).
pub fn read_after(
    ks: &Keyspace,
    key: &[u8],
    after: StreamId,
    count: Option<u64>,
) -> Result<Option<Vec<Entry>>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    if s.length == 0 {
        return Ok(None);
    }
    let rec = records(ks, key, &s);
    match last_entry_id(&rec)? {
        Some(last) if last > after => {}
        _ => return Ok(None),
    }
    // As Redis: the successor of the greatest id wraps to the least.
    let start = after.incr().unwrap_or(StreamId::MIN);
    collect(&rec, start, StreamId::MAX, count, false).map(Some)
}

/// XLEN.
pub fn len(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    Ok(load(ks, key)?.map_or(0, |s| s.length))
}

/// XREAD's `$`: the stream's last id (0-0 without the key).
pub fn last_id(ks: &Keyspace, key: &[u8]) -> Result<StreamId> {
    Ok(load(ks, key)?.map_or(StreamId::MIN, |s| s.last_id))
}

/// How XADD chooses the new entry's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewId {
    /// `*`: the time, or after the last id.
    Auto,
    /// `<ms>-<seq>`.
    Exact(StreamId),
    /// `<ms>-*`: the sequence after the last id's when `ms` is the same, else 0.
    AutoSeq(u64),
}

/// What a trim keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimTo {
    /// `MAXLEN n`: at most `n` entries.
    MaxLen(u64),
    /// `MINID id`: no entry below `id`.
    MinId(StreamId),
}

/// A trim (XTRIM, XADD's MAXLEN/MINID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trim {
    /// What it keeps.
    pub to: TrimTo,
    /// `~`: whole nodes only.
    pub approx: bool,
    /// The most entries it removes (0: no limit).
    pub limit: u64,
}

/// XADD: appends an entry of `pairs` (field, value...) to `key` with the id `id` says,
/// then trims by `trim`. The id; `None` when the key does not exist and `nomkstream`.
pub fn add(
    ks: &Keyspace,
    key: &[u8],
    id: NewId,
    nomkstream: bool,
    trim: Option<&Trim>,
    pairs: &[Vec<u8>],
) -> Result<Option<StreamId>> {
    let _g = ks.store.locks.lock(&[key]);
    let old = load(ks, key)?;
    let created = old.is_none();
    let mut s = match old {
        Some(s) => s,
        None if nomkstream => return Ok(None),
        None => Stream::new(ks.store.new_version()),
    };
    if s.last_id == StreamId::MAX {
        return Err(StreamError::Exhausted.into());
    }
    let new = match id {
        NewId::Exact(id) => id,
        NewId::AutoSeq(ms) if ms == s.last_id.ms => match s.last_id.incr() {
            Some(id) if id.ms == ms => id,
            // Redis's reply when the sequence is used up.
            _ => return Err(StreamError::TooLarge.into()),
        },
        NewId::AutoSeq(ms) => StreamId::new(ms, 0),
        NewId::Auto if ks.now_ms > s.last_id.ms => StreamId::new(ks.now_ms, 0),
        NewId::Auto => s.last_id.incr().unwrap_or(StreamId::MIN),
    };
    if new <= s.last_id {
        return Err(StreamError::IdNotGreater.into());
    }
    if pairs.iter().map(|p| p.len() as u64).sum::<u64>() > LISTPACK_MAX {
        return Err(StreamError::TooLarge.into());
    }
    let rec = records(ks, key, &s);
    let mut b = WriteBatch::new();
    let limits = ks.stream_nodes;
    let node = match tail_node(&rec)? {
        Some(mut n) if !n.is_full(pairs, limits.entries(), limits.bytes()) => {
            n.push(new, pairs);
            n
        }
        _ => {
            s.nodes += 1;
            Node::new(new, pairs)
        }
    };
    rec.put(&mut b, &entry_field(new), &encode_pairs(pairs));
    rec.put(&mut b, &node_field(node.master), &node.encode());
    s.length += 1;
    s.entries_added += 1;
    s.last_id = new;
    if s.length == 1 {
        s.first_id = new;
    }
    let trimmed = match trim {
        Some(t) => trim_in(&rec, &mut b, &mut s, t, Some((new, node)))?,
        None => 0,
    };
    save(ks, &mut b, key, &s);
    ks.write(b)?;
    ks.notify_new(created, key);
    ks.notify(STREAM, "xadd", key);
    if trimmed > 0 {
        ks.notify(STREAM, "xtrim", key);
    }
    Ok(Some(new))
}

/// The last node record.
fn tail_node(rec: &Records) -> Result<Option<Node>> {
    let mut found = None;
    rec.walk_back(&[TAG_NODE], None, |rest, v| {
        found = Some(suffix_id(rest).and_then(|m| Node::decode(m, v)));
        false
    })?;
    found.map(|n| n.ok_or_else(|| TypeError::Corrupt("stream node".into()))).transpose()
}

/// The node holding entry `id`: the one with the greatest master id at or below it.
fn node_of(rec: &Records, id: StreamId) -> Result<Option<Node>> {
    let mut below = id.to_be_bytes().to_vec();
    below.push(0);
    let mut found = None;
    rec.walk_back(&[TAG_NODE], Some(&below), |rest, v| {
        found = suffix_id(rest).and_then(|m| Node::decode(m, v));
        false
    })?;
    Ok(found)
}

/// XTRIM: trims `key` by `t`; the number of entries removed.
pub fn trim(ks: &Keyspace, key: &[u8], t: &Trim) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut s) = load(ks, key)? else { return Ok(0) };
    let rec = records(ks, key, &s);
    let mut b = WriteBatch::new();
    let n = trim_in(&rec, &mut b, &mut s, t, None)?;
    if n > 0 {
        save(ks, &mut b, key, &s);
        ks.write(b)?;
        ks.notify(STREAM, "xtrim", key);
    }
    Ok(n)
}

/// What a trim does to one node.
enum Step {
    /// Removes it whole.
    Remove(Node),
    /// Removes entries from its head, then stops.
    Partial(Node),
}

/// Trims the stream `s` by `t` into `b`, as Redis's `streamTrim`: whole nodes from the
/// head while they can go, then (unless `~`) entries of the next node. `pending` is an
/// entry this batch added and its node as the batch has it (XADD trims after adding).
fn trim_in(
    rec: &Records,
    b: &mut WriteBatch,
    s: &mut Stream,
    t: &Trim,
    pending: Option<(StreamId, Node)>,
) -> Result<u64> {
    // Plan on the node records (and counts) alone, then act.
    let mut plan = Vec::new();
    let (mut length, mut removed) = (s.length, 0u64);
    let mut stopped = false;
    let mut step = |n: Node, plan: &mut Vec<Step>| -> bool {
        if matches!(t.to, TrimTo::MaxLen(max) if length <= max) {
            return false;
        }
        if t.limit != 0 && removed + n.live > t.limit {
            return false;
        }
        let whole = match t.to {
            TrimTo::MaxLen(max) => length.saturating_sub(n.live) >= max,
            TrimTo::MinId(min) => n.last < min,
        };
        if whole {
            length = length.saturating_sub(n.live);
            removed += n.live;
            plan.push(Step::Remove(n));
            return true;
        }
        if !t.approx {
            plan.push(Step::Partial(n));
        }
        false
    };
    let mut pending_seen = false;
    let mut bad = false;
    rec.walk(&[TAG_NODE], b"", |rest, v| {
        let Some(mut n) = suffix_id(rest).and_then(|m| Node::decode(m, v)) else {
            bad = true;
            return false;
        };
        if let Some((_, pn)) = &pending {
            if pn.master == n.master {
                n = pn.clone();
                pending_seen = true;
            }
        }
        let go_on = step(n, &mut plan);
        stopped = !go_on;
        go_on
    })?;
    if bad {
        return Err(TypeError::Corrupt("stream node".into()));
    }
    if let Some((_, pn)) = &pending {
        if !stopped && !pending_seen {
            step(pn.clone(), &mut plan);
        }
    }
    let pending_id = pending.map(|(id, _)| id);
    let mut deleted = 0u64;
    let mut max_trimmed = None;
    for st in plan {
        match st {
            Step::Remove(n) => {
                for id in node_entries(rec, &n, pending_id, |_, _| true)? {
                    rec.delete(b, &entry_field(id));
                    max_trimmed = Some(id);
                }
                rec.delete(b, &node_field(n.master));
                s.nodes = s.nodes.saturating_sub(1);
                s.length = s.length.saturating_sub(n.live);
                deleted += n.live;
            }
            Step::Partial(mut n) => {
                let length = s.length;
                let doomed = |id: StreamId, taken: u64| match t.to {
                    TrimTo::MaxLen(max) => length.saturating_sub(taken) > max,
                    TrimTo::MinId(min) => id < min,
                };
                for id in node_entries(rec, &n, pending_id, doomed)? {
                    rec.delete(b, &entry_field(id));
                    max_trimmed = Some(id);
                    n.delete_one();
                    s.length = s.length.saturating_sub(1);
                    deleted += 1;
                }
                rec.put(b, &node_field(n.master), &n.encode());
            }
        }
    }
    if s.length == 0 {
        s.first_id = StreamId::MIN;
    } else if let Some(m) = max_trimmed {
        let next = m.incr().unwrap_or(StreamId::MAX);
        s.first_id = match first_entry_from(rec, next)? {
            Some(id) => id,
            None => pending_id.filter(|p| *p > m).unwrap_or(StreamId::MIN),
        };
    }
    Ok(deleted)
}

/// The live entries of node `n` in id order, while `take` (given the id and how many come
/// before it) says so: those stored, and `pending` (added by this batch, so not yet
/// readable) when it is in the node.
fn node_entries(
    rec: &Records,
    n: &Node,
    pending: Option<StreamId>,
    mut take: impl FnMut(StreamId, u64) -> bool,
) -> Result<Vec<StreamId>> {
    let mut ids = Vec::new();
    let mut more = true;
    walk_from(rec, n.master, |id, _| {
        more = id <= n.last && take(id, ids.len() as u64);
        if more {
            ids.push(id);
        }
        more
    })?;
    if let Some(p) = pending.filter(|p| *p >= n.master && *p <= n.last) {
        if more && ids.last().is_none_or(|l| *l < p) && take(p, ids.len() as u64) {
            ids.push(p);
        }
    }
    Ok(ids)
}

/// XDEL: deletes the entries `ids` of `key`; the number deleted.
pub fn delete(ks: &Keyspace, key: &[u8], ids: &[StreamId]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut s) = load(ks, key)? else { return Ok(0) };
    let rec = records(ks, key, &s);
    let mut b = WriteBatch::new();
    let mut gone = HashSet::new();
    // Nodes this batch changed (`None`: removed).
    let mut nodes: HashMap<StreamId, Option<Node>> = HashMap::new();
    let mut first_deleted = false;
    for &id in ids {
        if gone.contains(&id) || rec.get(&entry_field(id))?.is_none() {
            continue;
        }
        let node = match node_of(&rec, id)? {
            Some(n) => match nodes.get(&n.master) {
                Some(Some(changed)) => Some(changed.clone()),
                Some(None) => None,
                None => Some(n),
            },
            None => None,
        };
        if let Some(mut n) = node {
            let master = n.master;
            if n.delete_one() {
                s.nodes = s.nodes.saturating_sub(1);
                nodes.insert(master, None);
            } else {
                nodes.insert(master, Some(n));
            }
        }
        rec.delete(&mut b, &entry_field(id));
        gone.insert(id);
        s.length = s.length.saturating_sub(1);
        first_deleted |= id == s.first_id;
        s.max_deleted = s.max_deleted.max(id);
    }
    if gone.is_empty() {
        return Ok(0);
    }
    for (master, n) in &nodes {
        match n {
            Some(n) => rec.put(&mut b, &node_field(*master), &n.encode()),
            None => rec.delete(&mut b, &node_field(*master)),
        }
    }
    if s.length == 0 {
        s.first_id = StreamId::MIN;
    } else if first_deleted {
        let mut first = StreamId::MIN;
        walk_from(&rec, s.first_id, |id, _| {
            if gone.contains(&id) {
                return true;
            }
            first = id;
            false
        })?;
        s.first_id = first;
    }
    save(ks, &mut b, key, &s);
    ks.write(b)?;
    ks.notify(STREAM, "xdel", key);
    Ok(gone.len() as u64)
}

/// XSETID: sets `key`'s last id, and optionally its entries-added counter and greatest
/// deleted id (a 0-0 `max_deleted` leaves it).
pub fn set_id(
    ks: &Keyspace,
    key: &[u8],
    id: StreamId,
    entries_added: Option<u64>,
    max_deleted: StreamId,
) -> Result<()> {
    let _g = ks.store.locks.lock(&[key]);
    let mut s = load(ks, key)?.ok_or(TypeError::NoSuchKey)?;
    if s.length > 0 {
        let rec = records(ks, key, &s);
        if last_entry_id(&rec)?.is_some_and(|top| id < top) {
            return Err(StreamError::SetIdBelowTop.into());
        }
        if entries_added.is_some_and(|n| s.length > n) {
            return Err(StreamError::EntriesAddedBelowLength.into());
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if !max_deleted.is_zero() {
        s.max_deleted = max_deleted;
    }
    let mut b = WriteBatch::new();
    save(ks, &mut b, key, &s);
    ks.write(b)?;
    ks.notify(STREAM, "xsetid", key);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip_and_garbage_is_refused() {
        let p: Vec<Vec<u8>> = vec![b"f".to_vec(), b"".to_vec(), b"f".to_vec(), vec![0xff; 300]];
        let raw = encode_pairs(&p);
        assert_eq!(decode_pairs(&raw), Some(p));
        for cut in 0..raw.len() {
            assert_eq!(decode_pairs(&raw[..cut]), None);
        }
        assert_eq!(decode_pairs(&[0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(decode_pairs(&encode_pairs(&[])), Some(vec![]));
    }
}
