//! A key's value as a [`Value`] and back: what DUMP reads and RESTORE writes. Both hold the
//! key's lock, so DUMP reads one state of the key (its metadata and every record under it),
//! and RESTORE's existence check and its one batch (a fresh generation of records and the
//! metadata) come with no other write between them.

use super::{PendingEntry, StreamConsumer, StreamGroup, StreamNode, StreamValue, Value};
use crate::types::compact_hash;
use crate::types::error::{Result, TypeError};
use crate::types::keyspace::Keyspace;
use crate::types::metadata::{Kind, Meta, LIST_MIDDLE};
use crate::types::notify::GENERIC;
use crate::types::stream::entries::{encode_pairs, Entry};
use crate::types::stream::group::{put_whole, Nack, WholeGroup};
use crate::types::stream::node::Node;
use crate::types::stream::{self, info, Stream, StreamId, TAG_NODE};
use crate::types::{hash, score, subkey};
use strata::WriteBatch;

/// DUMP: the value at `key`; `None` when there is no such key.
pub fn read(ks: &Keyspace, key: &[u8]) -> Result<Option<Value>> {
    let _g = ks.store.locks.lock(&[key]);
    let Some(m) = ks.meta(key)? else { return Ok(None) };
    read_of(ks, key, m).map(Some)
}

/// The value at `key` whose metadata is `m`, read by a caller that holds the key's lock
/// (MIGRATE, which also sends the expiry `m` has).
pub fn read_of(ks: &Keyspace, key: &[u8], m: Meta) -> Result<Value> {
    let st = ks.store;
    let corrupt = |what: &str| TypeError::Corrupt(format!("{what} of a key DUMP reads"));
    Ok(match m.kind {
        Kind::String => Value::String(m.value.into_vec()),
        Kind::Hash => {
            let mut pairs = Vec::with_capacity(m.size as usize);
            hash::for_each(ks, key, &m, |f, v| {
                pairs.push((f.to_vec(), v.to_vec()));
                true
            })?;
            Value::Hash(pairs)
        }
        Kind::Set => {
            let mut members = Vec::with_capacity(m.size as usize);
            ks.scan(&st.sub_cf, key, m.version, b"", false, |f, _| {
                members.push(f.to_vec());
                true
            })?;
            Value::Set(members)
        }
        Kind::List => {
            let mut items = Vec::with_capacity(m.size as usize);
            ks.scan(&st.sub_cf, key, m.version, b"", false, |_, v| {
                items.push(v.to_vec());
                true
            })?;
            Value::List(items)
        }
        Kind::ZSet => {
            let mut pairs = Vec::with_capacity(m.size as usize);
            let mut bad = false;
            ks.scan(&st.score_cf, key, m.version, b"", false, |f, _| {
                match score::split_index_suffix(f) {
                    Some((s, member)) => pairs.push((member.to_vec(), s)),
                    None => bad = true,
                }
                !bad
            })?;
            if bad {
                return Err(corrupt("a score index entry"));
            }
            Value::ZSet(pairs)
        }
        Kind::Stream => Value::Stream(Box::new(read_stream(ks, key, &m)?)),
    })
}

/// A stream's entries grouped by the nodes that hold them (an entry before every node, which
/// no write leaves, gets a node of its own), its counters and its groups.
fn read_stream(ks: &Keyspace, key: &[u8], m: &Meta) -> Result<StreamValue> {
    let s = Stream::from_meta(m)?;
    let full = info::stream_full(ks, key, 0)?.ok_or(TypeError::NoSuchKey)?;
    let mut records = Vec::new();
    let mut bad = false;
    stream::records(ks, key, &s).walk(&[TAG_NODE], b"", |rest, v| {
        match StreamId::from_be_bytes(rest).filter(|_| rest.len() == 16) {
            Some(master) => match Node::decode(master, v) {
                Some(n) => records.push(n),
                None => bad = true,
            },
            None => bad = true,
        }
        !bad
    })?;
    if bad {
        return Err(TypeError::Corrupt("stream node".into()));
    }
    let node_of = |n: &Node| StreamNode {
        master: n.master,
        master_fields: n.master_fields.clone(),
        entries: Vec::new(),
        deleted: 0,
        last: n.last,
        body_bytes: n.body_bytes,
    };
    let mut nodes: Vec<StreamNode> = Vec::new();
    let (mut next, mut current) = (0usize, None::<usize>);
    for e in full.entries {
        while next < records.len() && records[next].master <= e.id {
            next += 1;
        }
        let holder = next.checked_sub(1);
        if holder.is_some() && holder != current {
            current = holder;
            nodes.push(node_of(&records[next - 1]));
        } else if nodes.is_empty() {
            let fields = e.pairs.iter().step_by(2).cloned().collect();
            nodes.push(StreamNode {
                master: e.id,
                master_fields: fields,
                entries: Vec::new(),
                deleted: 0,
                last: e.id,
                body_bytes: 0,
            });
        }
        if let Some(n) = nodes.last_mut() {
            n.last = n.last.max(e.id);
            n.entries.push(e);
        }
    }
    let groups = full
        .groups
        .into_iter()
        .map(|g| StreamGroup {
            name: g.info.name,
            last_id: g.info.last_id,
            entries_read: g.info.entries_read,
            pending: g
                .pending
                .into_iter()
                .map(|(id, consumer, delivery_ms, deliveries)| PendingEntry {
                    id,
                    delivery_ms,
                    deliveries,
                    consumer,
                })
                .collect(),
            consumers: g
                .consumers
                .into_iter()
                .map(|c| StreamConsumer { name: c.name, seen_ms: c.seen_ms })
                .collect(),
        })
        .collect();
    Ok(StreamValue {
        nodes,
        length: s.length,
        last_id: s.last_id,
        first_id: s.first_id,
        max_deleted: s.max_deleted,
        entries_added: s.entries_added,
        groups,
    })
}

