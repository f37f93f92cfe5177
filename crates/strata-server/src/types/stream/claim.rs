//! Claiming pending entries for a consumer: XCLAIM (chosen ids, with its options to set
//! delivery times and counts or to create PEL entries) and XAUTOCLAIM (a walk of the PEL
//! from a cursor). An entry gone from the stream loses its PEL entry on the way, as in Redis.

use super::entries;
use super::group::{corrupt, Effects, GroupTxn, Nack};
use super::id::StreamId;
use super::{group_space, load, records, StreamError, TAG_PEL};
use crate::types::error::Result;
use crate::types::keyspace::Keyspace;
use crate::types::notify::STREAM;
use strata::WriteBatch;

/// XCLAIM's options.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaimOpts {
    /// Claim only entries idle at least this long (ms).
    pub min_idle: u64,
    /// The delivery time to set (IDLE/TIME, already made absolute); `None`: now.
    pub delivery_ms: Option<i64>,
    /// The delivery count to set (RETRYCOUNT).
    pub retry_count: Option<u64>,
    /// Create PEL entries for ids that have none (FORCE).
    pub force: bool,
    /// Reply with ids only, and leave delivery counts (JUSTID).
    pub justid: bool,
    /// Raise the group's last delivered id to this (LASTID).
    pub last_id: Option<StreamId>,
}

/// A claimed entry: its id and, unless JUSTID, its fields.
pub type Claimed = (StreamId, Option<Vec<Vec<u8>>>);

/// XCLAIM: gives `ids` of `group`'s PEL to `consumer` as Redis does; the claimed entries
/// and what changed. PEL entries of deleted stream entries are dropped.
pub fn claim(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    ids: &[StreamId],
    o: &ClaimOpts,
) -> Result<(Vec<Claimed>, Effects)> {
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(StreamError::NoGroup)?;
    let rec = records(ks, key, &s);
    let now = ks.now_ms;
    let mut txn = GroupTxn::load(&rec, group, now)?;
    let mut effects = Effects::default();
    if let Some(last) = o.last_id.filter(|l| *l > txn.g.last_id) {
        txn.g.last_id = last;
        effects.moved = Some((last, txn.g.entries_read));
    }
    let delivery = match o.delivery_ms {
        Some(t) if t >= 0 && t as u64 <= now => t as u64,
        _ => now,
    };
    let mut b = WriteBatch::new();
    let mut out = Vec::new();
    let (mut touched, mut created) = (false, false);
    for &id in ids {
        let nack = txn.nack(id)?;
        let Some(fields) = entries::get(&rec, id)? else {
            if let Some(n) = nack {
                txn.drop_nack(&mut b, id)?;
                effects.pel.push((id, n, txn.g.last_id));
            }
            continue;
        };
        let (mut nack, forced) = match nack {
            Some(n) => (n, false),
            None if o.force => {
                (Nack { delivery_ms: now, deliveries: 1, consumer: Vec::new() }, true)
            }
            None => continue,
        };
        if !forced && o.min_idle > 0 && now.saturating_sub(nack.delivery_ms) < o.min_idle {
            continue;
        }
        if !touched {
            created = txn.touch_consumer(consumer)?;
            touched = true;
        }
        nack.delivery_ms = delivery;
        match o.retry_count {
            Some(c) => nack.deliveries = c,
            None if !o.justid => nack.deliveries += 1,
            None => {}
        }
        nack.consumer = consumer.to_vec();
        txn.put_nack(&mut b, id, nack.clone())?;
        effects.pel.push((id, nack, txn.g.last_id));
        out.push((id, (!o.justid).then_some(fields)));
    }
    if !effects.pel.is_empty() {
        // The PEL entries' XCLAIMs carry the last id.
        effects.moved = None;
    }
    txn.finish(&mut b);
    ks.write(b)?;
    if created {
        ks.notify(STREAM, "xgroup-createconsumer", key);
    }
    Ok((out, effects))
}

