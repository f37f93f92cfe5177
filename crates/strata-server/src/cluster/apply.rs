//! The state machine of every group on a node ([`ServerApply`]): a committed entry is one
//! command's `WriteBatch` (`Store::write` on the leader proposed it, [`encode_proposal`]),
//! applied as it is, in the same engine batch as the group's applied id.
//!
//! ```text
//!  entry:    [writers] metadata id u32LE | subkey id u32LE | zscore id u32LE | write batch
//!  writers:  fd ff ff ff | proposer node u64LE | batches u32LE
//!            | per batch, in the write batch's order: client id u64LE (0: the server's own
//!              write) | records u32LE
//! ```
//!
//! The ids are the proposer's for its three data families: a batch's records name families
//! by id, and nodes need not give them the same ones (a family's id comes from the DB's
//! history), so a replica moves each record into its own family of the same name
//! (`WriteBatch::append_remapped`).
//!
//! The writers part is there only while a client of the proposer tracks with NOLOOP
//! (`Tracking::any_noloop`): it says which client's command wrote each run of the batch's
//! records (an entry joins several commands' batches, `super::proposals`), so that the
//! proposer, applying the entry, does not tell a NOLOOP client of its own changes. Client ids
//! are the proposer's own: other nodes apply the entry as if it had no writers part. Its
//! first four bytes are no family id's, nor a control or ingest entry's.
//!
//! What it checks and keeps:
//! - The entry decodes (header, then `WriteBatch::from_data`, which validates every record),
//!   every record is in one of the three data families, and every key is filed under the
//!   group's partition and one of its slots (`crate::filing`): anything else is an apply error, which stops the group, never
//!   a write into another partition's data or another family.
//! - The metadata cache: every key the batch writes is noted as changed while the entry is
//!   applied, and the notes are settled after the engine write (`after_write`), on the same
//!   thread, so no replica serves a cached record the log replaced (`meta_cache` contract).
//!   A snapshot install, and an entry with a range deletion (FLUSHALL of the partition),
//!   clear the cache and the pop hints.
//! - Active expiry: each key with an expiry an entry writes is noted in the replica's due
//!   index (`crate::storage::due`), on every replica, so a node that comes to lead the
//!   partition has them when they are due.
//! - Client-side caching (`crate::tracking`): while some client tracks, the user keys an
//!   entry's records belong to are noted while it is applied and their invalidations sent
//!   after the write, on every replica, so every node tells its own clients. An install, a
//!   range deletion, a slot's ingestion and the removal of the node's replica tell every
//!   tracking client to flush.
//!
//! The meta group ([`META`]) has the same state machine: its entries change the cluster map
//! (`super::map`), and each map applied is published, after its write, to the node's
//! watchers ([`ServerApply::maps`]).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use strata::{Db, WriteBatch};
use strata_replication::{Apply, GroupId, KeyRange, NodeId};
use tokio::sync::watch;

use super::ingest;
use super::map::{self, ClusterMap, META};
use super::outbox;
use super::ownership::{self, decode_control, Change, Op, Ownership, State};
use super::partitions::Partitions;
use super::proposals::Writers;
use crate::filing::Filing;
use crate::slots::SLOTS;
use crate::storage::moving::encode_changes;
use crate::storage::{partition_space, Store};
use crate::tracking::Tracking;

thread_local! {
    /// Whether the entry this thread is applying deletes a range: its cached metadata and
    /// pop hints are dropped after the write (`after_write` runs on the applying thread).
    static RANGE_DELETED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The slot state a control entry being applied on this thread gives (partition, slot),
    /// recorded in memory once its write is done.
    static OWNED: std::cell::Cell<Option<(u16, u16, Change)>> =
        const { std::cell::Cell::new(None) };
    /// What the data entry being applied on this thread changed, for client-side caching
    /// (each user key with the client that changed it, when the entry says): told once its
    /// write is done.
    static CHANGED: std::cell::RefCell<Changed> =
        const { std::cell::RefCell::new(Changed::Nothing) };
}

/// What a data entry changed, for client-side caching's invalidations.
enum Changed {
    /// No data entry (a control or ingest entry: these tell clients to flush, or nothing).
    Nothing,
    /// The user keys of its records and their writers (the clients of this node whose
    /// commands wrote them, where the entry names them), noted while some client tracked.
    Keys(Vec<(Vec<u8>, Option<u64>)>),
    /// Applied while no client tracked: one that tracks once it is written began in
    /// between, and may have read a key the entry changed, which nobody noted.
    Unnoted,
}

