//! Views of a stream and its groups: XPENDING's summary and ranges, XINFO STREAM (plain
//! and FULL), XINFO GROUPS and XINFO CONSUMERS. Reads only.

use super::entries::{self, Entry};
use super::group::{consumer_field, corrupt, pel_field, read_group, ConsumerRec, GroupRec, Nack};
use super::id::StreamId;
use super::{
    consumer_pel_space, group_space, load, records, Records, Stream, StreamError, TAG_CONSUMER,
    TAG_GROUP, TAG_NODE, TAG_PEL,
};
use crate::types::error::Result;
use crate::types::keyspace::Keyspace;

/// Visits the PEL entries of `group` from `from` in id order until `f` returns false.
fn walk_pel(
    rec: &Records,
    group: &[u8],
    from: StreamId,
    mut f: impl FnMut(StreamId, Nack) -> bool,
) -> Result<()> {
    let mut bad = false;
    rec.walk(&group_space(TAG_PEL, group), &from.to_be_bytes(), |rest, v| {
        match (StreamId::from_be_bytes(rest).filter(|_| rest.len() == 16), Nack::decode(v)) {
            (Some(id), Some(n)) => f(id, n),
            _ => {
                bad = true;
                false
            }
        }
    })?;
    if bad {
        return Err(corrupt("pending entry"));
    }
    Ok(())
}

/// Visits the ids of `consumer`'s PEL share in `group` from `from` until `f` returns false.
fn walk_consumer_pel(
    rec: &Records,
    group: &[u8],
    consumer: &[u8],
    from: StreamId,
    mut f: impl FnMut(StreamId) -> bool,
) -> Result<()> {
    let mut bad = false;
    rec.walk(&consumer_pel_space(group, consumer), &from.to_be_bytes(), |rest, _| {
        match StreamId::from_be_bytes(rest).filter(|_| rest.len() == 16) {
            Some(id) => f(id),
            None => {
                bad = true;
                false
            }
        }
    })?;
    if bad {
        return Err(corrupt("consumer PEL"));
    }
    Ok(())
}

/// The consumers of `group` in name order.
fn consumers_of(rec: &Records, group: &[u8]) -> Result<Vec<(Vec<u8>, ConsumerRec)>> {
    let mut out = Vec::new();
    let mut bad = false;
    rec.walk(&group_space(TAG_CONSUMER, group), b"", |name, v| {
        match ConsumerRec::decode(v) {
            Some(c) => out.push((name.to_vec(), c)),
            None => bad = true,
        }
        !bad
    })?;
    if bad {
        return Err(corrupt("consumer"));
    }
    Ok(out)
}

/// The groups of a stream in name order.
fn groups_of(rec: &Records) -> Result<Vec<(Vec<u8>, GroupRec)>> {
    let mut names = Vec::new();
    rec.walk(&[TAG_GROUP], b"", |name, _| {
        names.push(name.to_vec());
        true
    })?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let g = read_group(rec, &name)?.ok_or_else(|| corrupt("group"))?;
        out.push((name, g));
    }
    Ok(out)
}

/// The stream at `key` and its `group`; `NoGroup` when either is missing.
fn stream_and_group(ks: &Keyspace, key: &[u8], group: &[u8]) -> Result<(Stream, GroupRec)> {
    let s = load(ks, key)?.ok_or(StreamError::NoGroup)?;
    let g = read_group(&records(ks, key, &s), group)?.ok_or(StreamError::NoGroup)?;
    Ok((s, g))
}

/// XPENDING's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSummary {
    /// PEL size.
    pub count: u64,
    /// The PEL's least and greatest ids (`None`: empty).
    pub bounds: Option<(StreamId, StreamId)>,
    /// Consumers with pending entries, in name order, and how many each has.
    pub consumers: Vec<(Vec<u8>, u64)>,
}

/// XPENDING key group.
pub fn pending_summary(ks: &Keyspace, key: &[u8], group: &[u8]) -> Result<PendingSummary> {
    let (s, g) = stream_and_group(ks, key, group)?;
    let rec = records(ks, key, &s);
    let mut first = None;
    walk_pel(&rec, group, StreamId::MIN, |id, _| {
        first = Some(id);
        false
    })?;
    let Some(first) = first else {
        return Ok(PendingSummary { count: 0, bounds: None, consumers: Vec::new() });
    };
    let mut last = first;
    rec.walk_back(&group_space(TAG_PEL, group), None, |rest, _| {
        if let Some(id) = StreamId::from_be_bytes(rest) {
            last = id;
        }
        false
    })?;
    let consumers = consumers_of(&rec, group)?
        .into_iter()
        .filter(|(_, c)| c.pending > 0)
        .map(|(n, c)| (n, c.pending))
        .collect();
    Ok(PendingSummary { count: g.pending, bounds: Some((first, last)), consumers })
}