/// What XAUTOCLAIM did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoClaimed {
    /// Where the next call starts (0-0: the PEL's end).
    pub cursor: StreamId,
    /// The claimed entries.
    pub claimed: Vec<Claimed>,
    /// PEL entries dropped because their stream entries are gone.
    pub deleted: Vec<StreamId>,
    /// What changed (its `pel`: the dropped entries as they were, the claimed as left).
    pub effects: Effects,
}

/// XAUTOCLAIM's arguments after the consumer.
#[derive(Debug, Clone, Copy)]
pub struct AutoClaim {
    /// Claim only entries idle at least this long (ms).
    pub min_idle: u64,
    /// Where in the PEL to start.
    pub start: StreamId,
    /// The most entries to claim (at least 1); ten times as many are looked at at most.
    pub count: u64,
    /// Reply with ids only, and leave delivery counts (JUSTID).
    pub justid: bool,
}

/// XAUTOCLAIM: gives `consumer` the PEL entries of `group` from `a.start` idle at least
/// `a.min_idle` ms, at most `a.count`, looking at no more than ten times that many.
pub fn auto_claim(
    ks: &Keyspace,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    a: &AutoClaim,
) -> Result<AutoClaimed> {
    let AutoClaim { min_idle, start, count, justid } = *a;
    let _g = ks.store.locks.lock(&[key]);
    let s = load(ks, key)?.ok_or(StreamError::NoGroup)?;
    let rec = records(ks, key, &s);
    let now = ks.now_ms;
    let mut txn = GroupTxn::load(&rec, group, now)?;
    let mut attempts = count.saturating_mul(10);
    let mut left = count;
    // The PEL from `start`, read a chunk at a time.
    const CHUNK: usize = 256;
    let mut pel: Vec<(StreamId, Nack)> = Vec::new();
    let mut bad = false;
    let space = group_space(TAG_PEL, group);
    let mut from = start.to_be_bytes().to_vec();
    let mut done = AutoClaimed::default();
    let mut b = WriteBatch::new();
    let (mut touched, mut created) = (false, false);
    'outer: loop {
        pel.clear();
        rec.walk(&space, &from, |rest, v| {
            match (StreamId::from_be_bytes(rest).filter(|_| rest.len() == 16), Nack::decode(v)) {
                (Some(id), Some(n)) => pel.push((id, n)),
                _ => bad = true,
            }
            !bad && pel.len() < CHUNK
        })?;
        if bad {
            return Err(corrupt("pending entry"));
        }
        let full = pel.len() >= CHUNK;
        let mut i = 0;
        while i < pel.len() {
            if attempts == 0 || left == 0 {
                done.cursor = pel[i].0;
                break 'outer;
            }
            attempts -= 1;
            let (id, nack) = pel[i].clone();
            i += 1;
            let Some(fields) = entries::get(&rec, id)? else {
                txn.drop_nack(&mut b, id)?;
                done.deleted.push(id);
                done.effects.pel.push((id, nack, txn.g.last_id));
                left -= 1;
                continue;
            };
            if min_idle > 0 && now.saturating_sub(nack.delivery_ms) < min_idle {
                continue;
            }
            if !touched {
                created = txn.touch_consumer(consumer)?;
                touched = true;
            }
            let mut nack = nack;
            nack.delivery_ms = now;
            if !justid {
                nack.deliveries += 1;
            }
            nack.consumer = consumer.to_vec();
            txn.put_nack(&mut b, id, nack.clone())?;
            done.effects.pel.push((id, nack, txn.g.last_id));
            done.claimed.push((id, (!justid).then_some(fields)));
            left -= 1;
        }
        if !full {
            // The PEL ended: as Redis, the cursor is 0-0.
            done.cursor = StreamId::MIN;
            break;
        }
        let Some(next) = pel.last().and_then(|(id, _)| id.incr()) else {
            done.cursor = StreamId::MIN;
            break;
        };
        from = next.to_be_bytes().to_vec();
    }
    txn.finish(&mut b);
    ks.write(b)?;
    if created {
        ks.notify(STREAM, "xgroup-createconsumer", key);
    }
    Ok(done)
}
