//! The state machine of every group on a node ([`ServerApply`]): a committed entry is one
//! command's `WriteBatch` (`Store::write` on the leader proposed it, [`encode_proposal`]),
//! applied as it is, in the same engine batch as the group's applied id.
//!
//! ```text
//!  entry:  metadata id u32LE | subkey id u32LE | zscore id u32LE | write batch (its format)
//! ```
//!
//! The ids are the proposer's for its three data families: a batch's records name families
//! by id, and nodes need not give them the same ones (a family's id comes from the DB's
//! history), so a replica moves each record into its own family of the same name
//! (`WriteBatch::append_remapped`).
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
//!
//! The meta group ([`META`]) has the same state machine: its entries change the cluster map
//! (`super::map`), and each map applied is published, after its write, to the node's
//! watchers ([`ServerApply::maps`]).

use std::sync::Arc;

use parking_lot::Mutex;
use strata::{Db, WriteBatch};
use strata_replication::{Apply, GroupId, KeyRange};
use tokio::sync::watch;

use super::map::{self, ClusterMap, META};
use super::ownership::{self, decode_control, Op, Ownership, State};
use super::partitions::Partitions;
use crate::filing::Filing;
use crate::slots::SLOTS;
use crate::storage::{partition_space, Store};

thread_local! {
    /// Whether the entry this thread is applying deletes a range: its cached metadata and
    /// pop hints are dropped after the write (`after_write` runs on the applying thread).
    static RANGE_DELETED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The slot state a control entry being applied on this thread gives (partition, slot),
    /// recorded in memory once its write is done.
    static OWNED: std::cell::Cell<Option<(u16, u16, State)>> =
        const { std::cell::Cell::new(None) };
}

/// Bytes of an entry's header: the proposer's three family ids.
const HEADER: usize = 12;

/// The entry that replicates `batch`, a command's writes to `store`'s data families.
pub fn encode_proposal(store: &Store, batch: &WriteBatch) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + batch.data().len());
    for cf in [&store.meta_cf, &store.sub_cf, &store.score_cf] {
        out.extend_from_slice(&cf.id().to_le_bytes());
    }
    out.extend_from_slice(batch.data());
    out
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
}

impl ServerApply {
    /// The state machine of `store`'s groups, the slots split into `partitions`.
    /// Publishes the map `store` holds, if any (an unreadable one is an error naming it).
    pub fn new(store: Arc<Store>, partitions: Partitions) -> Result<ServerApply, String> {
        let stored = ClusterMap::load(&store)?.map(Arc::new);
        let (maps, _) = watch::channel(stored);
        let ownership = Arc::new(Ownership::load(&store, partitions)?);
        Ok(ServerApply { store, partitions, ownership, maps, pending_map: Mutex::new(None) })
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
                if matches!(op, Op::Import | Op::Release) {
                    RANGE_DELETED.with(|r| r.set(true));
                }
            }
            return Ok(reply);
        }
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
        // Every record filed under the partition: its prefix in each family; and its slots'
        // states.
        let p = group.0 as u16;
        let mut ranges: Vec<KeyRange> = self
            .store
            .view_ranges_of(Filing::Partition(p))
            .into_iter()
            .map(|(cf, start, end)| KeyRange { cf: cf.name().to_string(), start, end })
            .collect();
        let (start, end) = ownership::ranges_of(p);
        ranges.push(KeyRange { cf: self.store.server_cf.name().to_string(), start, end });
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
        if let Some((p, slot, state)) = OWNED.with(std::cell::Cell::take) {
            if written {
                self.ownership.settle(p, slot, state);
            }
        }
        if RANGE_DELETED.with(|r| r.replace(false)) {
            self.store.meta_cache.clear();
            self.store.pop_hints.clear();
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
        self.store.meta_cache.clear();
        self.store.pop_hints.clear();
    }
}