/// Collects the user keys a batch's records belong to: a metadata record's key is
/// `lead | user key`, a sub-key's and a score index entry's `lead | key_len | user key | ...`
/// (`types::subkey`). `ids`: the metadata, sub-key and score families' ids in the batch.
/// Each key goes with the writer of its record: `writers` gives them run by run, in record
/// order (empty: no writer for any).
struct ChangedKeys {
    filing: Filing,
    ids: [u32; 3],
    keys: Vec<(Vec<u8>, Option<u64>)>,
    writers: std::vec::IntoIter<(Option<u64>, u32)>,
    /// The writer of the current run and how many of its records are left.
    run: (Option<u64>, u32),
}

impl ChangedKeys {
    fn new(filing: Filing, ids: [u32; 3], writers: Writers) -> Self {
        ChangedKeys { filing, ids, keys: Vec::new(), writers: writers.into_iter(), run: (None, 0) }
    }

    /// The writer of the next record.
    fn writer(&mut self) -> Option<u64> {
        while self.run.1 == 0 {
            match self.writers.next() {
                Some(run) => self.run = run,
                None => return None,
            }
        }
        self.run.1 -= 1;
        self.run.0
    }

    fn take(&mut self, cf: u32, key: &[u8]) {
        let writer = self.writer();
        if cf == self.ids[0] {
            self.keys.push((key[self.filing.len().min(key.len())..].to_vec(), writer));
        } else if self.ids[1..].contains(&cf) {
            if let Some(parts) = crate::types::subkey::decode(self.filing, key) {
                self.keys.push((parts.key.to_vec(), writer));
            }
        }
    }
}

impl strata::WriteBatchIteratorCf for ChangedKeys {
    fn put_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
        self.take(cf, key);
    }
    fn delete_cf(&mut self, cf: u32, key: &[u8]) {
        self.take(cf, key);
    }
    fn merge_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
        self.take(cf, key);
    }
    fn delete_range_cf(&mut self, _: u32, _: &[u8], _: &[u8]) {
        // Names no key (the entry tells every client to flush), but is one writer's record.
        self.writer();
    }
}

/// Notes in the due index (`storage::due`) the metadata records with an expiry a batch puts
/// (`meta`: the metadata family's id in the batch): every replica indexes the keys it
/// applies, so whichever node leads the partition when one is due deletes it then, not once
/// its walk reaches it.
struct DueNotes<'a> {
    store: &'a Store,
    meta: u32,
}

impl strata::WriteBatchIteratorCf for DueNotes<'_> {
    fn put_cf(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        if cf == self.meta {
            self.store.due.note_record(self.store.set, key, value);
        }
    }
    fn delete_cf(&mut self, _: u32, _: &[u8]) {}
    fn merge_cf(&mut self, _: u32, _: &[u8], _: &[u8]) {}
}

/// Bytes of an entry's header: the proposer's three family ids.
const HEADER: usize = 12;

/// The first bytes of an entry's writers part (module doc).
const WRITERS: [u8; 4] = [0xfd, 0xff, 0xff, 0xff];

/// The entry that replicates `batch`, commands' writes to `store`'s data families; with
/// `writers`, the proposing node and the writer of each run of its records (module doc).
pub fn encode_proposal(
    store: &Store,
    batch: &WriteBatch,
    writers: Option<(NodeId, &Writers)>,
) -> Vec<u8> {
    let named = writers.map_or(0, |(_, w)| 16 + 12 * w.len());
    let mut out = Vec::with_capacity(named + HEADER + batch.data().len());
    if let Some((node, writers)) = writers {
        out.extend_from_slice(&WRITERS);
        out.extend_from_slice(&node.to_le_bytes());
        out.extend_from_slice(&(writers.len() as u32).to_le_bytes());
        for (client, records) in writers {
            out.extend_from_slice(&client.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&records.to_le_bytes());
        }
    }
    for cf in [&store.meta_cf, &store.sub_cf, &store.score_cf] {
        out.extend_from_slice(&cf.id().to_le_bytes());
    }
    out.extend_from_slice(batch.data());
    out
}

/// An entry's writers part: the node that proposed it and its batches' writers.
type Named = (NodeId, Writers);

