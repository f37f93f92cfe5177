//! Consumer groups: their records (the group, its pending entries list, its consumers and
//! each consumer's share of the PEL; drawn in `super`), and XGROUP's subcommands and XACK.
//! Reading through a group (XREADGROUP) is in `super::read`, claiming (XCLAIM, XAUTOCLAIM)
//! in `super::claim`, XPENDING and XINFO's views in `super::info`.
//!
//! Every write loads the group into a [`GroupTxn`], which keeps the records it changed
//! (the group's counters, consumers, PEL entries) until it puts them all into the batch:
//! a command that touches one record twice (an id given twice) sees its own change.

use super::entries::Entry;
use super::id::StreamId;
use super::{
    consumer_pel_space, group_field, group_space, load, records, save, Records, Stream,
    StreamError, TAG_CONSUMER, TAG_CONSUMER_PEL, TAG_PEL,
};
use crate::types::error::{Result, TypeError};
use crate::types::keyspace::Keyspace;
use crate::types::notify::STREAM;
use std::collections::{BTreeMap, HashMap};
use strata::WriteBatch;

/// A group record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRec {
    /// The last id delivered to the group.
    pub last_id: StreamId,
    /// Entries read by the group, when known (Redis's `entries_read`; -1 on disk for none).
    pub entries_read: Option<i64>,
    /// Its consumers.
    pub consumers: u64,
    /// Its PEL's size.
    pub pending: u64,
}

impl GroupRec {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        v.extend_from_slice(&self.last_id.to_le_bytes());
        v.extend_from_slice(&self.entries_read.unwrap_or(-1).to_le_bytes());
        v.extend_from_slice(&self.consumers.to_le_bytes());
        v.extend_from_slice(&self.pending.to_le_bytes());
        v
    }

    fn decode(v: &[u8]) -> Option<GroupRec> {
        if v.len() != 40 {
            return None;
        }
        let num = |at: usize| u64::from_le_bytes(v[at..at + 8].try_into().unwrap_or([0; 8]));
        let read = num(16) as i64;
        Some(GroupRec {
            last_id: StreamId::from_le_bytes(&v[..16])?,
            entries_read: (read != -1).then_some(read),
            consumers: num(24),
            pending: num(32),
        })
    }
}

/// A PEL entry: a delivered, unacknowledged entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    /// When it was last delivered (Unix ms).
    pub delivery_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
    /// The consumer it was last delivered to.
    pub consumer: Vec<u8>,
}

impl Nack {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + self.consumer.len());
        v.extend_from_slice(&self.delivery_ms.to_le_bytes());
        v.extend_from_slice(&self.deliveries.to_le_bytes());
        v.extend_from_slice(&self.consumer);
        v
    }

    /// Reads a PEL record value.
    pub fn decode(v: &[u8]) -> Option<Nack> {
        Some(Nack {
            delivery_ms: u64::from_le_bytes(v.get(..8)?.try_into().ok()?),
            deliveries: u64::from_le_bytes(v.get(8..16)?.try_into().ok()?),
            consumer: v.get(16..)?.to_vec(),
        })
    }
}

/// What a group command (XREADGROUP, XCLAIM, XAUTOCLAIM) changed, as Redis 7.0 carries it
/// to replicas in the command's place: each PEL entry as an idempotent `XCLAIM`, a last id
/// moved without one as `XGROUP SETID`, a consumer a NOACK read made as `XGROUP
/// CREATECONSUMER` (`commands::stream_group::propagate`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Effects {
    /// A NOACK read made the consumer.
    pub consumer_made: bool,
    /// Each PEL entry given, as it was left, or dropped with its stream entry, as it was;
    /// with the group's last delivered id at that point.
    pub pel: Vec<(StreamId, Nack, StreamId)>,
    /// The group's last delivered id and read counter, when they moved and no PEL entry
    /// carries the id.
    pub moved: Option<(StreamId, Option<i64>)>,
}

/// A consumer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRec {
    /// When it was last seen (Unix ms).
    pub seen_ms: u64,
    /// Its share of the PEL.
    pub pending: u64,
}

