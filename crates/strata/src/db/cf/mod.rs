//! Column families at run time (creating, dropping and listing them: `admin.rs`; what the
//! layers below the DB need, ids and the handle trait: `crate::column_family`): the handle users hold ([`ColumnFamily`]), each family's
//! shared part ([`Cfd`]: options, current super version) and its memtable state
//! ([`CfState`], under `DbInner::state`), and the memtables write groups insert into
//! ([`MemSet`]).
//!
//! Invariants:
//! - every family has its own memtables and LSM tree (its own version in the MANIFEST); all
//!   share the WAL, the sequence numbers, the table cache and the background threads;
//! - a family's memtable is switched on its own (a new WAL starts, the other families keep
//!   theirs); `CfState::mem_log` is the WAL that was current when its active memtable
//!   started, so the family's data in older WALs is in its immutable memtables or tables;
//! - a WAL may be deleted once every family's data in it is in tables: below
//!   [`min_log_to_keep`] over all families;
//! - a dropped family's handle stays usable for reads (its super version keeps its files
//!   alive); writes to it are refused, and records of it found in the WAL are skipped.

pub(crate) mod admin;

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::local_sv::LocalSuperVersions;
use super::SuperVersion;
use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId};
use crate::memtable::MemTable;
use crate::options::Options;

use crate::sstable::TableOptions;
use crate::types::{FileNumber, SeqNo, ValueType};
use crate::version::levels::Version;
use crate::version::paths::TablePaths;
use crate::version::set::FamilyLayout;
use crate::write_batch::BatchRecord;

/// A fresh memtable of a family with options `family` in the DB opened with `db`: counted in
/// the DB's write buffer manager, with a whole-key filter of `memtable_bloom_size_ratio` of
/// what the memtable can hold (its `write_buffer_size`, or the DB's memtable budget when that
/// is smaller, so a small budget with large buffers does not get large filters), and no more
/// than [`FILTER_MAX_BITS_PER_KEY`] for each entry it is expected to hold when `previous` (the
/// memtable it replaces) held enough entries to tell their size ([`FILTER_SAMPLE_ENTRIES`]).
///
/// Why the cap: the ratio sizes the filter by bytes, but its use grows with the number of
/// keys. With large values the ratio's filter is mostly empty bits that take the memtable's
/// room: 1% of a 64 MiB memtable of 100 KB values is 8,400 bits for each of its 640 keys,
/// six values fewer per memtable. Past about 40 bits per key more bits barely lower the
/// false positives (`memtable/bloom.rs`). A memtable whose entries turn out smaller than its
/// predecessor's gets a filter that is too small for it, which only costs skiplist searches
/// its filter does not save (false positives, never a missed entry); the next one is sized
/// from it.
pub(crate) fn new_memtable(
    family: &Options,
    db: &Options,
    previous: Option<&MemTable>,
) -> Arc<MemTable> {
    let budget = match &db.write_buffer_manager {
        Some(m) if m.enabled() => m.buffer_size(),
        _ if db.db_write_buffer_size > 0 => db.db_write_buffer_size,
        _ => usize::MAX,
    };
    let capacity = family.write_buffer_size.min(budget);
    let bloom_bytes = filter_bytes(
        capacity,
        family.memtable_bloom_size_ratio,
        previous.and_then(|m| m.bytes_per_entry(FILTER_SAMPLE_ENTRIES)),
    );
    let order = family.comparator.clone();
    let vector = family.vector_memtable;
    let manager = db.write_buffer_manager.as_ref();
    Arc::new(MemTable::with_rep(manager, bloom_bytes, order, vector, capacity))
}

/// Bits of a memtable's filter per key it is expected to hold, at most ([`new_memtable`]).
pub(crate) const FILTER_MAX_BITS_PER_KEY: usize = 40;

/// Entries the memtable before must have held for its entry size to cap the filter.
pub(crate) const FILTER_SAMPLE_ENTRIES: u64 = 64;