/// An entry's writers part, if it has one, and the rest of the entry; or why the part is
/// damaged.
fn split_writers(entry: &[u8]) -> Result<(Option<Named>, &[u8]), String> {
    let Some(rest) = entry.strip_prefix(&WRITERS) else { return Ok((None, entry)) };
    let short = || format!("its writers part is cut short ({} bytes in all)", entry.len());
    let (node, rest) = rest.split_first_chunk::<8>().ok_or_else(short)?;
    let (n, mut rest) = rest.split_first_chunk::<4>().ok_or_else(short)?;
    let n = u32::from_le_bytes(*n) as usize;
    if rest.len() / 12 < n {
        return Err(short());
    }
    let mut writers = Writers::with_capacity(n);
    for _ in 0..n {
        let (client, tail) = rest.split_first_chunk::<8>().ok_or_else(short)?;
        let (records, tail) = tail.split_first_chunk::<4>().ok_or_else(short)?;
        let client = u64::from_le_bytes(*client);
        writers.push(((client != 0).then_some(client), u32::from_le_bytes(*records)));
        rest = tail;
    }
    Ok((Some((u64::from_le_bytes(*node), writers)), rest))
}

/// Applies committed write batches to a node's store.
pub struct ServerApply {
    store: Arc<Store>,
    partitions: Partitions,
    /// The partitions' slot states (`super::ownership`), shared with the node's router.
    ownership: Arc<Ownership>,
    /// The map applied last (`None` before any), published after its write.
    maps: watch::Sender<Option<Arc<ClusterMap>>>,
    /// The map the meta entry being applied writes, until its write is done.
    pending_map: Mutex<Option<ClusterMap>>,
    /// Where an ingest entry's table files are written before the engine takes them.
    scratch: PathBuf,
    /// The server's client-side caching, told of every change a data entry makes (set once
    /// the server's state exists; no client tracks before).
    tracking: OnceLock<Arc<Tracking>>,
    /// This node's id: the entries it proposed name its clients as their writers.
    me: OnceLock<NodeId>,
}

impl ServerApply {
    /// Tells `tracking` of every change the data entries make from now on (every replica
    /// applies every entry, so a tracking client hears of a change whichever node it reads
    /// from), but a NOLOOP client's own changes in the entries node `me` (this one)
    /// proposed. Set once; a second call changes nothing.
    pub fn track_with(&self, tracking: Arc<Tracking>, me: NodeId) {
        let _ = self.tracking.set(tracking);
        let _ = self.me.set(me);
    }

    /// The state machine of `store`'s groups, the slots split into `partitions`, writing
    /// the table files of slot copies under `scratch`. Publishes the map `store` holds, if
    /// any (an unreadable one is an error naming it).
    pub fn new(
        store: Arc<Store>,
        partitions: Partitions,
        scratch: PathBuf,
    ) -> Result<ServerApply, String> {
        let stored = ClusterMap::load(&store)?.map(Arc::new);
        // No group applies yet: a table file left here was written for an entry a crash
        // interrupted, which applies again and writes it again, or which a snapshot
        // install made moot.
        let _ = std::fs::remove_dir_all(&scratch);
        let (maps, _) = watch::channel(stored);
        let ownership = Arc::new(Ownership::load(&store, partitions)?);
        let pending_map = Mutex::new(None);
        let (tracking, me) = (OnceLock::new(), OnceLock::new());
        Ok(ServerApply { store, partitions, ownership, maps, pending_map, scratch, tracking, me })
    }

    /// A partition's data was replaced or deleted without naming its keys (an install, a
    /// range deletion, the replica's removal): nothing cached of it holds, and every tracking
    /// client is told.
    fn forget_cached(&self) {
        self.store.meta_cache.clear();
        self.store.pop_hints.clear();
        if let Some(t) = self.tracking.get() {
            t.flush();
        }
    }

    /// The partitions' slot states as applied here.
    pub fn ownership(&self) -> Arc<Ownership> {
        self.ownership.clone()
    }

    /// The cluster map as applied here: the stored one at start, then each one the meta
    /// group applies.
    pub fn maps(&self) -> watch::Receiver<Option<Arc<ClusterMap>>> {
        self.maps.subscribe()
    }

    /// The slots of `group`'s partition; `None` for a group that is not a partition.
    fn slots(&self, group: GroupId) -> Option<(u16, u16)> {
        let p = u16::try_from(group.0).ok().filter(|p| *p < self.partitions.count())?;
        Some(self.partitions.slots(p))
    }
}