impl ConsumerRec {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16);
        v.extend_from_slice(&self.seen_ms.to_le_bytes());
        v.extend_from_slice(&self.pending.to_le_bytes());
        v
    }

    /// Reads a consumer record value.
    pub fn decode(v: &[u8]) -> Option<ConsumerRec> {
        (v.len() == 16).then(|| ConsumerRec {
            seen_ms: u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8])),
            pending: u64::from_le_bytes(v[8..].try_into().unwrap_or([0; 8])),
        })
    }
}

pub(super) fn corrupt(what: &str) -> TypeError {
    TypeError::Corrupt(format!("stream {what}"))
}

/// The field of `group`'s PEL entry `id`.
pub(super) fn pel_field(group: &[u8], id: StreamId) -> Vec<u8> {
    let mut f = group_space(TAG_PEL, group);
    f.extend_from_slice(&id.to_be_bytes());
    f
}

/// The field of `consumer`'s record in `group`.
pub(super) fn consumer_field(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    let mut f = group_space(TAG_CONSUMER, group);
    f.extend_from_slice(consumer);
    f
}

/// The field of `consumer`'s PEL index entry `id` in `group`.
fn consumer_pel_field(group: &[u8], consumer: &[u8], id: StreamId) -> Vec<u8> {
    let mut f = consumer_pel_space(group, consumer);
    f.extend_from_slice(&id.to_be_bytes());
    f
}

/// The record of `group` of a stream.
pub fn read_group(rec: &Records, group: &[u8]) -> Result<Option<GroupRec>> {
    rec.get(&group_field(group))?
        .map(|v| GroupRec::decode(&v).ok_or_else(|| corrupt("group")))
        .transpose()
}

/// Whether `key` holds a stream (`None`: no key) and it has `group`; `WrongType` for
/// another type.
pub fn has_group(ks: &Keyspace, key: &[u8], group: &[u8]) -> Result<Option<bool>> {
    let Some(s) = load(ks, key)? else { return Ok(None) };
    Ok(Some(read_group(&records(ks, key, &s), group)?.is_some()))
}

/// A group being changed by one command (module doc).
pub struct GroupTxn<'r, 'a, 'k> {
    rec: &'r Records<'a, 'k>,
    /// The group's name.
    pub name: Vec<u8>,
    /// Its record.
    pub g: GroupRec,
    consumers: HashMap<Vec<u8>, Option<ConsumerRec>>,
    pel: BTreeMap<StreamId, Option<Nack>>,
    now: u64,
}

impl<'r, 'a, 'k> GroupTxn<'r, 'a, 'k> {
    /// Loads `group` of the stream `rec`; `NoGroup` when it does not exist.
    pub fn load(rec: &'r Records<'a, 'k>, group: &[u8], now: u64) -> Result<Self> {
        let g = read_group(rec, group)?.ok_or(StreamError::NoGroup)?;
        Ok(GroupTxn {
            rec,
            name: group.to_vec(),
            g,
            consumers: HashMap::new(),
            pel: BTreeMap::new(),
            now,
        })
    }

    /// The record of `consumer`, if it exists.
    pub fn consumer(&mut self, name: &[u8]) -> Result<Option<&mut ConsumerRec>> {
        if !self.consumers.contains_key(name) {
            let c = self
                .rec
                .get(&consumer_field(&self.name, name))?
                .map(|v| ConsumerRec::decode(&v).ok_or_else(|| corrupt("consumer")))
                .transpose()?;
            self.consumers.insert(name.to_vec(), c);
        }
        Ok(self.consumers.get_mut(name).and_then(Option::as_mut))
    }

    /// Looks `consumer` up as Redis does when it acts for it (seen now), creating it when
    /// missing; whether it was created.
    pub fn touch_consumer(&mut self, name: &[u8]) -> Result<bool> {
        let now = self.now;
        if let Some(c) = self.consumer(name)? {
            c.seen_ms = now;
            return Ok(false);
        }
        self.consumers.insert(name.to_vec(), Some(ConsumerRec { seen_ms: now, pending: 0 }));
        self.g.consumers += 1;
        Ok(true)
    }

