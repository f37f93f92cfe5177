//! The engine under the Redis types: one Strata DB with three column families, and what every
//! type's records share on their way in and out of it. Records are bytes here; what they say
//! (the metadata record, sub-keys, the score index, compact hashes) is [`crate::types`]'s.
//!
//! Column families: `metadata` (user key -> the key's metadata record), `subkey` (fields,
//! members, elements) and `zscore` (the sorted-set score index); and `server`, which holds
//! the layout marker ([`LAYOUT`]). Every command writes its changes in one `WriteBatch` across
//! the families (atomic), through [`Engine::write`]. Each Redis database (SELECT) has three
//! data families of its own, a *family set* ([`databases`]); a [`Store`] is one database's
//! view of the shared [`Engine`].
//!
//! Every key of the three data families starts with its Redis Cluster slot (u16 big-endian):
//! the metadata family's key is `slot | user key` ([`meta_key`]; the store's callers name user
//! keys, the store adds and strips the slot), the others' are `types::subkey`'s. So the
//! entries of a range of slots are one key range per family ([`Store::slot_ranges`]): what a
//! cluster node copies into a snapshot of a partition, or deletes when it gives one up.
//!
//! Beside the DB: per-key write locks ([`locks`]), a cache of metadata records
//! ([`meta_cache`]), where pops start ([`pop_hints`]), shared WAL syncs ([`sync_group`]),
//! replicated writes in flight ([`pending`]), the keys with an expiry by due time ([`due`]),
//! an EXEC's writes not yet written, which its commands read ([`overlay`]), a slot's records
//! as a move copies them ([`moving`]), the replication stream and what the running command
//! puts in it ([`backlog`], [`propagated`]), and the compaction filter that applies the types
//! layer's stale sub-key rule ([`filter`]).
//! Errors are the engine's ([`strata::Error`]), or [`OpenError`] and
//! [`sync_group::SyncError`] where the engine is not the cause.

pub mod access;
pub mod backlog;
pub mod databases;
pub mod due;
pub mod filter;
pub mod frequency;
pub mod locks;
pub mod master_client;
pub mod meta_cache;
pub mod moving;
pub mod overlay;
pub mod pending;
pub mod pop_hints;
pub mod prehashed;
pub mod propagated;
pub mod repl_ids;
pub mod snapshot_view;
pub mod sync_group;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use strata::{ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::filing::Filing;

/// The metadata family's name.
pub const CF_METADATA: &str = "metadata";
/// The sub-key family's name.
pub const CF_SUBKEY: &str = "subkey";
/// The sorted-set score index family's name.
pub const CF_ZSCORE: &str = "zscore";
/// The family of the store's own records (the layout marker).
pub const CF_SERVER: &str = "server";

/// The key of the layout marker in the `server` family.
pub const LAYOUT_KEY: &[u8] = b"layout";
/// The layout this version writes and reads: keys filed under their slot. A DB without the
/// marker whose metadata family holds keys was written before slots led the keys and is
/// refused at open ([`OpenError::Layout`]), never misread.
pub const LAYOUT: &[u8] = b"slot-prefixed 1";
/// The layout of a store that has used a database other than 0: the same records, plus the
/// databases' family sets and map (`databases`), which a version reading only [`LAYOUT`]
/// would not see. Written (synced) before a second family set is created; read alike.
pub const LAYOUT_DATABASES: &[u8] = b"slot-prefixed 2";
/// The layout of a standalone store whose metadata may hold field deltas (merge operands,
/// [`Store::merge_meta`]) besides what [`LAYOUT_DATABASES`] allows: a version without their
/// merge operator would fail to read them, so it refuses the store at open instead. Written
/// (synced) before the first delta; a later second family set keeps it.
pub const LAYOUT_DELTAS: &[u8] = b"slot-prefixed 3";
/// The layout of a standalone store whose metadata may also hold register deltas (format 2
/// merge operands of dense HyperLogLogs, `types::hll::delta`) besides what [`LAYOUT_DELTAS`]
/// allows: a version that applies only field deltas would fail to read them, so it refuses
/// the store at open. Written (synced) before the first register delta.
pub const LAYOUT_REGISTER_DELTAS: &[u8] = b"slot-prefixed 4";
/// The layout of a standalone store whose compact hashes may hold their pairs out of byte
/// order (in the order their fields were first set, `types::compact_hash`) besides what
/// [`LAYOUT_REGISTER_DELTAS`] allows: a version that kept them in byte order would stop a
/// field search early and miss fields, so it refuses the store at open. Written (synced)
/// before the first such hash.
pub const LAYOUT_HASH_ORDER: &[u8] = b"slot-prefixed 5";
/// The standalone layouts, each allowing what the ones before it allow and more: a marker is
/// only ever raised along this order ([`Engine::raise_layout`]).
pub const STANDALONE_LAYOUTS: [&[u8]; 5] =
    [LAYOUT, LAYOUT_DATABASES, LAYOUT_DELTAS, LAYOUT_REGISTER_DELTAS, LAYOUT_HASH_ORDER];

/// Where `marker` stands in [`STANDALONE_LAYOUTS`] (`None`: not a standalone layout).
pub fn layout_rank(marker: &[u8]) -> Option<u8> {
    STANDALONE_LAYOUTS.iter().position(|m| *m == marker).map(|r| r as u8)
}
/// The layout of a cluster node's store: every key filed under its partition, then its slot
/// (`crate::filing`), and compact hashes in the order their fields were first set. Neither
/// mode reads the other's keys, so each refuses the other's layouts. A store marked
/// [`LAYOUT_PARTITIONS_BYTE_ORDER`] is remarked with this one at open, before any write: a
/// node's writes reach its store as replicated batches and snapshots, which are not looked
/// at one by one, so the node allows such hashes from its open on.
pub const LAYOUT_PARTITIONS: &[u8] = b"partition-prefixed 2";
/// A cluster node's store whose compact hashes are in byte order (written by a version that
/// kept them so; read alike).
pub const LAYOUT_PARTITIONS_BYTE_ORDER: &[u8] = b"partition-prefixed 1";

/// Calls `use_key` with `key`'s stored metadata key ([`meta_key`]), built in a buffer the
/// thread keeps: for the hot paths that only lend the key (a batch copies it, a read looks
/// it up).
pub fn with_meta_key<R>(f: Filing, key: &[u8], use_key: impl FnOnce(&[u8]) -> R) -> R {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            push_meta_key(f, key, &mut buf);
            let r = use_key(&buf);
            if buf.capacity() > 1 << 16 {
                // A long key's buffer is not kept.
                *buf = Vec::new();
            }
            r
        }
        // `use_key` itself built a metadata key: this one gets its own.
        Err(_) => use_key(&meta_key(f, key)),
    })
}