impl Apply for ServerApply {
    fn apply(
        &self,
        db: &Db,
        group: GroupId,
        index: u64,
        command: &[u8],
        batch: &mut WriteBatch,
    ) -> Result<Vec<u8>, String> {
        if group == META {
            let (reply, new) = map::apply_change(db, &self.store, index, command, batch)?;
            *self.pending_map.lock() = new;
            return Ok(reply);
        }
        if self.slots(group).is_none() {
            return Err(format!("{group} is not a partition of {} ", self.partitions.count()));
        }
        let partition = group.0 as u16;
        let space = partition_space(partition);
        let filing = Filing::Partition(partition);
        match ingest::decode(command) {
            Ok(None) => {}
            // The same on every replica: refused, nothing written.
            Err(e) => return Ok(format!("-ERR entry {index} of {group}: {e}").into_bytes()),
            Ok(Some((slot, records))) => {
                if !matches!(self.ownership.state(partition, slot), Some(State::Importing(_))) {
                    let now = self.ownership.describe(partition, slot);
                    let reply = format!(
                        "-ERR slot {slot} is not being imported into partition {partition}: \
                         it is {now}"
                    );
                    return Ok(reply.into_bytes());
                }
                let name = format!("{}-{index}", group.0);
                let n = ingest::ingest(db, &self.store, &self.scratch, partition, &name, &records)
                    .map_err(|e| format!("entry {index} of {group}: {e}"))?;
                // Keys no batch named changed: nothing cached of the partition stays.
                RANGE_DELETED.with(|r| r.set(true));
                return Ok(n.to_string().into_bytes());
            }
        }
        let control =
            decode_control(command).map_err(|e| format!("entry {index} of {group}: {e}"))?;
        if let Some((op, slot, peer)) = control {
            if slot >= SLOTS || peer >= self.partitions.count() || peer == partition {
                let reply = format!("-ERR slot {slot} or partition {peer} is out of range");
                return Ok(reply.into_bytes());
            }
            let (reply, next) = self.ownership.apply(&self.store, partition, op, slot, peer, batch);
            if let Some(n) = next {
                OWNED.with(|o| o.set(Some((partition, slot, n))));
                if matches!(op, Op::Import | Op::Release | Op::Abort) {
                    RANGE_DELETED.with(|r| r.set(true));
                }
            }
            return Ok(reply);
        }
        let (writers, command) =
            split_writers(command).map_err(|e| format!("entry {index} of {group}: {e}"))?;
        let Some((header, data)) = command.split_first_chunk::<HEADER>() else {
            return Err(format!(
                "entry {index} of {group} is {} bytes, shorter than its header",
                command.len()
            ));
        };
        let id =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let theirs = [id(0), id(4), id(8)];
        let ours =
            [&self.store.meta_cf, &self.store.sub_cf, &self.store.score_cf].map(|cf| cf.id());
        let b = WriteBatch::try_from_data(data)
            .map_err(|e| format!("entry {index} of {group} is not a write batch: {e}"))?;
        // The writers are this node's clients only where it proposed the entry.
        let writers = match writers {
            Some((node, w)) => {
                let records: u64 = w.iter().map(|(_, n)| u64::from(*n)).sum();
                if records != b.len() as u64 {
                    return Err(format!(
                        "entry {index} of {group} names writers of {records} records, \
                         its batch has {}",
                        b.len()
                    ));
                }
                if self.me.get() == Some(&node) {
                    w
                } else {
                    Writers::new()
                }
            }
            None => Writers::new(),
        };
        // Every key is filed under the group's partition; a range deletion ends inside it.
        let (_, bound) = filing.span();
        for (k, end) in b.keys() {
            let slot = filing.slot_of(k).filter(|s| *s < SLOTS);
            let inside = Filing::partition_of(k) == Some(partition)
                && slot.is_some()
                && end.is_none_or(|e| e <= &bound[..] && e > k);
            if !inside {
                return Err(format!(
                    "entry {index} of {group} writes key {:?}, outside the partition's prefix",
                    String::from_utf8_lossy(k)
                ));
            }
            // Each slot written must be one the partition takes writes for as of this entry:
            // a write proposed before the slot's freeze was applied lands before it
            // (`super::node`), so this refuses only what a deposed leader could send. The
            // entry writes nothing and its proposers get the reply.
            let first = slot.unwrap_or_default();
            let last = match end {
                None => first,
                // The last slot a range deletion reaches: its end's, unless the end is that
                // slot's first key.
                Some(e) if Filing::partition_of(e) != Some(partition) => SLOTS - 1,
                Some(e) => match filing.slot_of(e) {
                    Some(s) if e.len() == filing.len() => s.saturating_sub(1).max(first),
                    Some(s) => s.min(SLOTS - 1),
                    None => SLOTS - 1,
                },
            };
            if let Some(s) = (first..=last).find(|s| !self.ownership.takes_writes(partition, *s)) {
                self.store.meta_cache.invalidate_noted(false);
                let reply = format!(
                    "-TRYAGAIN slot {s} is moving or has moved from partition {partition}; \
                     nothing was written"
                );
                return Ok(reply.into_bytes());
            }
            // A metadata key is lead | user key; noting the tail of a sub-key as a user key
            // only drops a cache entry that is not there.
            self.store.meta_cache.note_write(space, &k[filing.len()..], None);
            if end.is_some() {
                // A range deletion (FLUSHALL of the partition) drops keys it does not name.
                RANGE_DELETED.with(|r| r.set(true));
            }
        }
        batch
            .append_remapped(&b, |cf| theirs.iter().position(|t| *t == cf).map(|i| ours[i]))
            .map_err(|e| format!("entry {index} of {group}: {e}"))?;
        b.iterate_cf(&mut DueNotes { store: &self.store, meta: theirs[0] });
        let changed = if self.tracking.get().is_some_and(|t| t.active()) {
            let mut changed = ChangedKeys::new(filing, theirs, writers);
            b.iterate_cf(&mut changed);
            Changed::Keys(changed.keys)
        } else {
            Changed::Unnoted
        };
        CHANGED.with(|c| *c.borrow_mut() = changed);
        // What the entry writes to a slot being copied goes to its outbox too, in the same
        // batch (`super::outbox`).
        let copying = self.ownership.copying(partition);
        if !copying.is_empty() {
            for (slot, changes) in outbox::collect(&b, &theirs, partition, &copying) {
                let key = outbox::key(partition, slot, index);
                batch.put_cf(&*self.store.server_cf, key, encode_changes(&changes));
            }
        }
        Ok(Vec::new())
    }

