//! Reading through a consumer group (XREADGROUP on one stream): new entries (`>`), which
//! move the group's last delivered id and read counter and enter the PEL, or the
//! consumer's own history (its PEL from an id), whose deliveries are counted again.

use super::entries::{self, walk_from};
use super::group::{corrupt, Delivered, Effects, GroupTxn, Nack};
use super::id::StreamId;
use super::{consumer_pel_space, load, records, StreamError};
use crate::types::error::Result;
use crate::types::keyspace::Keyspace;
use crate::types::notify::STREAM;
use strata::WriteBatch;

/// Where XREADGROUP reads a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRead {
    /// `>`: entries never delivered to the group.
    New,
    /// An id: the consumer's pending entries after it.
    History(StreamId),
}

/// XREADGROUP on `key`: what `consumer` of `group` gets, at most `count` (`None`: all), as
/// Redis serves it, and what changed; the consumer is created on the way. `None` for `>`
/// when the stream has nothing new for the group (the consumer is then left as it was).
/// `NoGroup` without the key or the group; with `noack` new entries do not enter the PEL.
/// A read of the consumer's history counts its deliveries again: those PEL entries are in
/// the effects too (Redis 7.0 leaves them out, and its replicas' counts behind).
pub fn read_group(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    from: GroupRead,
    count: Option<u64>,
    noack: bool,
) -> Result<Option<(Vec<Delivered>, Effects)>> {
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(StreamError::NoGroup)?;
    let rec = records(ks, key, &s);
    let now = ks.now_ms;
    let mut txn = GroupTxn::load(&rec, group, now)?;
    let mut b = WriteBatch::new();
    let mut effects = Effects::default();
    // Whether the consumer was created (each way of reading creates a missing one).
    let created;
    let out = match from {
        GroupRead::New => {
            if s.length == 0 {
                return Ok(None);
            }
            match entries::last_entry_id(&rec)? {
                Some(last) if last > txn.g.last_id => {}
                _ => return Ok(None),
            }
            created = txn.touch_consumer(consumer)?;
            let start = txn.g.last_id.incr().unwrap_or(StreamId::MIN);
            let last_before = txn.g.last_id;
            let mut got = Vec::new();
            let mut bad = false;
            walk_from(&rec, start, |id, v| {
                match entries::decode_pairs(v) {
                    Some(p) => got.push((id, Some(p))),
                    None => bad = true,
                }
                !bad && count.is_none_or(|c| (got.len() as u64) < c)
            })?;
            if bad {
                return Err(corrupt("entry"));
            }
            for (id, _) in &got {
                let id = *id;
                if id > txn.g.last_id {
                    let g = &mut txn.g;
                    match g.entries_read {
                        Some(n) if !s.has_tombstones(id, StreamId::MAX) => {
                            g.entries_read = Some(n.wrapping_add(1));
                        }
                        _ if s.entries_added != 0 => g.entries_read = s.entries_read_at(id),
                        _ => {}
                    }
                    g.last_id = id;
                }
                if !noack {
                    let nack =
                        Nack { delivery_ms: now, deliveries: 1, consumer: consumer.to_vec() };
                    txn.put_nack(&mut b, id, nack.clone())?;
                    effects.pel.push((id, nack, txn.g.last_id));
                }
            }
            if noack && txn.g.last_id != last_before {
                effects.moved = Some((txn.g.last_id, txn.g.entries_read));
            }
            got
        }
        GroupRead::History(after) => {
            created = txn.touch_consumer(consumer)?;
            // As Redis: the successor of the greatest id wraps to the least.
            let start = after.incr().unwrap_or(StreamId::MIN);
            let mut ids = Vec::new();
            let mut bad = false;
            rec.walk(&consumer_pel_space(group, consumer), &start.to_be_bytes(), |rest, _| {
                match StreamId::from_be_bytes(rest).filter(|_| rest.len() == 16) {
                    Some(id) => ids.push(id),
                    None => bad = true,
                }
                !bad && count.is_none_or(|c| (ids.len() as u64) < c)
            })?;
            if bad {
                return Err(corrupt("consumer PEL"));
            }
            let mut got = Vec::with_capacity(ids.len());
            for id in ids {
                let fields = entries::get(&rec, id)?;
                if fields.is_some() {
                    if let Some(mut n) = txn.nack(id)? {
                        n.delivery_ms = now;
                        n.deliveries += 1;
                        txn.put_nack(&mut b, id, n.clone())?;
                        effects.pel.push((id, n, txn.g.last_id));
                    }
                }
                got.push((id, fields));
            }
            got
        }
    };
    effects.consumer_made = created && noack;
    txn.finish(&mut b);
    ks.write(b)?;
    if created {
        ks.notify(STREAM, "xgroup-createconsumer", key);
    }
    Ok(Some((out, effects)))
}