    /// The PEL entry of `id`, if any.
    pub fn nack(&mut self, id: StreamId) -> Result<Option<Nack>> {
        if let Some(n) = self.pel.get(&id) {
            return Ok(n.clone());
        }
        let n = self
            .rec
            .get(&pel_field(&self.name, id))?
            .map(|v| Nack::decode(&v).ok_or_else(|| corrupt("pending entry")))
            .transpose()?;
        self.pel.insert(id, n.clone());
        Ok(n)
    }

    fn adjust_pending(&mut self, consumer: &[u8], add: bool) -> Result<()> {
        if let Some(c) = self.consumer(consumer)? {
            c.pending = if add { c.pending + 1 } else { c.pending.saturating_sub(1) };
        }
        Ok(())
    }

    /// Makes `nack` the PEL entry of `id` (its consumer must exist): moves it from its
    /// previous consumer, if another, or adds it.
    pub fn put_nack(&mut self, b: &mut WriteBatch, id: StreamId, nack: Nack) -> Result<()> {
        match self.nack(id)? {
            Some(old) if old.consumer == nack.consumer => {}
            Some(old) => {
                self.rec.delete(b, &consumer_pel_field(&self.name, &old.consumer, id));
                self.adjust_pending(&old.consumer, false)?;
                self.rec.put(b, &consumer_pel_field(&self.name, &nack.consumer, id), b"");
                self.adjust_pending(&nack.consumer, true)?;
            }
            None => {
                self.g.pending += 1;
                self.rec.put(b, &consumer_pel_field(&self.name, &nack.consumer, id), b"");
                self.adjust_pending(&nack.consumer, true)?;
            }
        }
        self.rec.put(b, &pel_field(&self.name, id), &nack.encode());
        self.pel.insert(id, Some(nack));
        Ok(())
    }

    /// Removes the PEL entry of `id`, if any; whether there was one.
    pub fn drop_nack(&mut self, b: &mut WriteBatch, id: StreamId) -> Result<bool> {
        let Some(old) = self.nack(id)? else { return Ok(false) };
        self.rec.delete(b, &pel_field(&self.name, id));
        self.rec.delete(b, &consumer_pel_field(&self.name, &old.consumer, id));
        self.adjust_pending(&old.consumer, false)?;
        self.g.pending = self.g.pending.saturating_sub(1);
        self.pel.insert(id, None);
        Ok(true)
    }

    /// Puts the group record and the consumers it changed into `b`.
    pub fn finish(self, b: &mut WriteBatch) {
        for (name, c) in &self.consumers {
            if let Some(c) = c {
                self.rec.put(b, &consumer_field(&self.name, name), &c.encode());
            }
        }
        self.rec.put(b, &group_field(&self.name), &self.g.encode());
    }
}

/// Where XGROUP CREATE or SETID puts a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStart {
    /// `$`: the stream's last id.
    Last,
    /// An id.
    Id(StreamId),
}

impl GroupStart {
    fn resolve(self, s: &Stream) -> StreamId {
        match self {
            GroupStart::Last => s.last_id,
            GroupStart::Id(id) => id,
        }
    }
}

/// XGROUP CREATE: creates `group` at `start` with `entries_read` (`None`: unknown); with
/// `mkstream` the stream too. `NoSuchKey` without the key (and `mkstream`),
/// `GroupExists` when the group does.
pub fn create(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    start: GroupStart,
    mkstream: bool,
    entries_read: Option<i64>,
) -> Result<()> {
    let _g = ks.store.locks.lock(&[key]);
    let old = load(ks, key)?;
    let created = old.is_none();
    let mut s = match old {
        Some(s) => s,
        None if mkstream => Stream::new(ks.store.new_version()),
        None => return Err(TypeError::NoSuchKey),
    };
    let rec = records(ks, key, &s);
    if read_group(&rec, group)?.is_some() {
        return Err(StreamError::GroupExists.into());
    }
    let g = GroupRec { last_id: start.resolve(&s), entries_read, consumers: 0, pending: 0 };
    let mut b = WriteBatch::new();
    rec.put(&mut b, &group_field(group), &g.encode());
    s.groups += 1;
    save(ks, &mut b, key, &s);
    ks.write(b)?;
    ks.notify_new(created, key);
    ks.notify(STREAM, "xgroup-create", key);
    Ok(())
}