/// The metadata family's key of user key `key` filed as `f` files keys: its lead (the slot;
/// in cluster mode the partition, then the slot), then the key.
pub fn meta_key(f: Filing, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(f.len() + key.len());
    push_meta_key(f, key, &mut k);
    k
}

/// Appends [`meta_key`]`(f, key)` to `out`.
fn push_meta_key(f: Filing, key: &[u8], out: &mut Vec<u8>) {
    f.lead(key, out);
    out.extend_from_slice(key);
}

/// When a write is acknowledged (`appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// After a synced WAL write (group commit batches concurrent ones).
    Always = 0,
    /// Unsynced writes; a background task syncs the WAL every second.
    EverySec = 1,
    /// Unsynced writes.
    No = 2,
}

impl SyncPolicy {
    /// Parses `always|everysec|no`.
    pub fn parse(s: &str) -> Option<SyncPolicy> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(SyncPolicy::Always),
            "everysec" => Some(SyncPolicy::EverySec),
            "no" => Some(SyncPolicy::No),
            _ => None,
        }
    }

    /// The config value.
    pub fn name(self) -> &'static str {
        match self {
            SyncPolicy::Always => "always",
            SyncPolicy::EverySec => "everysec",
            SyncPolicy::No => "no",
        }
    }
}

/// Why [`Store::open`] failed.
#[derive(Debug)]
pub enum OpenError {
    /// The engine did not open the DB in `dir`.
    Db { dir: PathBuf, source: strata::Error },
    /// A column family the open was to create is missing after it.
    MissingFamily(&'static str),
    /// The DB's records are laid out in a way this version does not read.
    Layout {
        /// The DB.
        dir: PathBuf,
        /// What the DB holds: its layout marker, or a description of the unmarked layout.
        found: String,
        /// Whether the open was a cluster node's ([`LAYOUT_PARTITIONS`] wanted).
        partitioned: bool,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Db { dir, source } => {
                write!(f, "cannot open the database in {}: {source}", dir.display())
            }
            OpenError::MissingFamily(name) => write!(f, "column family {name} missing after open"),
            OpenError::Layout { dir, found, partitioned } => {
                let (wanted, what) = if *partitioned {
                    let [a, b] = [LAYOUT_PARTITIONS_BYTE_ORDER, LAYOUT_PARTITIONS]
                        .map(String::from_utf8_lossy);
                    (format!("{a:?} and {b:?}"), "cluster mode")
                } else {
                    let [a, b, c, d, e] = STANDALONE_LAYOUTS.map(String::from_utf8_lossy);
                    (format!("{a:?}, {b:?}, {c:?}, {d:?} and {e:?}"), "a standalone server")
                };
                write!(
                    f,
                    "the database in {} is laid out as {found}, and strata-server in {what} \
                     reads only {wanted}; start it on an empty directory, or in the mode that \
                     wrote it",
                    dir.display()
                )
            }
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Db { source, .. } => Some(source),
            OpenError::MissingFamily(_) | OpenError::Layout { .. } => None,
        }
    }
}

/// Where a clustered store's writes go instead of the engine ([`Store::set_replicate`]).
pub trait Replicate: Send + Sync {
    /// Proposes `batch`, every key of which is filed under `partition` and `slot`, to the
    /// partition's Raft group, and returns without waiting. It settles `done` exactly once: `Ok`
    /// once the batch is committed and applied on this node, else the error reply the client
    /// gets (Redis Cluster's `MOVED <slot> <host>:<port>`, `CLUSTERDOWN ...`, ...): the
    /// batch was not written here, or its outcome is unknown.
    fn propose(&self, partition: u16, slot: u16, batch: WriteBatch, done: Arc<pending::Settlement>);
}

/// Why [`Store::write`] failed.
#[derive(Debug)]
pub enum WriteError {
    /// The engine failed.
    Engine(strata::Error),
    /// A clustered store's write did not commit: the error reply ([`Replicate::propose`]).
    Replication(String),
    /// A clustered store was given a batch whose keys name no slot (FLUSHALL's range
    /// deletions over whole families): no one group can commit it.
    NoSlot,
}

impl From<strata::Error> for WriteError {
    fn from(e: strata::Error) -> Self {
        WriteError::Engine(e)
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Engine(e) => write!(f, "{e}"),
            WriteError::Replication(reply) => write!(f, "not replicated: {reply}"),
            WriteError::NoSlot => write!(f, "a batch without a slot cannot be replicated"),
        }
    }
}