/// The filter bytes of a memtable of `capacity` bytes under `ratio`, capped by the keys it
/// would hold at `entry_bytes` each when known ([`new_memtable`]). 0 when `ratio` is.
fn filter_bytes(capacity: usize, ratio: f64, entry_bytes: Option<usize>) -> usize {
    let by_ratio = (capacity as f64 * ratio) as usize;
    match entry_bytes {
        Some(e) if by_ratio > 0 => {
            let keys = capacity / e.max(1);
            by_ratio.min((keys.saturating_mul(FILTER_MAX_BITS_PER_KEY) / 8).max(8))
        }
        _ => by_ratio,
    }
}

/// A family to open or create: its name and its options. Of the options, the family uses
/// what shapes one LSM tree (memtable size and count, compaction style and its settings,
/// table options: block size, compression, bloom bits; merge operator, prefix extractor,
/// compaction filter); the DB-wide settings (WAL, file system, caches, threads, sync) come
/// from the options the DB is opened with.
#[derive(Clone, Debug)]
pub struct ColumnFamilyDescriptor {
    pub(crate) name: String,
    pub(crate) options: Options,
    pub(crate) ttl: ColumnFamilyTtl,
}

/// A family's time to live under the TTL opens (`Db::open_cf_descriptors_with_ttl`,
/// `db/ttl.rs`); the other opens ignore it, as RocksDB's do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColumnFamilyTtl {
    /// No expiry.
    #[default]
    Disabled,
    /// Entries may be dropped once older than this.
    Duration(std::time::Duration),
    /// The TTL the DB is opened with.
    SameAsDb,
}

impl ColumnFamilyDescriptor {
    /// A descriptor for family `name` with `options` (and, under a TTL open, the DB's TTL:
    /// [`ColumnFamilyTtl::SameAsDb`], as the `rocksdb` crate's).
    pub fn new(name: impl Into<String>, options: Options) -> Self {
        ColumnFamilyDescriptor { name: name.into(), options, ttl: ColumnFamilyTtl::SameAsDb }
    }

    /// A descriptor with a time to live (the `rocksdb` crate's).
    pub fn new_with_ttl(name: impl Into<String>, options: Options, ttl: ColumnFamilyTtl) -> Self {
        ColumnFamilyDescriptor { name: name.into(), options, ttl }
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, ttl: ColumnFamilyTtl) {
        self.ttl = ttl;
    }