/// XGROUP SETID: moves `group`'s last delivered id to `start` and sets its read counter.
pub fn set_id(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    start: GroupStart,
    entries_read: Option<i64>,
) -> Result<()> {
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(TypeError::NoSuchKey)?;
    let rec = records(ks, key, &s);
    let mut g = read_group(&rec, group)?.ok_or(StreamError::NoGroup)?;
    g.last_id = start.resolve(&s);
    g.entries_read = entries_read;
    let mut b = WriteBatch::new();
    rec.put(&mut b, &group_field(group), &g.encode());
    ks.write(b)?;
    ks.notify(STREAM, "xgroup-setid", key);
    Ok(())
}

/// Deletes every record of `space` into `b`; how many.
fn delete_space(rec: &Records, b: &mut WriteBatch, space: &[u8]) -> Result<u64> {
    let mut fields = Vec::new();
    rec.walk(space, b"", |rest, _| {
        fields.push([space, rest].concat());
        true
    })?;
    for f in &fields {
        rec.delete(b, f);
    }
    Ok(fields.len() as u64)
}

/// XGROUP DESTROY: deletes `group` and its records; whether it existed.
pub fn destroy(ks: &Keyspace, key: &[u8], group: &[u8]) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(mut s) = load(ks, key)? else { return Err(TypeError::NoSuchKey) };
    let rec = records(ks, key, &s);
    if read_group(&rec, group)?.is_none() {
        return Ok(false);
    }
    let mut b = WriteBatch::new();
    rec.delete(&mut b, &group_field(group));
    for tag in [TAG_PEL, TAG_CONSUMER, TAG_CONSUMER_PEL] {
        delete_space(&rec, &mut b, &group_space(tag, group))?;
    }
    s.groups = s.groups.saturating_sub(1);
    save(ks, &mut b, key, &s);
    ks.write(b)?;
    ks.notify(STREAM, "xgroup-destroy", key);
    Ok(true)
}

/// XGROUP CREATECONSUMER: whether the consumer was created (not if it exists).
pub fn create_consumer(ks: &Keyspace, key: &[u8], group: &[u8], consumer: &[u8]) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(TypeError::NoSuchKey)?;
    let rec = records(ks, key, &s);
    let mut txn = GroupTxn::load(&rec, group, ks.now_ms)?;
    if txn.consumer(consumer)?.is_some() {
        return Ok(false);
    }
    txn.touch_consumer(consumer)?;
    let mut b = WriteBatch::new();
    txn.finish(&mut b);
    ks.write(b)?;
    ks.notify(STREAM, "xgroup-createconsumer", key);
    Ok(true)
}

/// XGROUP DELCONSUMER: deletes the consumer and its PEL entries; how many it had.
pub fn delete_consumer(ks: &Keyspace, key: &[u8], group: &[u8], consumer: &[u8]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(TypeError::NoSuchKey)?;
    let rec = records(ks, key, &s);
    let mut txn = GroupTxn::load(&rec, group, ks.now_ms)?;
    if txn.consumer(consumer)?.is_none() {
        return Ok(0);
    }
    let mut ids = Vec::new();
    let mut bad = false;
    rec.walk(&consumer_pel_space(group, consumer), b"", |rest, _| {
        match StreamId::from_be_bytes(rest) {
            Some(id) if rest.len() == 16 => ids.push(id),
            _ => bad = true,
        }
        !bad
    })?;
    if bad {
        return Err(corrupt("consumer PEL"));
    }
    let mut b = WriteBatch::new();
    for &id in &ids {
        txn.drop_nack(&mut b, id)?;
    }
    rec.delete(&mut b, &consumer_field(group, consumer));
    txn.consumers.insert(consumer.to_vec(), None);
    txn.g.consumers = txn.g.consumers.saturating_sub(1);
    txn.finish(&mut b);
    ks.write(b)?;
    ks.notify(STREAM, "xgroup-delconsumer", key);
    Ok(ids.len() as u64)
}