impl std::error::Error for WriteError {}

/// The partition and slot every key of a cluster node's `batch` is filed under (its first
/// record's: a command's keys share one slot, and it runs for one partition); `None` when the
/// batch is empty or a key is too short to hold a lead.
pub fn batch_lead(batch: &WriteBatch) -> Option<(u16, u16)> {
    let (k, _) = batch.keys().next()?;
    Some((Filing::partition_of(k)?, Filing::AllPartitions.slot_of(k)?))
}

/// The metadata cache's space of partition `p`'s view on a cluster node: above every family
/// set's number (sets are below [`databases::MAX_DATABASES`]).
pub fn partition_space(p: u16) -> u32 {
    0x8000_0000 | u32::from(p)
}

/// The most merge operands [`Store::merge_meta`] lets stand above a key's last whole
/// metadata record: the next write of the key after that many is whole.
pub const MAX_META_DELTAS: u8 = 16;

/// A metadata record as [`Store::read_meta`] found it.
pub enum MetaRead {
    /// From the cache, which holds only records their reader checked before caching them;
    /// shared with the cache entry.
    Cached(Arc<Vec<u8>>),
    /// From the engine, unchecked. A reader that finds it sound may cache it with
    /// [`Store::cache_meta`], passing `generation` on.
    Stored {
        /// The record.
        raw: Vec<u8>,
        /// The cache shard's generation before the read (`meta_cache` contract).
        generation: u64,
    },
}

/// What every database of a server shares: the engine, the `server` family, the lock table,
/// the version counter, the sync policy, the metadata cache and the pop hints (both keyed so
/// that databases never meet in them), and cluster mode's replication.
pub struct Engine {
    /// The engine.
    pub db: Arc<Db>,
    /// `server` family: the store's own records (the layout marker, FUNCTION libraries, the
    /// databases' map).
    pub server_cf: Arc<ColumnFamily>,
    /// Per-key write locks (by user key: one key name's stripe serves it in every database).
    pub locks: locks::LockTable,
    sync: AtomicU8,
    last_version: AtomicU64,
    /// Set when shutting down: the compaction filter stops consulting the store.
    pub closing: AtomicBool,
    /// Shared WAL syncs for `appendfsync always` (`sync_group`).
    pub syncs: Arc<sync_group::SyncGroup>,
    /// Small metadata records of hot keys (`meta_cache`), of every database.
    pub meta_cache: meta_cache::MetaCache,
    /// The engine's block cache, one for every family (`None` when configured without one),
    /// and the capacity it was configured with: `maxmemory` lowers the capacity while what
    /// the server counts in memory would pass the limit (`commands::oom`).
    pub block_cache: Option<(strata::Cache, usize)>,
    /// How often each key is used, under an LFU `maxmemory-policy` (`frequency`).
    pub frequencies: frequency::Frequencies,
    /// Where SPOP/ZPOPMIN/ZPOPMAX start (`pop_hints`; keyed by sub-key prefixes, whose
    /// versions are unique across databases).
    pub pop_hints: pop_hints::PopHints,
    /// The keys with an expiry, by due time, of every database (`due`): fed by
    /// [`Store::put_meta`], the expiry walk and a cluster node's applied entries, taken by
    /// active expiry.
    pub due: due::DueIndex,
    /// The keys a writable replica's own clients wrote with an expiry, by due time (fed by
    /// [`Store::put_meta`] while the server follows a master, outside `master_client`): the
    /// only keys a replica's active expiry deletes, as Redis's `expireSlaveKeys` does (the
    /// master's DELs remove the master's keys: [`Engine::expired_kept`]).
    pub own_due: due::DueIndex,
    /// Internal entries sub-key scans have stepped over (INFO `strata_scan_steps`): what
    /// tombstones and old versions cost the scans.
    pub scan_steps: AtomicU64,
    /// Metadata writes made as merge operands (INFO `strata_field_deltas`;
    /// [`Store::merge_meta`]).
    pub field_deltas: AtomicU64,
    /// Set while the server follows a master (REPLICAOF): a key whose time is up stays
    /// stored, every record of it, until the master's DEL, as on a redis-server replica (the
    /// master's commands may still find it: `types::keyspace::as_master`). Clients' reads see
    /// it absent; active expiry deletes none of them (only the writable replica's own keys,
    /// [`Engine::own_due`]), nor does a read, and the compaction filter keeps their sub-keys.
    pub expired_kept: AtomicBool,
    /// The replication stream this server sends its replicas (`backlog`).
    pub backlog: backlog::Backlog,
    /// Set in cluster mode: writes go through it instead of straight to the engine.
    replicate: OnceLock<Arc<dyn Replicate>>,
    /// Whether the metadata families have a merge operator (`Store::merge_meta`).
    meta_merges: bool,
    /// The layout marker's rank in [`STANDALONE_LAYOUTS`], as last read or written: at
    /// [`LAYOUT_DELTAS`]'s the store may hold field deltas, at [`LAYOUT_REGISTER_DELTAS`]'s
    /// register deltas too.
    layout_rank: AtomicU8,
    /// Held while the layout marker is read and raised, so that two raisers never leave the
    /// lower marker on disk.
    layout_lock: parking_lot::Mutex<()>,
}