    /// The time to live.
    pub fn ttl(&self) -> ColumnFamilyTtl {
        self.ttl
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The family's options (as `Options::load_latest` read them, for one).
    pub fn options(&self) -> &Options {
        &self.options
    }
}

/// A column family's shared part: what reads and background jobs of the family need.
pub(crate) struct Cfd {
    pub id: ColumnFamilyId,
    pub name: String,
    /// The family's options (sanitized) as opened; DB-wide settings are read from the DB's
    /// options.
    pub opts: Options,
    /// The options as `Db::set_options` last changed them (`opts` until then). The decisions
    /// that follow a change while the DB is open read these: compaction picking and the
    /// automatic-compaction switch, write stalls, memtable size and count, new memtables'
    /// filters. Everything else reads `opts` (`db/rocksdb_api.rs` refuses a change that
    /// would only take effect at the next open).
    live: RwLock<Arc<Options>>,
    /// Raised after each change of `live`, so that a writer can tell they are unchanged
    /// without the lock (`db/write/stall.rs`).
    live_changes: AtomicU64,
    /// Table options per level (they differ in compression with `compression_per_level`).
    pub table_options: Vec<TableOptions>,
    /// The family's table directories (`db/paths.rs`), as its versions resolve them.
    pub paths: TablePaths,
    pub super_version: RwLock<Arc<SuperVersion>>,
    /// Per-thread cached references to the current super version, for point reads.
    pub local_svs: LocalSuperVersions,
    pub dropped: AtomicBool,
    /// The DB instance the family belongs to (`DbInner::instance`).
    pub owner: u64,
    /// The family's flush and compaction statistics (`default`'s are the DB's).
    pub stats: Arc<crate::stats::Stats>,
    /// Bytes every stored value ends with that reads strip: the write time of a DB opened
    /// with a TTL (`db/ttl.rs`), else 0.
    pub value_suffix: usize,
    /// With user-defined timestamps: the oldest timestamp reads may name
    /// (`Db::increase_full_history_ts_low`), as recorded in the MANIFEST.
    full_history_ts_low: RwLock<Option<Vec<u8>>>,
}

impl Cfd {
    pub(crate) fn new(
        owner: u64,
        id: ColumnFamilyId,
        name: &str,
        opts: Options,
        sv: SuperVersion,
        stats: Arc<crate::stats::Stats>,
        value_suffix: usize,
    ) -> Cfd {
        let number = sv.number;
        Cfd {
            stats,
            id,
            name: name.to_string(),
            paths: sv.version.paths().clone(),
            table_options: (0..opts.num_levels).map(|l| opts.table_options_for_level(l)).collect(),
            live: RwLock::new(Arc::new(opts.clone())),
            live_changes: AtomicU64::new(0),
            opts,
            super_version: RwLock::new(Arc::new(sv)),
            local_svs: LocalSuperVersions::new(number),
            dropped: AtomicBool::new(false),
            owner,
            value_suffix,
            full_history_ts_low: RwLock::new(None),
        }
    }

    /// The family's level count and table paths, as its versions are built.
    pub(crate) fn layout(&self) -> FamilyLayout {
        FamilyLayout { num_levels: self.opts.num_levels, paths: self.paths.clone() }
    }

    /// The directory of the family's table path `path_id` (the DB directory `db_dir` when
    /// the paths are not known).
    pub(crate) fn table_dir<'a>(
        &'a self,
        path_id: u32,
        db_dir: &'a std::path::Path,
    ) -> &'a std::path::Path {
        self.paths.iter().nth(path_id as usize).map_or(db_dir, |p| &*p.dir)
    }

    /// The oldest user-defined timestamp reads may name, if one was set.
    pub(crate) fn full_history_ts_low(&self) -> Option<Vec<u8>> {
        self.full_history_ts_low.read().clone()
    }

    /// Sets [`Self::full_history_ts_low`] (the caller has recorded it, or read it from the
    /// MANIFEST).
    pub(crate) fn set_full_history_ts_low(&self, ts: Option<Vec<u8>>) {
        *self.full_history_ts_low.write() = ts;
    }

    /// The family's options as changed while open (see `live`).
    pub(crate) fn live_opts(&self) -> Arc<Options> {
        self.live.read().clone()
    }

    /// Makes `o` the family's live options.
    pub(crate) fn set_live_opts(&self, o: Options) {
        *self.live.write() = Arc::new(o);
        self.live_changes.fetch_add(1, Ordering::Release);
    }

    /// How many times the live options changed: read before [`Self::live_opts`], a count
    /// that has not moved since means the options read then are still current.
    pub(crate) fn live_changes(&self) -> u64 {
        self.live_changes.load(Ordering::Acquire)
    }

    pub(crate) fn current_super_version(&self) -> Arc<SuperVersion> {
        self.super_version.read().clone()
    }

    /// Publishes a new super version of the family built from `cs` and `version`.
    pub(crate) fn install_super_version(&self, cs: &CfState, version: Arc<Version>) {
        let mut current = self.super_version.write();
        let sv =
            SuperVersion::build(&self.live_opts(), &cs.mem, &cs.imm, version, current.number + 1);
        if Arc::ptr_eq(&current.version, &sv.version) {
            if let Some(r) = current.version_range_dels.get() {
                let _ = sv.version_range_dels.set(r.clone());
            }
        }
        let number = sv.number;
        *current = Arc::new(sv);
        // Under the write lock, so numbers are recorded in installation order.
        self.local_svs.invalidate(number);
    }

    /// Publishes `other`'s memtables and version as this family's next super version (a
    /// read-only `Db` catching up with its primary: `Db::try_catch_up_with_primary`).
    pub(crate) fn adopt_super_version(&self, other: &SuperVersion) {
        let mut current = self.super_version.write();
        let number = current.number + 1;
        *current = Arc::new(SuperVersion {
            number,
            mem: other.mem.clone(),
            imm: other.imm.clone(),
            version: other.version.clone(),
            pending_compaction_bytes: other.pending_compaction_bytes,
            stall_count: other.stall_count,
            version_range_dels: std::sync::OnceLock::new(),
        });
        self.local_svs.invalidate(number);
    }
}