/// One entry of XPENDING's extended form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The id.
    pub id: StreamId,
    /// Its consumer.
    pub consumer: Vec<u8>,
    /// Milliseconds since its last delivery.
    pub idle: u64,
    /// Its deliveries.
    pub deliveries: u64,
}

/// XPENDING's extended form: `[IDLE min_idle] start end count [consumer]`.
#[derive(Debug, Clone, Copy)]
pub struct PendingQuery<'a> {
    /// The least id.
    pub start: StreamId,
    /// The greatest id.
    pub end: StreamId,
    /// The most entries.
    pub count: u64,
    /// Only entries idle at least this long (ms; 0: any).
    pub min_idle: i64,
    /// Only this consumer's entries.
    pub consumer: Option<&'a [u8]>,
}

/// XPENDING key group [IDLE min] start end count [consumer]: the PEL entries `q` selects.
pub fn pending_range(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    q: &PendingQuery,
) -> Result<Vec<Pending>> {
    let PendingQuery { start, end, count, min_idle, consumer } = *q;
    let (s, _) = stream_and_group(ks, key, group)?;
    let rec = records(ks, key, &s);
    let now = ks.now_ms;
    let mut out = Vec::new();
    let mut left = count;
    let mut take = |id: StreamId, n: Nack, out: &mut Vec<Pending>| -> bool {
        if left == 0 || id > end {
            return false;
        }
        let idle = (now as i64).wrapping_sub(n.delivery_ms as i64);
        if min_idle != 0 && idle < min_idle {
            return true;
        }
        left -= 1;
        out.push(Pending {
            id,
            consumer: n.consumer,
            idle: idle.max(0) as u64,
            deliveries: n.deliveries,
        });
        left > 0
    };
    match consumer {
        None => walk_pel(&rec, group, start, |id, n| take(id, n, &mut out))?,
        Some(c) => {
            if rec.get(&consumer_field(group, c))?.is_none() || count == 0 {
                return Ok(out);
            }
            let mut ids = Vec::new();
            walk_consumer_pel(&rec, group, c, start, |id| {
                if id > end {
                    return false;
                }
                ids.push(id);
                true
            })?;
            for id in ids {
                let Some(v) = rec.get(&pel_field(group, id))? else { continue };
                let n = Nack::decode(&v).ok_or_else(|| corrupt("pending entry"))?;
                if !take(id, n, &mut out) {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// The radix tree nodes Redis would have for the stream's nodes.
fn tree_nodes(rec: &Records) -> Result<u64> {
    let mut masters = Vec::new();
    rec.walk(&[TAG_NODE], b"", |rest, _| {
        masters.extend(StreamId::from_be_bytes(rest));
        true
    })?;
    Ok(super::node::radix_tree_nodes(&masters))
}

/// XINFO STREAM key: the stream with its first and last entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSummary {
    /// The stream's counters.
    pub stream: Stream,
    /// Redis's `radix-tree-nodes`.
    pub tree_nodes: u64,
    /// Its first entry.
    pub first: Option<Entry>,
    /// Its last entry.
    pub last: Option<Entry>,
}

/// XINFO STREAM key; `None` without the key.
pub fn stream(ks: &Keyspace, key: &[u8]) -> Result<Option<StreamSummary>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    let first = entries::range(ks, key, StreamId::MIN, StreamId::MAX, Some(1), false)?;
    let last = entries::range(ks, key, StreamId::MIN, StreamId::MAX, Some(1), true)?;
    let pick = |v: Option<Vec<Entry>>| v.and_then(|v| v.into_iter().next());
    let tree_nodes = tree_nodes(&records(ks, key, &s))?;
    Ok(Some(StreamSummary { stream: s, tree_nodes, first: pick(first), last: pick(last) }))
}

/// A consumer in XINFO STREAM FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerFull {
    /// Its name.
    pub name: Vec<u8>,
    /// When it was last seen (Unix ms).
    pub seen_ms: u64,
    /// Its PEL share's size.
    pub pel_count: u64,
    /// Its PEL share (id, delivery time, deliveries), at most COUNT.
    pub pending: Vec<(StreamId, u64, u64)>,
}

/// A group in XINFO STREAM FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFull {
    /// Its counters as XINFO GROUPS gives them.
    pub info: GroupInfo,
    /// Its PEL (id, consumer, delivery time, deliveries), at most COUNT.
    pub pending: Vec<(StreamId, Vec<u8>, u64, u64)>,
    /// Its consumers.
    pub consumers: Vec<ConsumerFull>,
}

/// XINFO STREAM key FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFull {
    /// The stream's counters.
    pub stream: Stream,
    /// Redis's `radix-tree-nodes`.
    pub tree_nodes: u64,
    /// Its entries, at most COUNT.
    pub entries: Vec<Entry>,
    /// Its groups.
    pub groups: Vec<GroupFull>,
}