/// What [`restore`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The key holds the value.
    Written,
    /// The expiry was already past: no key was made, and an existing key (REPLACE) was
    /// deleted (`true`) or there was none.
    Expired(bool),
    /// The key exists and REPLACE was not given: nothing changed.
    Busy,
}

/// RESTORE: makes `key` hold `value` with expiry `expire_ms` (absolute Unix ms, 0: none),
/// replacing an existing key only with `replace`; an expiry not after now makes no key (and
/// deletes the one replaced), as Redis does. One batch: a fresh generation of the value's
/// records and its metadata. Raises `new` and `restore` on the key, or `del` when the key
/// replaced was deleted.
pub fn restore(
    ks: &Keyspace,
    key: &[u8],
    value: &Value,
    expire_ms: u64,
    replace: bool,
) -> Result<Restored> {
    let _g = ks.store.locks.lock(&[key]);
    let exists = ks.meta(key)?.is_some();
    if exists && !replace {
        return Ok(Restored::Busy);
    }
    let mut b = WriteBatch::new();
    if crate::types::keyspace::past(expire_ms, ks.now_ms) {
        if exists {
            ks.delete_meta(&mut b, key);
            ks.write(b)?;
            ks.notify(GENERIC, "del", key);
        }
        return Ok(Restored::Expired(exists));
    }
    let mut m = put_value(ks, &mut b, key, value)?;
    m.expire_ms = expire_ms;
    ks.put_meta(&mut b, key, &m);
    ks.write(b)?;
    // Redis makes the key anew even when it replaces one.
    ks.notify_new(true, key);
    ks.notify(GENERIC, "restore", key);
    Ok(Restored::Written)
}

/// Gives `key` the last use RESTORE's IDLETIME and FREQ, or an RDB's IDLE and FREQ records,
/// say: as Redis, FREQ counts under an LFU policy, IDLETIME under the others. After the key's
/// write (which is a use).
pub fn set_use(ks: &Keyspace, key: &[u8], idle_secs: Option<u64>, freq: Option<u8>) {
    let f = &ks.store.frequencies;
    match (idle_secs, freq) {
        (Some(secs), _) if !f.counting() => ks.store.meta_cache.set_idle(ks.store.space, key, secs),
        (_, Some(n)) if f.counting() => f.set(ks.store.space, key, n),
        _ => {}
    }
}

/// Keys a [`BulkLoad`] puts in one batch at most.
const BULK_KEYS: usize = 1024;
/// Bytes past which a [`BulkLoad`] writes its batch.
const BULK_BYTES: usize = 1 << 20;

/// Writes the keys of a whole dataset into a database emptied for it (a full sync's or a
/// dump's load), faster than a RESTORE a key: no key is looked for (there is none; a file
/// that names a key twice leaves its last value, as RESTORE's REPLACE would), no event is
/// raised (Redis raises none while it loads), no entry is put in the metadata cache
/// (`Store::put_meta_loaded`), and many keys go in one batch, written when it holds
/// [`BULK_KEYS`] keys or [`BULK_BYTES`] bytes and at [`BulkLoad::finish`]. The caller keeps
/// other writers of the database away until then (a load replies LOADING to them), and
/// clears the metadata cache once the load is written.
#[derive(Default)]
pub struct BulkLoad {
    batch: WriteBatch,
    keys: usize,
    /// The keys of the batch with a last use to set once it is written ([`set_use`]).
    uses: Vec<(Vec<u8>, Option<u64>, Option<u8>)>,
}

impl BulkLoad {
    /// Puts `key` with `value` and expiry `expire_ms` (absolute Unix ms, 0: none) of the
    /// database `ks` into the batch, with the last use `idle_secs` and `freq` say
    /// ([`set_use`]), and writes the batch if it is full; false when the expiry is past (no
    /// key, as RESTORE's rule: never inside `as_master`).
    pub fn add(
        &mut self,
        ks: &Keyspace,
        key: &[u8],
        value: &Value,
        expire_ms: u64,
        (idle_secs, freq): (Option<u64>, Option<u8>),
    ) -> Result<bool> {
        if crate::types::keyspace::past(expire_ms, ks.now_ms) {
            return Ok(false);
        }
        let mut m = put_value(ks, &mut self.batch, key, value)?;
        m.expire_ms = expire_ms;
        ks.store.put_meta_loaded(&mut self.batch, key, &m.encode());
        if idle_secs.is_some() || freq.is_some() {
            self.uses.push((key.to_vec(), idle_secs, freq));
        }
        self.keys += 1;
        if self.keys >= BULK_KEYS || self.batch.size_in_bytes() >= BULK_BYTES {
            self.finish(ks)?;
        }
        Ok(true)
    }