    fn ranges(&self, group: GroupId) -> Vec<KeyRange> {
        if group == META {
            let cf = self.store.server_cf.name().to_string();
            return vec![KeyRange {
                cf,
                start: map::META_START.to_vec(),
                end: map::META_END.to_vec(),
            }];
        }
        if self.slots(group).is_none() {
            return Vec::new();
        }
        // Every record filed under the partition: its prefix in each family; its slots'
        // states, and the outboxes of the slots it is copying out.
        let p = group.0 as u16;
        let mut ranges: Vec<KeyRange> = self
            .store
            .view_ranges_of(Filing::Partition(p))
            .into_iter()
            .map(|(cf, start, end)| KeyRange { cf: cf.name().to_string(), start, end })
            .collect();
        let server = self.store.server_cf.name();
        for (start, end) in [ownership::ranges_of(p), outbox::range_of(p)] {
            ranges.push(KeyRange { cf: server.to_string(), start, end });
        }
        ranges
    }

    fn after_write(&self, group: GroupId, written: bool) {
        if group == META {
            if let Some(m) = self.pending_map.lock().take().filter(|_| written) {
                self.maps.send_replace(Some(Arc::new(m)));
            }
            return;
        }
        self.store.meta_cache.invalidate_noted(written);
        if let Some((p, slot, change)) = OWNED.with(std::cell::Cell::take) {
            if written {
                self.ownership.settle(p, slot, change);
            }
        }
        let changed = CHANGED.with(|c| std::mem::replace(&mut *c.borrow_mut(), Changed::Nothing));
        // A range deletion refused whole (TRYAGAIN) deleted nothing: its caches hold.
        if RANGE_DELETED.with(|r| r.replace(false)) && written {
            self.forget_cached();
            return;
        }
        let Some(t) = self.tracking.get().filter(|_| written) else { return };
        match changed {
            Changed::Keys(keys) if !keys.is_empty() => {
                for (by, keys) in by_writer(keys) {
                    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                    t.invalidate(by, &keys);
                }
            }
            // A client that began tracking while the entry was applied is told to flush.
            Changed::Unnoted if t.active_after_write() => t.flush(),
            _ => {}
        }
    }

    fn installed(&self, group: GroupId) {
        if group == META {
            match ClusterMap::load(&self.store) {
                Ok(m) => {
                    self.maps.send_replace(m.map(Arc::new));
                }
                Err(e) => self.store.db.log_info(&format!("{META} snapshot installed: {e}")),
            }
            return;
        }
        if let Err(e) = self.ownership.reload(&self.store, Some(group.0 as u16)) {
            self.store.db.log_info(&format!("{group} snapshot installed: {e}"));
        }
        // The snapshot's keys with an expiry came in unnoted: the walk looks for them at its
        // full pace (`server::tasks::WalkPace`).
        self.store.due.mark_gap();
        self.forget_cached();
    }

    fn removed(&self, group: GroupId) {
        if group != META {
            self.forget_cached();
        }
    }
}