/// XACK: removes `ids` from `group`'s PEL; how many were there (0 without the key or
/// group).
pub fn ack(ks: &Keyspace, key: &[u8], group: &[u8], ids: &[StreamId]) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(s) = load(ks, key)? else { return Ok(0) };
    let rec = records(ks, key, &s);
    let mut txn = match GroupTxn::load(&rec, group, ks.now_ms) {
        Ok(t) => t,
        Err(TypeError::Stream(StreamError::NoGroup)) => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut b = WriteBatch::new();
    let mut n = 0;
    for &id in ids {
        n += u64::from(txn.drop_nack(&mut b, id)?);
    }
    if n > 0 {
        txn.finish(&mut b);
        ks.write(b)?;
    }
    Ok(n)
}

/// A whole group as RESTORE writes it.
pub struct WholeGroup<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// The last id delivered to it.
    pub last_id: StreamId,
    /// Entries it read, when known.
    pub entries_read: Option<i64>,
    /// Its PEL, each entry with its consumer (which `consumers` names).
    pub pel: Vec<(StreamId, Nack)>,
    /// Its consumers and when each was last seen.
    pub consumers: Vec<(&'a [u8], u64)>,
}

/// Puts every record of group `g` of the stream generation `rec` into `b`: the group, its
/// PEL, each consumer with its share of the PEL counted, and the consumers' PEL indexes.
/// The stream's group count is the caller's.
pub fn put_whole(rec: &Records, b: &mut WriteBatch, g: &WholeGroup) {
    let mut shares: HashMap<&[u8], u64> = g.consumers.iter().map(|(c, _)| (*c, 0)).collect();
    for (id, n) in &g.pel {
        rec.put(b, &pel_field(g.name, *id), &n.encode());
        rec.put(b, &consumer_pel_field(g.name, &n.consumer, *id), b"");
        *shares.entry(&n.consumer).or_default() += 1;
    }
    for (c, seen_ms) in &g.consumers {
        let pending = shares.get(c).copied().unwrap_or(0);
        rec.put(
            b,
            &consumer_field(g.name, c),
            &ConsumerRec { seen_ms: *seen_ms, pending }.encode(),
        );
    }
    let rec_g = GroupRec {
        last_id: g.last_id,
        entries_read: g.entries_read,
        consumers: g.consumers.len() as u64,
        pending: g.pel.len() as u64,
    };
    rec.put(b, &group_field(g.name), &rec_g.encode());
}

/// An entry as a group read gives it: `None` fields for an entry gone from the stream
/// (a history read of a deleted entry).
pub type Delivered = (StreamId, Option<Vec<Vec<u8>>>);

/// Converts entries read to [`Delivered`] form.
pub fn delivered(v: Vec<Entry>) -> Vec<Delivered> {
    v.into_iter().map(|e| (e.id, Some(e.pairs))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let g = GroupRec {
            last_id: StreamId::new(4, 5),
            entries_read: Some(7),
            consumers: 2,
            pending: 3,
        };
        assert_eq!(GroupRec::decode(&g.encode()), Some(g.clone()));
        let none = GroupRec { entries_read: None, ..g };
        assert_eq!(GroupRec::decode(&none.encode()), Some(none));
        assert_eq!(GroupRec::decode(&[0; 39]), None);
        let n = Nack { delivery_ms: 9, deliveries: 2, consumer: b"alice".to_vec() };
        assert_eq!(Nack::decode(&n.encode()), Some(n));
        assert_eq!(Nack::decode(&[0; 15]), None);
        let c = ConsumerRec { seen_ms: 1, pending: 2 };
        assert_eq!(ConsumerRec::decode(&c.encode()), Some(c));
        assert_eq!(ConsumerRec::decode(&[0; 17]), None);
    }

    #[test]
    fn fields_of_one_group_stay_in_its_space() {
        let a = pel_field(b"g", StreamId::MAX);
        assert!(a.starts_with(&group_space(TAG_PEL, b"g")));
        assert!(!a.starts_with(&group_space(TAG_PEL, b"g\0")));
        let c = consumer_pel_field(b"g", b"c", StreamId::MIN);
        assert!(c.starts_with(&consumer_pel_space(b"g", b"c")));
        assert!(!c.starts_with(&consumer_pel_space(b"g", b"c\0")));
    }
}