/// XINFO STREAM key FULL [COUNT count]: every list cut at `count` (0: whole); `None`
/// without the key.
pub fn stream_full(ks: &Keyspace, key: &[u8], count: u64) -> Result<Option<StreamFull>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    let limit = (count != 0).then_some(count);
    let entries =
        entries::range(ks, key, StreamId::MIN, StreamId::MAX, limit, false)?.unwrap_or_default();
    let rec = records(ks, key, &s);
    let under = |n: usize| limit.is_none_or(|c| (n as u64) < c);
    let mut groups = Vec::new();
    for (name, g) in groups_of(&rec)? {
        let mut pending = Vec::new();
        walk_pel(&rec, &name, StreamId::MIN, |id, n| {
            pending.push((id, n.consumer, n.delivery_ms, n.deliveries));
            under(pending.len())
        })?;
        let mut consumers = Vec::new();
        for (cname, c) in consumers_of(&rec, &name)? {
            let mut ids = Vec::new();
            walk_consumer_pel(&rec, &name, &cname, StreamId::MIN, |id| {
                ids.push(id);
                under(ids.len())
            })?;
            let mut own = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(v) = rec.get(&pel_field(&name, id))? {
                    let n = Nack::decode(&v).ok_or_else(|| corrupt("pending entry"))?;
                    own.push((id, n.delivery_ms, n.deliveries));
                }
            }
            consumers.push(ConsumerFull {
                name: cname,
                seen_ms: c.seen_ms,
                pel_count: c.pending,
                pending: own,
            });
        }
        groups.push(GroupFull { info: group_info(&s, name, &g), pending, consumers });
    }
    let tree_nodes = tree_nodes(&rec)?;
    Ok(Some(StreamFull { stream: s, tree_nodes, entries, groups }))
}

/// A group as XINFO GROUPS shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// Its name.
    pub name: Vec<u8>,
    /// Its consumers.
    pub consumers: u64,
    /// Its PEL's size.
    pub pending: u64,
    /// The last id delivered to it.
    pub last_id: StreamId,
    /// Entries it read, when known.
    pub entries_read: Option<i64>,
    /// Entries it has yet to read, when known.
    pub lag: Option<i64>,
}

fn group_info(s: &Stream, name: Vec<u8>, g: &GroupRec) -> GroupInfo {
    GroupInfo {
        name,
        consumers: g.consumers,
        pending: g.pending,
        last_id: g.last_id,
        entries_read: g.entries_read,
        lag: s.lag(g.last_id, g.entries_read),
    }
}

/// XINFO GROUPS key; `None` without the key.
pub fn groups(ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<GroupInfo>>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    let rec = records(ks, key, &s);
    Ok(Some(groups_of(&rec)?.into_iter().map(|(n, g)| group_info(&s, n, &g)).collect()))
}

/// A consumer as XINFO CONSUMERS shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// Its name.
    pub name: Vec<u8>,
    /// Its PEL share's size.
    pub pending: u64,
    /// Milliseconds since it was last seen.
    pub idle: u64,
}

/// XINFO CONSUMERS key group; `None` without the key, `NoGroup` without the group.
pub fn consumers(ks: &Keyspace, key: &[u8], group: &[u8]) -> Result<Option<Vec<ConsumerInfo>>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    let rec = records(ks, key, &s);
    if read_group(&rec, group)?.is_none() {
        return Err(StreamError::NoGroup.into());
    }
    let now = ks.now_ms;
    Ok(Some(
        consumers_of(&rec, group)?
            .into_iter()
            .map(|(name, c)| ConsumerInfo {
                name,
                pending: c.pending,
                idle: now.saturating_sub(c.seen_ms),
            })
            .collect(),
    ))
}