/// An entry's changed keys grouped by who changed them, each key once, in byte order within
/// a group: a key only one client wrote goes with that client, one that several wrote (or
/// the server, or a writer the entry did not name) with none, so every other NOLOOP client
/// is told of it.
fn by_writer(mut keys: Vec<(Vec<u8>, Option<u64>)>) -> Vec<(Option<u64>, Vec<Vec<u8>>)> {
    keys.sort_unstable();
    let mut groups: Vec<(Option<u64>, Vec<Vec<u8>>)> = Vec::new();
    let mut keys = keys.into_iter().peekable();
    while let Some((key, first)) = keys.next() {
        let mut by = first;
        while let Some((_, other)) = keys.next_if(|(k, _)| *k == key) {
            if other != by {
                by = None;
            }
        }
        match groups.iter_mut().find(|(b, _)| *b == by) {
            Some((_, g)) => g.push(key),
            None => groups.push((by, vec![key])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::moving::Change;

    /// Applies `entry` of partition `p` at `index` as the group's state machine does: its
    /// batch written, then `after_write`; the reply.
    fn apply(a: &ServerApply, p: u16, index: u64, entry: &[u8]) -> String {
        let mut batch = WriteBatch::new();
        let reply = a.apply(&a.store.db, GroupId(u32::from(p)), index, entry, &mut batch).unwrap();
        let written = a.store.db.write(batch);
        a.after_write(GroupId(u32::from(p)), written.is_ok());
        written.unwrap();
        String::from_utf8(reply).unwrap()
    }

    /// The records of `slot` filed under partition `p`, in every data family.
    fn records(a: &ServerApply, p: u16, slot: u16) -> Vec<(usize, Vec<u8>, Vec<u8>)> {
        let (start, end) = Filing::Partition(p).slot_span(slot, slot);
        let mut out = Vec::new();
        for (f, cf) in a.store.families().into_iter().enumerate() {
            let mut it = a.store.db.raw_iterator_cf(&**cf);
            it.seek(&start);
            while let Some((k, v)) = it.item() {
                if k >= &end[..] {
                    break;
                }
                out.push((f, k.to_vec(), v.to_vec()));
                it.next();
            }
        }
        out
    }

    /// An applied entry's metadata records with an expiry are noted in the replica's due
    /// index, under their stored keys; records without one, and other families, are not.
    #[test]
    fn applied_records_with_an_expiry_are_noted_as_due() {
        let (dir, store) = crate::cluster::testing::store();
        let a = ServerApply::new(store.clone(), Partitions::new(4).unwrap(), dir.path().join("s"))
            .unwrap();
        let p = 1u16;
        // Slot 5000 is partition 1's (4 partitions of 4,096 slots).
        let stored = |rest: &[u8]| [&p.to_be_bytes()[..], &5000u16.to_be_bytes(), rest].concat();
        let due = crate::types::keyspace::now_ms() + 60_000;
        let string = |expire| crate::types::metadata::Meta::encode_string(b"v", expire);
        let mut b = WriteBatch::new();
        b.put_cf(&*store.meta_cf, stored(b"soon"), string(due));
        b.put_cf(&*store.meta_cf, stored(b"later"), string(due + 1));
        b.put_cf(&*store.meta_cf, stored(b"never"), string(0));
        b.put_cf(&*store.sub_cf, stored(b"sub"), string(due));
        assert_eq!(store.due.len(), 0);
        assert_eq!(apply(&a, p, 1, &encode_proposal(&store, &b, None)), "");
        assert_eq!(store.due.len(), 2);
        let taken = store.due.take_due(due + 1, 10);
        let mut keys: Vec<_> = taken.iter().map(|(_, at)| at.clone()).collect();
        keys.sort();
        assert_eq!(keys, vec![stored(b"later"), stored(b"soon")]);
    }

    /// NOLOOP in cluster mode: in an entry this node proposed, a NOLOOP client hears of
    /// the keys other writers changed, also of a key it and another both wrote, and not of
    /// those only it wrote; a client without NOLOOP hears of all. The same entry from another
    /// node names that node's clients, not this one's: everyone hears of everything.
    #[test]
    fn a_noloop_client_is_not_told_of_its_own_changes_in_this_nodes_entries() {
        use crate::pubsub::Delivery;
        use crate::tracking::Options;
        use std::collections::{BTreeMap, BTreeSet};
        use tokio::sync::mpsc::UnboundedReceiver;
        type Queues = BTreeMap<u64, UnboundedReceiver<Delivery>>;
        fn told(queues: &mut Queues, id: u64) -> BTreeSet<Vec<u8>> {
            let rx = queues.get_mut(&id).unwrap();
            let mut keys = BTreeSet::new();
            while let Ok(d) = rx.try_recv() {
                let Delivery::Invalidate { keys: Some(k), .. } = d else { panic!("{d:?}") };
                keys.extend(k.iter().cloned());
            }
            keys
        }
        let (dir, store) = crate::cluster::testing::store();
        let a = ServerApply::new(store.clone(), Partitions::new(4).unwrap(), dir.path().join("s"))
            .unwrap();
        let tracking = Arc::new(Tracking::default());
        a.track_with(tracking.clone(), 1);
        let mut queues = Queues::new();
        for (id, noloop) in [(7u64, true), (8, true), (9, false)] {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tracking.add_queue(id, tx);
            tracking.enable(id, &Options { noloop, ..Options::default() }).unwrap();
            queues.insert(id, rx);
        }
        let p = 1u16;
        let stored = |rest: &[u8]| [&p.to_be_bytes()[..], &5000u16.to_be_bytes(), rest].concat();
        let string = |v: &[u8]| crate::types::metadata::Meta::encode_string(v, 0);
        // Client 7 writes k1, client 8 k2 and k3, then 7 k3 again; the server deletes k4.
        let mut b = WriteBatch::new();
        b.put_cf(&*store.meta_cf, stored(b"k1"), string(b"a"));
        b.put_cf(&*store.meta_cf, stored(b"k2"), string(b"b"));
        b.put_cf(&*store.meta_cf, stored(b"k3"), string(b"c"));
        b.put_cf(&*store.meta_cf, stored(b"k3"), string(b"d"));
        b.delete_cf(&*store.meta_cf, stored(b"k4"));
        let writers: Writers = vec![(Some(7), 1), (Some(8), 2), (Some(7), 1), (None, 1)];
        let all = [b"k1", b"k2", b"k3", b"k4"];
        let set = |ks: &[&[u8; 2]]| ks.iter().map(|k| k.to_vec()).collect::<BTreeSet<_>>();
        for (index, proposer) in [(1, 1u64), (2, 2)] {
            for id in [7, 8, 9] {
                tracking.remember(id, &all.map(|k| &k[..]));
            }
            let entry = encode_proposal(&store, &b, Some((proposer, &writers)));
            assert_eq!(apply(&a, p, index, &entry), "");
            if proposer == 1 {
                assert_eq!(told(&mut queues, 7), set(&[b"k2", b"k3", b"k4"]));
                assert_eq!(told(&mut queues, 8), set(&[b"k1", b"k3", b"k4"]));
            } else {
                assert_eq!(told(&mut queues, 7), set(&all), "another node's client ids");
                assert_eq!(told(&mut queues, 8), set(&all), "another node's client ids");
            }
            assert_eq!(told(&mut queues, 9), set(&all));
        }
        assert_eq!(store.db.get_cf(&*store.meta_cf, stored(b"k3")).unwrap(), Some(string(b"d")));
        // A writers part that is cut short, or counts other records than the batch's: the
        // entry is refused (an apply error), nothing applied.
        let entry = encode_proposal(&store, &b, Some((1, &writers)));
        let mut out = WriteBatch::new();
        let e = a.apply(&store.db, GroupId(1), 3, &entry[..20], &mut out).unwrap_err();
        assert!(e.contains("entry 3 of") && e.contains("writers part is cut short"), "{e}");
        let short: Writers = vec![(Some(7), 1), (Some(8), 2)];
        let entry = encode_proposal(&store, &b, Some((1, &short)));
        let e = a.apply(&store.db, GroupId(1), 3, &entry, &mut out).unwrap_err();
        assert!(e.contains("names writers of 3 records, its batch has 5"), "{e}");
        assert!(out.is_empty());
    }

    #[test]
    fn keys_written_by_several_writers_go_with_none() {
        let k = |s: &str| s.as_bytes().to_vec();
        let keys = vec![
            (k("b"), Some(1)),
            (k("a"), Some(1)),
            (k("c"), Some(2)),
            (k("b"), Some(2)),
            (k("d"), None),
            (k("a"), Some(1)),
            (k("e"), Some(2)),
        ];
        let groups = by_writer(keys);
        assert_eq!(
            groups,
            vec![
                (Some(1), vec![k("a")]),
                (None, vec![k("b"), k("d")]),
                (Some(2), vec![k("c"), k("e")])
            ]
        );
    }

    /// A partition's snapshot installed brings its keys unnoted: a gap in the due index, so
    /// the expiry walk looks for them at its full pace (`server::tasks::WalkPace`); the meta
    /// group's holds no keys of the store.
    #[test]
    fn an_installed_snapshot_is_a_gap_in_the_due_index() {
        let (dir, store) = crate::cluster::testing::store();
        let a = ServerApply::new(store.clone(), Partitions::new(4).unwrap(), dir.path().join("s"))
            .unwrap();
        let gaps = store.due.gaps();
        a.installed(META);
        assert_eq!(store.due.gaps(), gaps);
        a.installed(GroupId(2));
        assert_eq!(store.due.gaps(), gaps + 1);
    }

    /// A table file an interrupted ingestion left is removed when the state machine starts;
    /// an ingest entry applied again, as after a crash between its ingestion and the write
    /// of the applied index, leaves the same records; one for a slot the partition is not
    /// importing is refused on every replica and ingests nothing; the outbox of a copying
    /// slot records what an entry wrote to it, under the entry's index.
    #[test]
    fn an_ingest_applies_again_to_the_same_records_and_a_copy_keeps_an_outbox() {
        let (dir, store) = crate::cluster::testing::store();
        let parts = Partitions::new(4).unwrap();
        // A file an interrupted ingestion left is removed when the state machine starts.
        std::fs::create_dir_all(dir.path().join("scratch")).unwrap();
        std::fs::write(dir.path().join("scratch/0-9-0.sst"), b"left over").unwrap();
        let a = ServerApply::new(store.clone(), parts, dir.path().join("scratch")).unwrap();
        assert!(!dir.path().join("scratch").exists());
        // Slot 10 is partition 0's; partition 3 imports it.
        let (s, t, slot) = (0u16, 3u16, 10u16);
        let key = |rest: &[u8]| [&slot.to_be_bytes()[..], rest].concat();
        let (k1, k2, k3) = (key(b"a"), key(b"b"), key(b"c"));
        let page: Vec<(u8, &[u8], &[u8])> =
            vec![(0, &k1, b"meta a"), (0, &k2, b"meta b"), (1, &k3, b"sub c")];
        let entry = ingest::encode(slot, &page).unwrap();
        let r = apply(&a, t, 1, &entry);
        assert!(r.starts_with("-ERR slot 10 is not being imported into partition 3"), "{r}");
        assert!(records(&a, t, slot).is_empty());
        assert_eq!(apply(&a, t, 2, &ownership::encode_control(Op::Import, slot, s)), "ok");
        let gaps = store.due.gaps();
        assert_eq!(apply(&a, t, 3, &entry), "3");
        assert!(store.due.gaps() > gaps, "ingested keys are unnoted: a gap in the due index");
        let once = records(&a, t, slot);
        assert_eq!(once.len(), 3);
        assert_eq!(once[2], (1, [&t.to_be_bytes()[..], &k3].concat(), b"sub c".to_vec()));
        assert_eq!(apply(&a, t, 3, &entry), "3");
        assert_eq!(records(&a, t, slot), once);
        let left = std::fs::read_dir(dir.path().join("scratch")).unwrap().count();
        assert_eq!(left, 0, "the table files were moved into the engine");

        // The source copies slot 10 out: an entry writing it (and slot 11) is recorded.
        assert_eq!(apply(&a, s, 1, &ownership::encode_control(Op::Copy, slot, t)), "ok");
        let mut b = WriteBatch::new();
        let stored =
            |sl: u16, rest: &[u8]| [&s.to_be_bytes()[..], &sl.to_be_bytes(), rest].concat();
        b.put_cf(&*store.meta_cf, stored(slot, b"k"), b"v");
        b.put_cf(&*store.meta_cf, stored(11, b"k"), b"other slot");
        b.delete_cf(&*store.sub_cf, stored(slot, b"gone"));
        assert_eq!(apply(&a, s, 2, &encode_proposal(&store, &b, None)), "");
        let (last, changes) = outbox::page(&store, s, slot, 0, 100).unwrap();
        assert_eq!(last, 2);
        assert_eq!(
            changes,
            vec![
                Change::Put { family: 0, key: key(b"k"), value: b"v".to_vec() },
                Change::Delete { family: 1, key: key(b"gone") },
            ]
        );
        assert_eq!(outbox::page(&store, s, slot, 2, 100).unwrap(), (2, Vec::new()));
        assert_eq!(outbox::page(&store, s, 11, 0, 100).unwrap(), (0, Vec::new()));
        // The outbox is part of the partition's snapshot ranges.
        let server = store.server_cf.name().to_string();
        let (lo, hi) = outbox::range_of(s);
        let ranges = a.ranges(GroupId(u32::from(s)));
        assert!(ranges.iter().any(|r| r.cf == server && r.start == lo && r.end == hi));
    }
}