    /// Writes what the batch holds into `ks`'s store (the database of every key added since
    /// the last write).
    pub fn finish(&mut self, ks: &Keyspace) -> Result<()> {
        if self.keys == 0 {
            return Ok(());
        }
        self.keys = 0;
        ks.write(std::mem::take(&mut self.batch))?;
        for (key, idle_secs, freq) in self.uses.drain(..) {
            set_use(ks, &key, idle_secs, freq);
        }
        Ok(())
    }
}

/// Puts the records of `value` under `key` at a fresh version into `b`; its metadata (to
/// put after its expiry is set).
fn put_value(ks: &Keyspace, b: &mut WriteBatch, key: &[u8], value: &Value) -> Result<Meta> {
    let st = ks.store;
    Ok(match value {
        Value::String(s) => Meta::string(s.clone(), 0),
        Value::List(items) => {
            let mut m = Meta::composite(Kind::List, st.new_version());
            for (i, e) in items.iter().enumerate() {
                let idx = LIST_MIDDLE + i as u64;
                b.put_cf(
                    &*st.sub_cf,
                    subkey::encode(st.filing, key, m.version, &idx.to_be_bytes()),
                    e,
                );
            }
            m.size = items.len() as u64;
            m.tail = LIST_MIDDLE + m.size;
            m
        }
        Value::Set(members) => {
            let mut m = Meta::composite(Kind::Set, st.new_version());
            for mem in members {
                b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, mem), b"");
            }
            m.size = members.len() as u64;
            m
        }
        Value::ZSet(pairs) => {
            let mut m = Meta::composite(Kind::ZSet, st.new_version());
            for (mem, s) in pairs {
                b.put_cf(
                    &*st.sub_cf,
                    subkey::encode(st.filing, key, m.version, mem),
                    s.to_bits().to_le_bytes(),
                );
                b.put_cf(&*st.score_cf, score::index_key(st.filing, key, m.version, *s, mem), b"");
            }
            m.size = pairs.len() as u64;
            m
        }
        Value::Hash(pairs) => {
            let limits = ks.hash_limits;
            let compact = pairs.len() <= limits.entries()
                && pairs
                    .iter()
                    .all(|(f, v)| f.len() <= limits.value() && v.len() <= limits.value());
            if compact {
                // In the value's order: a listpack's is Redis's insertion order.
                let payload =
                    compact_hash::encode(pairs.iter().map(|(f, v)| (f.as_slice(), v.as_slice())));
                hash::mark_order(ks, &payload)?;
                let mut m = Meta::compact_hash();
                m.value = payload.into();
                m.size = pairs.len() as u64;
                return Ok(m);
            }
            let mut m = Meta::composite(Kind::Hash, st.new_version());
            for (f, v) in pairs {
                b.put_cf(&*st.sub_cf, subkey::encode(st.filing, key, m.version, f), v);
            }
            m.size = pairs.len() as u64;
            m
        }
        Value::Stream(sv) => put_stream(ks, b, key, sv).to_meta(),
    })
}

/// Puts a stream's records (entries, nodes, groups) into `b`; its counters.
fn put_stream(ks: &Keyspace, b: &mut WriteBatch, key: &[u8], sv: &StreamValue) -> Stream {
    let mut s = Stream::new(ks.store.new_version());
    s.length = sv.length;
    s.last_id = sv.last_id;
    s.first_id = sv.first_id;
    s.max_deleted = sv.max_deleted;
    s.entries_added = sv.entries_added;
    let rec = stream::records(ks, key, &s);
    // A node whose entries are all deleted holds nothing: Redis would have dropped it.
    for n in sv.nodes.iter().filter(|n| !n.entries.is_empty()) {
        let node = Node {
            master: n.master,
            live: n.entries.len() as u64,
            deleted: n.deleted,
            last: n.last,
            body_bytes: n.body_bytes,
            master_fields: n.master_fields.clone(),
        };
        rec.put(b, &stream::node_field(n.master), &node.encode());
        for Entry { id, pairs } in &n.entries {
            rec.put(b, &stream::entry_field(*id), &encode_pairs(pairs));
        }
        s.nodes += 1;
    }
    for g in &sv.groups {
        let whole = WholeGroup {
            name: &g.name,
            last_id: g.last_id,
            entries_read: g.entries_read,
            pel: g
                .pending
                .iter()
                .map(|p| {
                    let nack = Nack {
                        delivery_ms: p.delivery_ms,
                        deliveries: p.deliveries,
                        consumer: p.consumer.clone(),
                    };
                    (p.id, nack)
                })
                .collect(),
            consumers: g.consumers.iter().map(|c| (c.name.as_slice(), c.seen_ms)).collect(),
        };
        put_whole(&rec, b, &whole);
        s.groups += 1;
    }
    s
}