/// One database's key space (a *family set*: `metadata`, `subkey` and `zscore`, numbered
/// `set`; [`databases`]) on the shared [`Engine`], which it dereferences to. The Redis
/// types read and write through it.
pub struct Store {
    engine: Arc<Engine>,
    /// The family set's number (0: the families named without a number).
    pub set: u32,
    /// How its keys are filed: under their slot, or on a cluster node under the partition
    /// the view serves (`crate::filing`).
    pub filing: Filing,
    /// Its entries' space in the metadata cache (the set standalone; one per partition on
    /// a cluster node: [`partition_space`]).
    pub space: u32,
    /// `metadata` family.
    pub meta_cf: Arc<ColumnFamily>,
    /// `subkey` family.
    pub sub_cf: Arc<ColumnFamily>,
    /// `zscore` family.
    pub score_cf: Arc<ColumnFamily>,
}

impl Engine {
    /// The records of the `server` family whose keys start with `prefix`, in key order.
    pub fn server_records(&self, prefix: &[u8]) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.db.raw_iterator_cf(&*self.server_cf);
        it.seek(prefix);
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.to_vec(), v.to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Whether the layout marker is at or past `wanted`, a standalone layout, in
    /// [`STANDALONE_LAYOUTS`] (as last read or written).
    pub fn has_layout(&self, wanted: &[u8]) -> bool {
        layout_rank(wanted).is_some_and(|r| self.layout_rank.load(Ordering::Acquire) >= r)
    }

    /// Raises the layout marker (synced) to `wanted`, a standalone layout, unless it is
    /// already at or past it in [`STANDALONE_LAYOUTS`]: before a write that needs what
    /// `wanted` allows (a second family set, a field delta, a register delta).
    pub fn raise_layout(&self, wanted: &[u8]) -> strata::Result<()> {
        let Some(rank) = layout_rank(wanted) else {
            return Err(strata::Error::InvalidArgument("not a standalone layout".into()));
        };
        if self.layout_rank.load(Ordering::Acquire) >= rank {
            return Ok(());
        }
        let _g = self.layout_lock.lock();
        let found = self.db.get_cf(&*self.server_cf, LAYOUT_KEY)?;
        let now = found.as_deref().and_then(layout_rank).unwrap_or(0);
        if now < rank {
            self.write_server_records(&[(LAYOUT_KEY.to_vec(), Some(wanted.to_vec()))])?;
        }
        self.layout_rank.store(now.max(rank), Ordering::Release);
        Ok(())
    }

    /// Writes (`Some`) or deletes (`None`) records of the `server` family in one synced
    /// batch: the store's own state, which outlives a crash once this returns.
    pub fn write_server_records(
        &self,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> strata::Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in records {
            match v {
                Some(v) => b.put_cf(&*self.server_cf, k, v),
                None => b.delete_cf(&*self.server_cf, k),
            }
        }
        let wo = WriteOptions { sync: true, ..WriteOptions::default() };
        self.db.write_opt(b, &wo)
    }

    /// The current `appendfsync` policy.
    pub fn sync_policy(&self) -> SyncPolicy {
        match self.sync.load(Ordering::Relaxed) {
            0 => SyncPolicy::Always,
            1 => SyncPolicy::EverySec,
            _ => SyncPolicy::No,
        }
    }

    /// Changes the `appendfsync` policy.
    pub fn set_sync_policy(&self, p: SyncPolicy) {
        self.sync.store(p as u8, Ordering::Relaxed);
    }

    /// A fresh sub-key generation: above every version handed out before, in this process or
    /// (by the clock, in microseconds) an earlier one.
    pub fn new_version(&self) -> u64 {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        let mut cur = self.last_version.load(Ordering::Relaxed);
        loop {
            let next = (cur + 1).max(now);
            match self.last_version.compare_exchange_weak(
                cur,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(c) => cur = c,
            }
        }
    }

    /// Sends every later write through `r` (cluster mode: the slot's Raft group commits it
    /// and applies it on every replica). Set once, before the store serves commands; a second
    /// call changes nothing and returns false.
    pub fn set_replicate(&self, r: Arc<dyn Replicate>) -> bool {
        self.replicate.set(r).is_ok()
    }

    /// Whether writes go through a [`Replicate`] (cluster mode).
    pub fn is_replicated(&self) -> bool {
        self.replicate.get().is_some()
    }