/// A column family of an open DB (rust-rocksdb's `ColumnFamily`/`BoundColumnFamily`). Get it
/// from [`crate::Db::cf_handle`] or [`crate::Db::create_cf`]; pass it (or `&Arc` of it) to
/// the `_cf` calls. After [`crate::Db::drop_cf`] reads through it still work on the data as
/// of the drop, and writes are refused.
pub struct ColumnFamily {
    pub(crate) cfd: Arc<Cfd>,
}

impl ColumnFamily {
    /// The family's name.
    pub fn name(&self) -> &str {
        &self.cfd.name
    }

    /// The family's id (0 for `default`).
    pub fn id(&self) -> ColumnFamilyId {
        self.cfd.id
    }
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamily")
            .field("name", &self.cfd.name)
            .field("id", &self.cfd.id)
            .finish()
    }
}

impl AsColumnFamilyRef for ColumnFamily {
    fn cf_id(&self) -> ColumnFamilyId {
        self.cfd.id
    }
    fn cf_any(&self) -> &dyn Any {
        self
    }
    fn timestamp_size(&self) -> usize {
        self.cfd.opts.timestamps.as_ref().map_or(0, |t| t.size())
    }
}

/// One family's memtables, under `DbInner::state`.
pub(crate) struct CfState {
    pub cfd: Arc<Cfd>,
    /// The active memtable, and the WAL that was current when it started.
    pub mem: Arc<MemTable>,
    pub mem_log: FileNumber,
    /// Immutable memtables waiting for flush, oldest first, each with the WAL it started in.
    pub imm: VecDeque<(Arc<MemTable>, FileNumber)>,
    /// Count of memtables made immutable, of memtables flushed (installed in a version), and
    /// of those whose flush then retired the WALs it made obsolete (what `flush` waits on).
    pub memtables_switched: u64,
    pub memtables_flushed: u64,
    pub memtables_retired: u64,
    /// Memtables up to this count of switched ones are flushed whether or not
    /// `min_write_buffer_number_to_merge` of them wait ([`CfState::request_flush`]).
    pub flush_requested: u64,
    /// How fast flushes add L0 files and compactions read, for L0 batching.
    pub l0_pace: crate::compaction::l0_batch::L0Pace,
}

impl CfState {
    /// How many immutable memtables the next flush writes together, `None` while none is
    /// due: the oldest alone when the family merges none (`Options::flush_merge_min` 1);
    /// else all of them, once there are that many or a flush of them was asked for.
    pub(crate) fn flush_count(&self) -> Option<usize> {
        let merge_min = self.cfd.live_opts().flush_merge_min();
        let n = self.imm.len();
        match n {
            0 => None,
            _ if merge_min <= 1 => Some(1),
            _ => (n >= merge_min || self.memtables_flushed < self.flush_requested).then_some(n),
        }
    }

    /// Every memtable made immutable so far is flushed without waiting for more (a flush
    /// someone waits on, or one that frees memory).
    pub(crate) fn request_flush(&mut self) {
        self.flush_requested = self.memtables_switched;
    }