    /// Writes `batch` under the current sync policy. Under `always` the write is made without
    /// a sync and this thread owes one: the caller takes it with [`Store::owed_sync`] and
    /// waits for it before acknowledging (after releasing its key locks; `sync_group`).
    ///
    /// In cluster mode the batch goes to its slot's group instead ([`Replicate`]); the Raft
    /// log is the durable record, so no sync is owed. Deferring (a connection's command,
    /// [`pending`]) it returns once proposed and the thread owes the outcome; else it returns
    /// once the batch is applied here. Either way the key-lock stripes the caller holds stay
    /// marked until then, so no other writer of those keys reads the state before it.
    pub fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        if !batch.is_empty() {
            propagated::wrote();
        }
        // Inside EXEC: gathered, written by `commit_overlay`; the notes stay until then.
        if overlay::add(&batch) {
            return Ok(());
        }
        if batch.is_empty() {
            self.meta_cache.invalidate_noted(false);
            return Ok(());
        }
        if let Some(r) = self.replicate.get() {
            if let Some(failed) = pending::settle_own() {
                self.meta_cache.invalidate_noted(false);
                return Err(WriteError::Replication(failed));
            }
            let Some((partition, slot)) = batch_lead(&batch) else {
                self.meta_cache.invalidate_noted(false);
                return Err(WriteError::NoSlot);
            };
            let done = pending::Settlement::new(self.locks.mark_held());
            r.propose(partition, slot, batch, done.clone());
            if pending::is_deferring() {
                // Not written yet: the notes are dropped now, and the apply of the entry
                // invalidates its keys again after its write (`cluster::apply`).
                self.meta_cache.invalidate_noted(false);
                pending::owe(done);
                return Ok(());
            }
            let outcome = done.wait_blocking();
            self.meta_cache.invalidate_noted(outcome.is_ok());
            return outcome.map_err(WriteError::Replication);
        }
        let written = self.db.write_opt(batch, &WriteOptions::default());
        // After the write (`meta_cache` contract), whether or not it succeeded.
        self.meta_cache.invalidate_noted(written.is_ok());
        written?;
        if self.sync_policy() == SyncPolicy::Always {
            sync_group::owe_sync();
        }
        Ok(())
    }

    /// Writes `batch` as [`Store::write`] does, and returns once it is applied here: a deferred
    /// replicated write is waited for ([`pending::settle_own`]). For a command that records
    /// something about its write once it landed (the pop hints).
    pub fn write_applied(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.write(batch)?;
        match pending::settle_own() {
            Some(failed) => Err(WriteError::Replication(failed)),
            None => Ok(()),
        }
    }

    /// The sync this thread's writes since the last call must wait for, if they owe one (see
    /// [`Store::write`]): requested now, awaited with `self.syncs.wait`.
    pub fn owed_sync(&self) -> Option<u64> {
        sync_group::take_owed_sync().then(|| self.syncs.request(&self.db))
    }

    /// SAVE: every acknowledged write durable and in table files (the WAL synced, the
    /// memtables of `stores`' families flushed, each flush waited for).
    pub fn save<'a>(&self, stores: impl IntoIterator<Item = &'a Store>) -> strata::Result<()> {
        self.db.flush_wal(true)?;
        for st in stores {
            for cf in st.families() {
                self.db.flush_cf(&**cf)?;
            }
        }
        Ok(())
    }

    /// The memtables of `stores`' families that hold anything scheduled for flushing, not
    /// waited for (what `maxmemory` asks when the memtables hold more than it allows).
    pub fn flush_behind<'a>(
        &self,
        stores: impl IntoIterator<Item = &'a Store>,
    ) -> strata::Result<()> {
        let opts = strata::FlushOptions { wait: false };
        for st in stores {
            for cf in st.families() {
                self.db.flush_cf_opt(&**cf, &opts)?;
            }
        }
        Ok(())
    }

    /// The clean shutdown: the WAL synced, `stores`' memtables flushed (every one tried),
    /// background work stopped.
    pub fn close<'a>(&self, stores: impl IntoIterator<Item = &'a Store>) -> strata::Result<()> {
        self.closing.store(true, Ordering::Release);
        let mut res = self.db.flush_wal(true);
        for st in stores {
            for cf in st.families() {
                if let Err(e) = self.db.flush_cf(&**cf) {
                    res = Err(e);
                }
            }
        }
        self.db.cancel_all_background_work(true);
        self.syncs.stop();
        res
    }

    /// The sequence number WATCH notes: [`Engine::written_since`] tells writes after it.
    pub fn watch_point(&self) -> u64 {
        self.db.latest_sequence_number()
    }

    /// Whether a key of `[begin, end)` in `cf` may have been written since `seq` (a
    /// [`Engine::watch_point`]): by any command or FLUSHALL. A write the engine can no longer
    /// tell (flushed since) counts as one.
    pub fn written_since(
        &self,
        cf: &ColumnFamily,
        begin: &[u8],
        end: &[u8],
        seq: u64,
    ) -> strata::Result<bool> {
        Ok(self.db.written_since_cf(cf, begin, end, seq)? != Some(false))
    }
}

impl std::ops::Deref for Store {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl Store {
    /// Opens (creating if needed) the store in `dir` with engine options `opts`: its first
    /// database (Redis's 0). Compactions of the `subkey` and `zscore` families drop the
    /// entries `stale` judges stale ([`filter`]). A server opens [`databases::Databases`]
    /// instead.
    pub fn open(
        opts: Options,
        dir: &std::path::Path,
        policy: SyncPolicy,
        stale: filter::StaleRule,
    ) -> Result<Arc<Store>, OpenError> {
        let dbs = databases::Databases::open(opts, dir, policy, stale, 1, false)?;
        Ok(dbs.store(0).clone())
    }

    /// The engine under every database.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The clean shutdown of a store opened alone ([`Store::open`]). A server closes its
    /// [`databases::Databases`] instead.
    pub fn close(&self) -> strata::Result<()> {
        self.engine.close([self])
    }

    /// The three data families: metadata, sub-keys, score index.
    pub fn families(&self) -> [&Arc<ColumnFamily>; 3] {
        [&self.meta_cf, &self.sub_cf, &self.score_cf]
    }

    /// The metadata record of `key`, from the cache or else the engine (`None`: no record).
    pub fn read_meta(&self, key: &[u8]) -> strata::Result<Option<MetaRead>> {
        pending::settle_own();
        // At a snapshot (`snapshot_view`): neither the overlay nor the cache, which hold
        // the latest state; never cached (`cache_meta`).
        if snapshot_view::active() {
            return Ok(self
                .read_meta_uncached(key)?
                .map(|raw| MetaRead::Stored { raw, generation: 0 }));
        }
        // Only inside EXEC; the key is built there, not on every read.
        if let Some(read) = overlay::with(|w| {
            let ro = ReadOptions::default();
            w.get_from_batch_and_db_cf(&self.db, &*self.meta_cf, meta_key(self.filing, key), &ro)
        }) {
            // Not cached (`cache_meta` fills nothing inside EXEC).
            return Ok(read?.map(|raw| MetaRead::Stored { raw, generation: 0 }));
        }
        match self.meta_cache.get(self.space, key) {
            Ok(raw) => Ok(Some(MetaRead::Cached(raw))),
            Err(generation) => {
                Ok(with_meta_key(self.filing, key, |k| self.db.get_cf(&*self.meta_cf, k))?
                    .map(|raw| MetaRead::Stored { raw, generation }))
            }
        }
    }