    /// The oldest WAL holding data of this family not yet in its tables, `None` when none.
    pub(crate) fn oldest_unflushed_log(&self) -> Option<FileNumber> {
        match self.imm.front() {
            Some((_, log)) => Some(*log),
            None if !self.mem.is_empty() => Some(self.mem_log),
            None => None,
        }
    }
}

/// WALs below this hold nothing of any family that is not in a table: the smallest WAL
/// holding unflushed data of a family (`skip` is treated as flushed through `skip_to`), or,
/// when no family holds any, the newest WAL.
pub(crate) fn min_log_to_keep(
    cfs: &BTreeMap<ColumnFamilyId, CfState>,
    skip: Option<(ColumnFamilyId, Option<FileNumber>)>,
) -> FileNumber {
    let newest = cfs.values().map(|c| c.mem_log).max().unwrap_or(FileNumber(0));
    cfs.iter()
        .filter_map(|(id, c)| match skip {
            Some((s, after)) if s == *id => after,
            _ => c.oldest_unflushed_log(),
        })
        .min()
        .unwrap_or(newest)
}

/// A family's active memtable, as the write path holds it.
#[derive(Clone)]
pub(crate) struct FamilyMem {
    pub cfd: Arc<Cfd>,
    pub mem: Arc<MemTable>,
}

/// The active memtable of every family, as a write group inserts into them (a family's
/// memtable changes only under the WAL lock, after every group in flight finished).
#[derive(Clone)]
pub(crate) struct MemSet {
    pub default: FamilyMem,
    /// The other families, by id, ascending.
    pub others: Vec<FamilyMem>,
}

impl MemSet {
    /// The memtable of family `cf`; `None` for a family that does not exist (dropped).
    #[inline]
    pub(crate) fn get(&self, cf: ColumnFamilyId) -> Option<&FamilyMem> {
        if cf == 0 {
            return Some(&self.default);
        }
        self.others.binary_search_by_key(&cf, |f| f.cfd.id).ok().map(|i| &self.others[i])
    }

    /// Every family, `default` first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &FamilyMem> {
        std::iter::once(&self.default).chain(&self.others)
    }

    /// This set with family `f.cfd.id`'s memtable replaced (or the family added).
    pub(crate) fn with(&self, f: FamilyMem) -> MemSet {
        let mut s = self.clone();
        if f.cfd.id == 0 {
            s.default = f;
        } else {
            match s.others.binary_search_by_key(&f.cfd.id, |x| x.cfd.id) {
                Ok(i) => s.others[i] = f,
                Err(i) => s.others.insert(i, f),
            }
        }
        s
    }

    /// This set without family `cf`.
    pub(crate) fn without(&self, cf: ColumnFamilyId) -> MemSet {
        let mut s = self.clone();
        s.others.retain(|f| f.cfd.id != cf);
        s
    }

    /// Inserts `records` at consecutive sequence numbers from `first`, each into its family's
    /// memtable; records of a family that no longer exists are skipped (dropped with it).
    /// Returns how many records were consumed. `single_cf`: every record is `default`'s.
    /// Nothing is linked here: the caller calls [`Self::link_due`] once the write is
    /// published (`MemTable::add_batch_unlinked`).
    pub(crate) fn add_batch<'a>(
        &self,
        first: SeqNo,
        records: impl Iterator<Item = BatchRecord<'a>>,
        single_cf: bool,
    ) -> u64 {
        if single_cf {
            return self.default.mem.add_batch_unlinked(first, records.map(as_entry));
        }
        // Runs of consecutive records of one family go in with one call.
        let mut run: Vec<(ValueType, &[u8], &[u8])> = Vec::new();
        let (mut run_cf, mut run_first, mut n, mut consumed) = (0, first.0, 0u64, 0u64);
        let put_run = |cf: ColumnFamilyId, from: u64, run: &mut Vec<_>| {
            let len = run.len() as u64;
            match self.get(cf) {
                Some(f) => {
                    f.mem.add_batch_unlinked(SeqNo(from), run.drain(..));
                }
                None => run.clear(),
            }
            len
        };
        for r in records {
            if r.cf != run_cf && !run.is_empty() {
                consumed += put_run(run_cf, run_first, &mut run);
            }
            if run.is_empty() {
                run_cf = r.cf;
                run_first = first.0 + n;
            }
            run.push(as_entry(r));
            n += 1;
        }
        if !run.is_empty() {
            consumed += put_run(run_cf, run_first, &mut run);
        }
        consumed
    }

    /// Links what waits to be linked in the memtables a write went to, where a batch is due
    /// (`MemTable::link_due`): `default`'s when `single_cf`, else every family's. An error
    /// when one of them is poisoned (`MemTable::check_sound`): the write may not be reachable.
    pub(crate) fn link_due(&self, single_cf: bool) -> crate::error::Result<()> {
        let link = |m: &MemTable| {
            m.link_due();
            m.is_poisoned()
        };
        let mut poisoned = link(&self.default.mem);
        if !single_cf {
            for f in &self.others {
                poisoned |= link(&f.mem);
            }
        }
        if poisoned {
            return Err(crate::memtable::poisoned());
        }
        Ok(())
    }
}

fn as_entry(r: BatchRecord<'_>) -> (ValueType, &[u8], &[u8]) {
    (r.value_type, r.key, r.value)
}

/// A handle given to a DB call, resolved to its family: `InvalidArgument` when it belongs to
/// another DB.
pub(crate) fn resolve(owner: u64, cf: &impl AsColumnFamilyRef) -> crate::Result<&Arc<Cfd>> {
    match cf.cf_any().downcast_ref::<ColumnFamily>() {
        Some(h) if h.cfd.owner == owner => Ok(&h.cfd),
        Some(h) => Err(crate::Error::InvalidArgument(format!(
            "column family {:?} belongs to another open DB",
            h.cfd.name
        ))),
        None => Err(crate::Error::InvalidArgument("not a column family handle".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_is_capped_by_the_keys_the_memtable_would_hold() {
        let mib64 = 64 << 20;
        // No predecessor to tell the entries' size, or no filter asked for: the ratio.
        assert_eq!(filter_bytes(mib64, 0.01, None), 671_088);
        assert_eq!(filter_bytes(mib64, 0.0, Some(100)), 0);
        // 100 KB values: 654 keys, 40 bits each.
        assert_eq!(filter_bytes(mib64, 0.01, Some(102_500)), 654 * 40 / 8);
        // 100-byte values (about 150 bytes an entry): the ratio is the smaller.
        assert_eq!(filter_bytes(mib64, 0.01, Some(150)), 671_088);
        // One word at least.
        assert_eq!(filter_bytes(1 << 20, 0.01, Some(1 << 30)), 8);
    }

    #[test]
    fn the_replaced_memtable_sizes_the_next_ones_filter() {
        let o = Options { write_buffer_size: 64 << 20, ..Options::default() };
        let first = new_memtable(&o, &o, None);
        assert_eq!(first.bloom_bytes(), 671_088);
        let value = vec![7u8; 100_000];
        for i in 0..FILTER_SAMPLE_ENTRIES - 1 {
            first.add(SeqNo(i + 1), ValueType::Value, &i.to_be_bytes(), &value);
        }
        // Too few entries to tell.
        assert_eq!(new_memtable(&o, &o, Some(&first)).bloom_bytes(), 671_088);
        first.add(SeqNo(FILTER_SAMPLE_ENTRIES), ValueType::Value, b"last", &value);
        let next = new_memtable(&o, &o, Some(&first));
        assert!(next.bloom_bytes() < 4_000, "{}", next.bloom_bytes());
    }
}