    /// Caches `raw`, a record of `key` that [`Store::read_meta`] read from the engine with
    /// `generation` and its reader found sound.
    pub fn cache_meta(&self, key: &[u8], raw: Arc<Vec<u8>>, generation: u64) {
        if overlay::active() || snapshot_view::active() {
            return;
        }
        self.meta_cache.fill(self.space, key, raw, generation);
    }

    /// The metadata record of `key` as the engine holds it now, past the cache: no snapshot,
    /// so a record written in one batch with other entries is seen as soon as they are.
    pub fn read_meta_uncached(&self, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        let k = meta_key(self.filing, key);
        self.get(&self.meta_cf, &k)
    }

    /// The metadata record stored under `stored` (a lead and a user key) as the engine holds
    /// it now: what the compaction filter reads for a sub-key of any partition.
    pub fn read_stored_meta(&self, stored: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        self.db.get_cf(&*self.meta_cf, stored)
    }

    /// Puts the metadata record `raw` of `key` into `batch`; a record with an expiry is noted
    /// in the due index (`due`) now, before the write: an entry for a write that fails is
    /// checked and dropped when it comes due.
    pub fn put_meta(&self, batch: &mut WriteBatch, key: &[u8], raw: Vec<u8>) {
        self.put_meta_record(batch, key, &raw);
        self.meta_cache.note_write(self.space, key, Some(raw));
    }

    /// [`Store::put_meta`] for a load into emptied databases (`types::rdb::key::BulkLoad`):
    /// the record takes no entry in the metadata cache (a load's keys would evict every
    /// other, and noting each cost a tenth of the load), only the use its write is. The
    /// caller clears the cache once the load is written, so that no entry a read filled
    /// meanwhile outlives it.
    pub fn put_meta_loaded(&self, batch: &mut WriteBatch, key: &[u8], raw: &[u8]) {
        self.put_meta_record(batch, key, raw);
        self.meta_cache.access.touch(self.space, key);
    }

    /// Puts the record and notes its expiry in the due indexes ([`Store::put_meta`]).
    fn put_meta_record(&self, batch: &mut WriteBatch, key: &[u8], raw: &[u8]) {
        with_meta_key(self.filing, key, |k| {
            batch.put_cf(&*self.meta_cf, k, raw);
            self.due.note_record(self.set, k, raw);
            if self.expired_kept.load(Ordering::Relaxed) && !master_client::as_master_now() {
                self.own_due.note_record(self.set, k, raw);
            }
        });
    }

    /// Puts a merge operand of `key`'s metadata record into `batch` instead of the whole
    /// record `raw` (the record the merge gives), when that is allowed: the metadata family
    /// has its merge operator, the write goes straight to this engine (not inside EXEC or a
    /// script, whose batch reads back through an index; not on a cluster node's store, whose
    /// slot copies carry puts and deletes only), and the cache knows the key's chain of
    /// operands to be shorter than [`MAX_META_DELTAS`] (so a read that misses the cache merges
    /// a bounded chain). The store's layout is raised to `layout` first (the marker that
    /// allows this operand's format: [`LAYOUT_DELTAS`], [`LAYOUT_REGISTER_DELTAS`]).
    /// `Err(raw)`: nothing was put, the caller writes `raw` whole. The caller holds the key's
    /// lock and read the record it changes through the cache or the engine.
    pub fn merge_meta(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        layout: &[u8],
        raw: Vec<u8>,
        operand: impl FnOnce() -> Vec<u8>,
    ) -> Result<(), Vec<u8>> {
        // A cluster node's store (filed by partition) takes none, replicated or not: its slot
        // copies carry puts and deletes, and its layout marker is cluster mode's.
        let standalone = matches!(self.filing, Filing::Slot);
        if !self.meta_merges || !standalone || self.is_replicated() || overlay::active() {
            return Err(raw);
        }
        let behind = match self.meta_cache.deltas_behind(self.space, key) {
            Some(n) if n < MAX_META_DELTAS => n,
            _ => return Err(raw),
        };
        // A failure leaves the write whole; the next delta tries again.
        if self.raise_layout(layout).is_err() {
            return Err(raw);
        }
        let operand = operand();
        with_meta_key(self.filing, key, |k| batch.merge_cf(&*self.meta_cf, k, operand));
        self.meta_cache.note_delta(self.space, key, raw, behind + 1);
        self.field_deltas.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Puts the deletion of `key`'s metadata record into `batch`.
    pub fn delete_meta(&self, batch: &mut WriteBatch, key: &[u8]) {
        self.meta_cache.note_write(self.space, key, None);
        with_meta_key(self.filing, key, |k| batch.delete_cf(&*self.meta_cf, k));
    }

    /// Reads one entry of `cf`.
    pub fn get(&self, cf: &ColumnFamily, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        pending::settle_own();
        if let Some(snapshot) = snapshot_view::current() {
            let ro = ReadOptions { snapshot: Some(snapshot), ..ReadOptions::default() };
            return self.db.get_cf_opt(cf, key, &ro);
        }
        self.overlay_get(cf, key).unwrap_or_else(|| self.db.get_cf(cf, key))
    }

    /// `key` of `cf` read through this thread's overlay (EXEC), or `None` without one.
    fn overlay_get(
        &self,
        cf: &ColumnFamily,
        key: &[u8],
    ) -> Option<strata::Result<Option<Vec<u8>>>> {
        overlay::with(|w| w.get_from_batch_and_db_cf(&self.db, cf, key, &ReadOptions::default()))
    }

    /// A cursor over `cf`, through this thread's overlay when it has one (EXEC), or at its
    /// snapshot (`snapshot_view`).
    fn raw_iter(&self, cf: &ColumnFamily, ro: &ReadOptions) -> strata::DbRawIterator {
        if snapshot_view::active() {
            return self.db.raw_iterator_cf_opt(cf, snapshot_view::apply(ro.clone()));
        }
        let it = self.db.raw_iterator_cf_opt(cf, ro);
        match overlay::take() {
            Some(w) => {
                let over = w.iterator_with_base_cf(it, cf);
                overlay::restore(w);
                over
            }
            None => it,
        }
    }

    /// Visits entries of `cf` that start with `prefix` and sort below `upper`, in order, until
    /// `f` returns false: forward from the first at or above `prefix` + `from`, or in reverse
    /// from the last. `f` gets each key after `prefix`, and its value. The internal entries
    /// the walk stepped over are added to `scan_steps`.
    pub fn scan_prefix(
        &self,
        cf: &ColumnFamily,
        prefix: Vec<u8>,
        upper: Vec<u8>,
        from: &[u8],
        reverse: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> strata::Result<()> {
        pending::settle_own();
        let mut start = Vec::new();
        if !reverse {
            start.reserve(prefix.len() + from.len());
            start.extend_from_slice(&prefix);
            start.extend_from_slice(from);
        }
        let plen = prefix.len();
        let ro = ReadOptions {
            iterate_lower_bound: Some(prefix),
            iterate_upper_bound: Some(upper),
            ..ReadOptions::default()
        };
        let mut it = self.raw_iter(cf, &ro);
        let prefix = ro.iterate_lower_bound.as_deref().unwrap_or_default();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek(&start);
        }
        while let Some((k, v)) = it.item() {
            if !k.starts_with(prefix) {
                break;
            }
            if !f(&k[plen..], v) {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        self.scan_steps.fetch_add(it.internal_steps(), Ordering::Relaxed);
        it.status()
    }

    /// Visits this view's metadata records from the stored position `from` (inclusive; empty:
    /// from the first) on, in stored order (by lead, then key), until `f` returns false; `f`
    /// gets the record's stored key (a position to go on from), the user key and the record.
    pub fn scan_meta(
        &self,
        from: &[u8],
        mut f: impl FnMut(&[u8], &[u8], &[u8]) -> bool,
    ) -> strata::Result<()> {
        pending::settle_own();
        let (lower, upper) = self.filing.span();
        let ro = ReadOptions { iterate_upper_bound: Some(upper.clone()), ..ReadOptions::default() };
        let mut it = self.raw_iter(&self.meta_cf, &ro);
        it.seek(if from > &lower[..] { from } else { &lower });
        while let Some((k, v)) = it.item() {
            if k >= &upper[..] {
                break;
            }
            if let Some(user) = self.filing.strip(k) {
                if !f(k, user, v) {
                    break;
                }
            }
            it.next();
        }
        it.status()
    }

    /// A position of this view's metadata records drawn from `seed` (RANDOMKEY's start): a
    /// slot drawn at random, and for the store of every partition, a partition drawn from
    /// those up to the last one holding a key.
    pub fn random_position(&self, seed: u64) -> strata::Result<Vec<u8>> {
        // Every bit of a seed that counts up (a fresh version) spread over every byte
        // (splitmix64's finalizer).
        let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let b = (x ^ (x >> 31)).to_le_bytes();
        let slot = [b[0] & 0x3f, b[1], b[2]];
        let partition = match self.filing {
            Filing::Slot => return Ok(slot.to_vec()),
            Filing::Partition(p) => p,
            Filing::AllPartitions => {
                let ro = ReadOptions {
                    iterate_upper_bound: Some(self.filing.span().1),
                    ..ReadOptions::default()
                };
                let mut it = self.db.raw_iterator_cf_opt(&*self.meta_cf, &ro);
                it.seek_to_last();
                let last = it.key().and_then(Filing::partition_of);
                it.status()?;
                let draw = u16::from_le_bytes([b[3], b[4]]);
                last.map_or(0, |last| draw % last.saturating_add(1))
            }
        };
        Ok([&partition.to_be_bytes()[..], &slot].concat())
    }

    /// Visits the user keys filed under `slot` (metadata records, live or not), in key order,
    /// until `f` returns false.
    pub fn scan_slot(&self, slot: u16, mut f: impl FnMut(&[u8]) -> bool) -> strata::Result<()> {
        pending::settle_own();
        let (start, end) = self.filing.slot_span(slot, slot);
        let ro = ReadOptions { iterate_upper_bound: Some(end.clone()), ..ReadOptions::default() };
        let mut it = self.raw_iter(&self.meta_cf, &ro);
        it.seek(&start);
        while let Some(k) = it.key() {
            if k >= &end[..] {
                break;
            }
            if let Some(user) = self.filing.strip(k) {
                if !f(user) {
                    break;
                }
            }
            it.next();
        }
        it.status()
    }

    /// The key ranges, one per data family, that hold every record of the keys this view
    /// files under slots `first..=last`: (family, start inclusive, end exclusive).
    pub fn slot_ranges(&self, first: u16, last: u16) -> Vec<(Arc<ColumnFamily>, Vec<u8>, Vec<u8>)> {
        let (start, end) = self.filing.slot_span(first, last);
        self.families().into_iter().map(|cf| (cf.clone(), start.clone(), end.clone())).collect()
    }

    /// The key ranges, one per data family, of every record the view filing as `f` holds (on
    /// a cluster node, a partition's: what its snapshots copy and a dropped replica deletes).
    pub fn view_ranges_of(&self, f: Filing) -> Vec<(Arc<ColumnFamily>, Vec<u8>, Vec<u8>)> {
        let (start, end) = f.span();
        self.families().into_iter().map(|cf| (cf.clone(), start.clone(), end.clone())).collect()
    }

    /// Deletes every key of this view (a database; on a cluster node, a partition's), by
    /// range deletions up to each family's last key.
    pub fn flush(&self) -> Result<(), WriteError> {
        self.pop_hints.clear();
        let (start, upper) = self.filing.span();
        for cf in self.families() {
            let ro =
                ReadOptions { iterate_upper_bound: Some(upper.clone()), ..ReadOptions::default() };
            let mut it = self.raw_iter(cf, &ro);
            it.seek_to_last();
            if let Some(last) = it.key().filter(|k| *k >= &start[..] && *k < &upper[..]) {
                let mut end = last.to_vec();
                end.push(0);
                let mut b = WriteBatch::new();
                b.delete_range_cf(&**cf, start.clone(), end);
                self.write(b)?;
            }
            it.status()?;
        }
        self.meta_cache.clear();
        // A database's keys are all gone, and so are its due entries (a key written since
        // and dropped here is one the walk finds). A partition's view shares its set with
        // the others': its entries are checked when due.
        if matches!(self.filing, Filing::Slot) {
            self.due.forget_set(self.set);
            self.own_due.forget_set(self.set);
        }
        Ok(())
    }

    /// Deletes every key filed under slots `first..=last` (range deletions over the three data
    /// families, in one batch): in cluster mode, what FLUSHALL does to a partition this node
    /// leads, written through the partition's group like any write.
    pub fn flush_slots(&self, first: u16, last: u16) -> Result<(), WriteError> {
        let mut b = WriteBatch::new();
        for (cf, start, end) in self.slot_ranges(first, last) {
            b.delete_range_cf(&*cf, start, end);
        }
        self.write(b)?;
        self.pop_hints.clear();
        self.meta_cache.clear();
        Ok(())
    }

    /// Writes this thread's overlay (EXEC's commands' writes) as one batch through
    /// [`Store::write`] and ends it; nothing when there is none. `keys` are every key the
    /// commands named: their cached metadata is dropped after the write (the commands' own
    /// notes may have been settled on the way), and with `wide` (a FLUSHALL among them) the
    /// whole cache and the pop hints.
    pub fn commit_overlay(&self, keys: &[&[u8]], wide: bool) -> Result<(), WriteError> {
        let Some(w) = overlay::take() else { return Ok(()) };
        for k in keys {
            self.meta_cache.note_write(self.space, k, None);
        }
        let written = self.write(w.into_write_batch());
        if wide || written.is_err() {
            // A failed EXEC's pops moved hints past elements still there.
            self.meta_cache.clear();
            self.pop_hints.clear();
        }
        written
    }
}

/// Accepts a DB that holds this version's layout marker for its mode (`partitioned`: a
/// cluster node's); marks a DB with no keys (new, or emptied) with it; refuses any other.
fn check_layout(
    db: &Db,
    dir: &std::path::Path,
    meta_cf: &ColumnFamily,
    server_cf: &ColumnFamily,
    partitioned: bool,
) -> Result<(), OpenError> {
    let db_err = |source| OpenError::Db { dir: dir.to_path_buf(), source };
    let layout_err = |found| OpenError::Layout { dir: dir.to_path_buf(), found, partitioned };
    let found = db.get_cf(server_cf, LAYOUT_KEY).map_err(db_err)?;
    let fits = |m: &[u8]| {
        if partitioned {
            m == LAYOUT_PARTITIONS || m == LAYOUT_PARTITIONS_BYTE_ORDER
        } else {
            layout_rank(m).is_some()
        }
    };
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    if found.as_deref().is_some_and(fits) {
        if found.as_deref() == Some(LAYOUT_PARTITIONS_BYTE_ORDER) {
            let mut b = WriteBatch::new();
            b.put_cf(server_cf, LAYOUT_KEY, LAYOUT_PARTITIONS);
            db.write_opt(b, &sync).map_err(db_err)?;
        }
        return Ok(());
    }
    let mut it = db.raw_iterator_cf(meta_cf);
    it.seek_to_first();
    let has_keys = it.key().is_some();
    it.status().map_err(db_err)?;
    if has_keys {
        return Err(layout_err(match found {
            Some(m) => format!("{:?}", String::from_utf8_lossy(&m)),
            None => "keys without their slot (written by an earlier strata-server)".to_string(),
        }));
    }
    // No keys: the marker of this mode (a store of the other mode that holds no keys has
    // nothing to misread). A standalone store that used other databases keeps its marker's
    // promise only while it has their sets, so it is not remarked.
    if let Some(m) = found.filter(|m| m != LAYOUT && layout_rank(m).is_some()) {
        return Err(layout_err(format!("{:?}", String::from_utf8_lossy(&m))));
    }
    let mut b = WriteBatch::new();
    b.put_cf(server_cf, LAYOUT_KEY, if partitioned { LAYOUT_PARTITIONS } else { LAYOUT });
    db.write_opt(b, &sync).map_err(db_err)
}
