//! The databases of a server (Redis's `SELECT 0..databases-1`). Each is a key space of its
//! own: a *family set*, three column families of the one engine, numbered from 0:
//!
//! ```text
//!  set 0:  metadata    subkey    zscore      (a store with one database has only these)
//!  set n:  metadata.n  subkey.n  zscore.n    (n >= 1)
//! ```
//!
//! Records are laid out alike in every set (`docs/format/server-encoding.md`), so a
//! database is the same encoding in other families: FLUSHDB deletes its set's ranges, DBSIZE
//! counts its metadata family, MOVE writes both sets in one batch. A set's families are
//! created the first time its database is selected or named (SELECT, MOVE, COPY ... DB,
//! SWAPDB: [`Databases::ensure`]) and are never dropped; a database never used costs none.
//!
//! Which set each database uses is the *map*, a permutation of set numbers: the identity
//! until SWAPDB exchanges two entries. It is stored (synced, before the swap is answered)
//! in the `server` family, as `key "databases"`, `value set u32LE * n` (entry i: the set of
//! database i); a database past the stored entries, or with none stored, uses the set of
//! its own number.
//!
//! Commands find their database's set when they run ([`Databases::store`]) while the map
//! is *pinned* ([`Databases::pin`]: shared by every command, exclusive for SWAPDB), so no
//! command runs across a swap: each one reads and writes the sets of one map. The pin is a
//! striped reader-writer lock: a thread takes the read side of its own stripe (threads take
//! the stripes in turn, so two share one only past 16 threads), SWAPDB the write side of
//! every stripe; the lock every command takes then moves no cache line between cores.
//!
//! Invariant: every database a connection can be on has its set created. A connection
//! starts on 0, whose set is created at open; SELECT creates the set it selects before it
//! succeeds; SWAPDB creates both sets before it swaps.

use super::filter::{self, StaleRule, StoreSlot};
use super::{check_layout, Engine, OpenError, Store, SyncPolicy, CF_SERVER};
use crate::filing::Filing;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use strata::{ColumnFamilyDescriptor, Db, MergeOperator, Options};

/// The key of the map in the `server` family.
pub const MAP_KEY: &[u8] = b"databases";

/// The most databases a server may be configured with (`databases`).
pub const MAX_DATABASES: usize = 4096;

/// The three data families of set `n`: (metadata, subkey, zscore).
pub fn family_names(n: u32) -> [String; 3] {
    let [m, s, z] = [super::CF_METADATA, super::CF_SUBKEY, super::CF_ZSCORE];
    if n == 0 {
        [m.to_string(), s.to_string(), z.to_string()]
    } else {
        [format!("{m}.{n}"), format!("{s}.{n}"), format!("{z}.{n}")]
    }
}

/// The set and family index (0 metadata, 1 subkey, 2 zscore) a family name gives, if it
/// names a data family.
fn parse_family(name: &str) -> Option<(u32, usize)> {
    let (base, n) = match name.split_once('.') {
        Some((b, n)) => {
            // Canonical numbers only ("metadata.01" is not set 1).
            let set: u32 = n.parse().ok().filter(|v: &u32| *v >= 1 && v.to_string() == n)?;
            (b, set)
        }
        None => (name, 0),
    };
    let which =
        [super::CF_METADATA, super::CF_SUBKEY, super::CF_ZSCORE].iter().position(|f| *f == base)?;
    Some((n, which))
}

/// Why [`Databases::ensure`] or [`Databases::swap`] failed.
#[derive(Debug)]
pub enum DbError {
    /// Not a database of this server (`databases` configured).
    OutOfRange(usize),
    /// The engine failed (creating families, storing the map).
    Engine(strata::Error),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::OutOfRange(_) => write!(f, "DB index is out of range"),
            DbError::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DbError {}

impl From<strata::Error> for DbError {
    fn from(e: strata::Error) -> Self {
        DbError::Engine(e)
    }
}

thread_local! {
    /// Whether this thread holds the map pinned: 0 no, 1 shared, 2 exclusively.
    static PINNED: Cell<u8> = const { Cell::new(0) };
}

/// The map pinned by this thread ([`Databases::pin`]); unpinned on drop.
pub enum Pin<'a> {
    /// Pinned by a command running around this one (EXEC's, a script's): nothing more.
    Nested,
    /// Shared: the map does not change until dropped.
    Shared(RwLockReadGuard<'a, ()>),
    /// Exclusive: no other command runs until dropped (SWAPDB).
    Exclusive(Vec<RwLockWriteGuard<'a, ()>>),
}

/// The stripes of the pin lock ([`Databases::pin`]).
const PIN_STRIPES: usize = 16;

/// One stripe, alone on its cache lines.
#[repr(align(128))]
#[derive(Default)]
struct PinStripe(RwLock<()>);

/// This thread's stripe: threads take stripes in turn as they first pin.
fn my_stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % PIN_STRIPES;
    }
    STRIPE.with(|s| *s)
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        if !matches!(self, Pin::Nested) {
            PINNED.with(|p| p.set(0));
        }
    }
}

/// Whether this thread holds the map pinned exclusively (SWAPDB may change it).
pub fn pinned_exclusively() -> bool {
    PINNED.with(|p| p.get() == 2)
}

thread_local! {
    /// The partition this thread's command runs for (cluster mode), set by the router's
    /// check before the command runs ([`serve_partition`]).
    static SERVING: Cell<Option<u16>> = const { Cell::new(None) };
}

/// Makes `p` the partition this thread's commands run for ([`Databases::store`]) until the
/// guard is dropped, which restores the one before (a command a script or EXEC runs sets its
/// own inside the outer one's).
pub fn serve_partition(p: Option<u16>) -> Serving {
    Serving(SERVING.with(|s| s.replace(p)))
}

/// The partition this thread's command runs for, if one was set.
pub fn serving() -> Option<u16> {
    SERVING.with(Cell::get)
}

/// Restores the partition served before, when dropped ([`serve_partition`]).
pub struct Serving(Option<u16>);

impl Drop for Serving {
    fn drop(&mut self) {
        SERVING.with(|s| s.set(self.0));
    }
}

/// The databases of one store.
pub struct Databases {
    engine: Arc<Engine>,
    /// The options a new set's families are created with.
    opts: Options,
    stale: StaleRule,
    /// The metadata families' merge operator (`Store::merge_meta`), if any.
    meta_merge: Option<Arc<dyn MergeOperator>>,
    /// How many databases SELECT reaches (`databases`).
    count: usize,
    /// By set number: the set's store, once its families exist.
    sets: Vec<OnceLock<Arc<Store>>>,
    /// By set number: where its compaction filter finds its store.
    slots: Vec<StoreSlot>,
    /// By database: its set.
    map: Vec<AtomicU32>,
    /// By database: the SWAPDBs that named it (WATCH tells a swapped key by it).
    swaps: Vec<AtomicU64>,
    /// Held while creating a set or changing the map.
    admin: Mutex<()>,
    /// A cluster node's store: its keys are filed under their partition (`crate::filing`),
    /// set 0's store sees every partition's, and each partition has a view of its own.
    partitioned: bool,
    /// By partition (a cluster node's store): its view of set 0, once used.
    views: Box<[OnceLock<Arc<Store>>]>,
    /// Shared by running commands (each its thread's stripe), exclusive for SWAPDB (every
    /// stripe, in order) ([`Databases::pin`]).
    pins: Box<[PinStripe]>,
}

impl Databases {
    /// Opens (creating if needed) the store in `dir` with `count` databases (1 to
    /// [`MAX_DATABASES`]; a stored map or set past it stays, unreachable by SELECT until
    /// `count` is raised), or with `partitioned`, a cluster node's store (one database, its
    /// keys filed under their partitions: `crate::filing`). Compactions of every set's
    /// `subkey` and `zscore` families drop the entries `stale` judges stale ([`filter`]).
    /// The merge operator of `opts`, if any, is the metadata families' only (field deltas:
    /// `Store::merge_meta`).
    pub fn open(
        mut opts: Options,
        dir: &std::path::Path,
        policy: SyncPolicy,
        stale: StaleRule,
        count: usize,
        partitioned: bool,
    ) -> Result<Arc<Databases>, OpenError> {
        let count = if partitioned { 1 } else { count.clamp(1, MAX_DATABASES) };
        opts.create_if_missing = true;
        opts.create_missing_column_families = true;
        let meta_merge = opts.merge_operator.take();
        // The block cache made here, so that its capacity can change while the server runs.
        if opts.block_cache.is_none() && opts.block_cache_size > 0 {
            opts.block_cache = Some(strata::Cache::new_lru(opts.block_cache_size));
        }
        let block_cache = opts.block_cache.clone().map(|c| {
            let capacity = c.capacity();
            (c, capacity)
        });
        let db_err = |source| OpenError::Db { dir: dir.to_path_buf(), source };
        // Every family the DB has must be named at open: the sets' families (each with its
        // own filter slot), the server family, and those the store does not own (cluster
        // mode's Raft log and metadata: `strata_replication::NodeStorage`).
        let listed = Db::list_cf(&opts, dir).unwrap_or_default();
        let mut found: HashMap<u32, [bool; 3]> = HashMap::new();
        found.insert(0, [true; 3]);
        let mut others = Vec::new();
        for name in &listed {
            match parse_family(name) {
                Some((n, which)) => found.entry(n).or_default()[which] = true,
                None if name != CF_SERVER && name != "default" => others.push(name.clone()),
                None => {}
            }
        }
        let mut slots: HashMap<u32, StoreSlot> = HashMap::new();
        let mut descriptors = vec![ColumnFamilyDescriptor::new(CF_SERVER, opts.clone())];
        for (&n, present) in &found {
            let slot = slots.entry(n).or_insert_with(|| Arc::new(OnceLock::new())).clone();
            for (i, name) in family_names(n).into_iter().enumerate() {
                if present[i] {
                    descriptors.push(ColumnFamilyDescriptor::new(
                        name,
                        family_options(&opts, i, &slot, stale, meta_merge.as_ref()),
                    ));
                }
            }
        }
        // Cluster mode's Raft families are named from the first open, so they have the same
        // options before and after a restart (`NodeStorage::open` would create them with the
        // engine's defaults).
        if partitioned {
            let missing: Vec<String> = strata_replication::FAMILIES
                .iter()
                .filter(|f| !others.iter().any(|o| o == *f))
                .map(|f| f.to_string())
                .collect();
            others.extend(missing);
        }
        for name in others {
            let family = strata_replication::family_options(&name, &opts);
            descriptors.push(ColumnFamilyDescriptor::new(name, family));
        }
        let db = Db::open_cf_descriptors(&opts, dir, descriptors).map_err(db_err)?;
        let server_cf = db.cf_handle(CF_SERVER).ok_or(OpenError::MissingFamily(CF_SERVER))?;
        let first = family_names(0);
        let meta0 = db.cf_handle(&first[0]).ok_or(OpenError::MissingFamily(super::CF_METADATA))?;
        check_layout(&db, dir, &meta0, &server_cf, partitioned)?;
        let marker = db.get_cf(&*server_cf, super::LAYOUT_KEY).map_err(db_err)?;
        let layout_rank = marker.as_deref().and_then(super::layout_rank).unwrap_or(0);
        let stored = match db.get_cf(&*server_cf, MAP_KEY).map_err(db_err)? {
            Some(raw) => decode_map(&raw).ok_or_else(|| OpenError::Layout {
                dir: dir.to_path_buf(),
                found: format!(
                    "a databases map of {} bytes that is not a permutation of set numbers",
                    raw.len()
                ),
                partitioned,
            })?,
            None => Vec::new(),
        };
        let highest = found.keys().copied().max().unwrap_or(0) as usize;
        let n = count.max(stored.len()).max(highest + 1);
        let engine = Arc::new(Engine {
            db: Arc::new(db),
            server_cf,
            locks: super::locks::LockTable::default(),
            sync: std::sync::atomic::AtomicU8::new(policy as u8),
            last_version: AtomicU64::new(0),
            closing: std::sync::atomic::AtomicBool::new(false),
            syncs: Arc::new(super::sync_group::SyncGroup::default()),
            meta_cache: super::meta_cache::MetaCache::for_block_cache(opts.block_cache_size),
            block_cache,
            frequencies: super::frequency::Frequencies::default(),
            pop_hints: super::pop_hints::PopHints::default(),
            due: super::due::DueIndex::default(),
            own_due: super::due::DueIndex::default(),
            scan_steps: AtomicU64::new(0),
            field_deltas: AtomicU64::new(0),
            expired_kept: std::sync::atomic::AtomicBool::new(false),
            backlog: super::backlog::Backlog::default(),
            replicate: OnceLock::new(),
            meta_merges: meta_merge.is_some(),
            layout_rank: std::sync::atomic::AtomicU8::new(layout_rank),
            layout_lock: parking_lot::Mutex::new(()),
        });
        let dbs = Databases {
            engine,
            opts,
            stale,
            meta_merge,
            count,
            sets: (0..n).map(|_| OnceLock::new()).collect(),
            slots: (0..n as u32)
                .map(|i| slots.remove(&i).unwrap_or_else(|| Arc::new(OnceLock::new())))
                .collect(),
            map: (0..n)
                .map(|i| AtomicU32::new(stored.get(i).copied().unwrap_or(i as u32)))
                .collect(),
            swaps: (0..n).map(|_| AtomicU64::new(0)).collect(),
            admin: Mutex::new(()),
            partitioned,
            views: (0..if partitioned { usize::from(crate::slots::SLOTS) } else { 0 })
                .map(|_| OnceLock::new())
                .collect(),
            pins: (0..PIN_STRIPES).map(|_| PinStripe::default()).collect(),
        };
        // Sets whose three families exist are ready; one an interrupted creation left
        // incomplete is completed when its database is next named.
        for (&set, present) in &found {
            if present.iter().all(|p| *p) {
                dbs.create_set(set).map_err(db_err)?;
            }
        }
        Ok(Arc::new(dbs))
    }

    /// The engine under every database.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The store's layout marker as written (tests of the markers' order).
    #[cfg(test)]
    pub(crate) fn layout_marker(&self) -> Option<Vec<u8>> {
        self.engine.db.get_cf(&*self.engine.server_cf, super::LAYOUT_KEY).unwrap()
    }

    /// The store of database `db`, which must have its set (the module's invariant: any
    /// database a connection is on, any database [`Databases::ensure`] succeeded for).
    /// A database without one (a broken invariant) gets the first database's store in
    /// release builds.
    ///
    /// On a cluster node's store, the view of the partition this thread's command runs for
    /// ([`serve_partition`]), or without one the store of every partition (whose walks see
    /// every key, and whose writes no group takes).
    pub fn store(&self, db: usize) -> &Arc<Store> {
        if self.partitioned {
            return self.partition(serving().unwrap_or(crate::filing::NOWHERE));
        }
        let found =
            self.map.get(db).and_then(|s| self.sets[s.load(Ordering::Acquire) as usize].get());
        debug_assert!(found.is_some(), "database {db} used before its set was created");
        found.unwrap_or_else(|| self.first())
    }

    /// The store of the database whose set is 0: in cluster mode, the only one.
    pub fn first(&self) -> &Arc<Store> {
        // Created at open and never removed.
        self.sets[0].get().expect("set 0 is created at open")
    }

    /// Whether this is a cluster node's store, its keys filed under their partitions.
    pub fn is_partitioned(&self) -> bool {
        self.partitioned
    }

    /// Partition `p`'s view of a cluster node's store (`crate::filing`): the keys it files
    /// and reads lead with `p`. On a standalone store, or for a `p` no partition has, the
    /// first database's store (whose keys a cluster node files nowhere).
    pub fn partition(&self, p: u16) -> &Arc<Store> {
        let Some(view) = self.views.get(usize::from(p)) else { return self.first() };
        view.get_or_init(|| {
            let first = self.first();
            Arc::new(Store {
                engine: self.engine.clone(),
                set: first.set,
                filing: Filing::Partition(p),
                space: super::partition_space(p),
                meta_cf: first.meta_cf.clone(),
                sub_cf: first.sub_cf.clone(),
                score_cf: first.score_cf.clone(),
            })
        })
    }

    /// Creates database `db`'s set if it has none (SELECT, MOVE, COPY ... DB, SWAPDB).
    pub fn ensure(&self, db: usize) -> Result<(), DbError> {
        if db >= self.count {
            return Err(DbError::OutOfRange(db));
        }
        let set = self.map[db].load(Ordering::Acquire);
        if self.sets[set as usize].get().is_some() {
            return Ok(());
        }
        let _admin = self.admin.lock();
        let set = self.map[db].load(Ordering::Acquire);
        if self.sets[set as usize].get().is_none() {
            self.create_set(set)?;
        }
        Ok(())
    }

    /// Opens set `set`'s families, creating those missing, and makes its store. A set past
    /// the first raises the store's layout to `LAYOUT_DATABASES` first (the delta layouts
    /// allow sets too, and are kept).
    fn create_set(&self, set: u32) -> strata::Result<()> {
        if set != 0 && !self.partitioned {
            self.engine.raise_layout(super::LAYOUT_DATABASES)?;
        }
        let slot = &self.slots[set as usize];
        let [meta, sub, score] = family_names(set);
        let family = |which: usize, name: String| match self.engine.db.cf_handle(&name) {
            Some(cf) => Ok(cf),
            None => {
                let o =
                    family_options(&self.opts, which, slot, self.stale, self.meta_merge.as_ref());
                self.engine.db.create_cf_handle(&name, &o)
            }
        };
        let filing = if self.partitioned { Filing::AllPartitions } else { Filing::Slot };
        let store = Arc::new(Store {
            engine: self.engine.clone(),
            set,
            filing,
            space: set,
            meta_cf: family(0, meta)?,
            sub_cf: family(1, sub)?,
            score_cf: family(2, score)?,
        });
        let _ = slot.set(Arc::downgrade(&store));
        let _ = self.sets[set as usize].set(store);
        Ok(())
    }

    /// Pins the map for a command running now ([`Pin`]); `exclusive` for SWAPDB (and an
    /// EXEC that runs one). A command run inside another (EXEC's, a script's) is covered by
    /// the outer one's pin.
    pub fn pin(&self, exclusive: bool) -> Pin<'_> {
        if PINNED.with(|p| p.get()) != 0 {
            return Pin::Nested;
        }
        if exclusive {
            let g = self.pins.iter().map(|s| s.0.write()).collect();
            PINNED.with(|p| p.set(2));
            Pin::Exclusive(g)
        } else {
            let g = self.pins[my_stripe()].0.read();
            PINNED.with(|p| p.set(1));
            Pin::Shared(g)
        }
    }

    /// How many SWAPDBs have named database `db` (WATCH notes it, EXEC compares).
    pub fn swaps_of(&self, db: usize) -> u64 {
        self.swaps.get(db).map_or(0, |s| s.load(Ordering::Acquire))
    }

    /// The set database `db` uses now.
    pub fn set_of(&self, db: usize) -> u32 {
        self.map.get(db).map_or(0, |s| s.load(Ordering::Acquire))
    }

    /// The store of set `set`, if it was created.
    pub fn store_of_set(&self, set: u32) -> Option<&Arc<Store>> {
        self.sets.get(set as usize).and_then(OnceLock::get)
    }

    /// SWAPDB `a` `b`: the two databases exchange their sets, stored (synced) before this
    /// returns. The caller holds the map pinned exclusively.
    pub fn swap(&self, a: usize, b: usize) -> Result<(), DbError> {
        self.ensure(a)?;
        self.ensure(b)?;
        let _admin = self.admin.lock();
        let mut map: Vec<u32> = self.map.iter().map(|s| s.load(Ordering::Acquire)).collect();
        map.swap(a, b);
        let value: Vec<u8> = map.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.engine.write_server_records(&[(MAP_KEY.to_vec(), Some(value))])?;
        self.map[a].store(map[a], Ordering::Release);
        self.map[b].store(map[b], Ordering::Release);
        self.swaps[a].fetch_add(1, Ordering::AcqRel);
        self.swaps[b].fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Every database whose set exists, with its store, by database number.
    pub fn each(&self) -> impl Iterator<Item = (usize, &Arc<Store>)> {
        (0..self.map.len()).filter_map(|db| {
            let set = self.map[db].load(Ordering::Acquire) as usize;
            self.sets[set].get().map(|s| (db, s))
        })
    }

    /// FLUSHALL: every database emptied.
    pub fn flush_all(&self) -> Result<(), super::WriteError> {
        for (_, st) in self.each() {
            st.flush()?;
        }
        Ok(())
    }

    /// Every set's store.
    fn stores(&self) -> impl Iterator<Item = &Store> {
        self.sets.iter().filter_map(OnceLock::get).map(|s| &**s)
    }

    /// Every database's memtables flushed in the background ([`Engine::flush_behind`]).
    pub fn flush_behind(&self) -> strata::Result<()> {
        self.engine.flush_behind(self.stores())
    }

    /// SAVE over every database ([`Engine::save`]).
    pub fn save(&self) -> strata::Result<()> {
        self.engine.save(self.stores())
    }

    /// The clean shutdown of every database ([`Engine::close`]).
    pub fn close(&self) -> strata::Result<()> {
        self.engine.close(self.stores())
    }
}

/// The options of a set's family `which` (0 metadata, 1 subkey, 2 zscore): the metadata
/// family merges with `meta_merge`, the sub-key families collect stale entries through
/// `slot`'s store.
fn family_options(
    opts: &Options,
    which: usize,
    slot: &StoreSlot,
    stale: StaleRule,
    meta_merge: Option<&Arc<dyn MergeOperator>>,
) -> Options {
    let mut o = opts.clone();
    if which == 0 {
        o.merge_operator = meta_merge.cloned();
    } else {
        filter::install(&mut o, slot, stale);
    }
    o
}

/// The stored map, if it is a permutation of `0..n` as u32LE.
fn decode_map(raw: &[u8]) -> Option<Vec<u32>> {
    if !raw.len().is_multiple_of(4) {
        return None;
    }
    let map: Vec<u32> =
        raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut seen = vec![false; map.len()];
    for &s in &map {
        let slot = seen.get_mut(s as usize)?;
        if std::mem::replace(slot, true) {
            return None;
        }
    }
    Some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_names_parse_back() {
        for n in [0, 1, 9, 4095] {
            for (i, name) in family_names(n).iter().enumerate() {
                assert_eq!(parse_family(name), Some((n, i)), "{name}");
            }
        }
        for other in ["server", "default", "metadata.0", "metadata.01", "subkey.x", "raft"] {
            assert_eq!(parse_family(other), None, "{other}");
        }
    }

    fn never_stale(_: &Store, _: &[u8]) -> bool {
        false
    }

    /// A partitioned (cluster mode) DB names the Raft families from its first open, with the
    /// replication's options (`strata_replication::family_options`: the log's tables
    /// uncompressed), and again at every open after: compressible log records flushed take
    /// their whole size, before and after a reopen.
    #[test]
    fn a_partitioned_db_opens_the_raft_families_with_their_options_from_the_first_open() {
        let dir = tempfile::tempdir().unwrap();
        let raw = 16 * (64u64 << 10);
        let flushed = |round: u32| -> u64 {
            let dbs = crate::types::open_partitioned(
                strata::Options::default(),
                dir.path(),
                SyncPolicy::No,
            )
            .unwrap();
            let db = &dbs.engine().db;
            let log =
                db.cf_handle(strata_replication::log_format::LOG_CF).expect("raft_log at open");
            assert!(db.cf_handle(strata_replication::log_format::META_CF).is_some());
            for i in 0..16u32 {
                let key = [round.to_be_bytes(), i.to_be_bytes()].concat();
                db.put_cf(&log, key, vec![b'x'; 64 << 10]).unwrap();
            }
            db.flush_cf(&log).unwrap();
            let v = db.property_value_cf(&log, "rocksdb.total-sst-files-size").unwrap();
            v.unwrap().parse().unwrap()
        };
        assert!(flushed(0) >= raw, "uncompressed at the first open");
        assert!(flushed(1) >= 2 * raw, "and after a reopen");
    }

    fn open(dir: &std::path::Path, count: usize) -> Arc<Databases> {
        Databases::open(Options::default(), dir, SyncPolicy::No, never_stale, count, false).unwrap()
    }

    fn put(st: &Store, key: &[u8], value: &[u8]) {
        let mut b = strata::WriteBatch::new();
        st.put_meta(&mut b, key, value.to_vec());
        st.write(b).unwrap();
    }

    fn get(st: &Store, key: &[u8]) -> Option<Vec<u8>> {
        st.read_meta_uncached(key).unwrap()
    }

    #[test]
    fn sets_are_created_when_named_and_the_swapped_map_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        {
            let dbs = open(dir.path(), 4);
            assert_eq!(dbs.each().count(), 1, "only database 0 has families at first");
            assert!(matches!(dbs.ensure(4), Err(DbError::OutOfRange(4))));
            assert_eq!(dbs.layout_marker().as_deref(), Some(super::super::LAYOUT));
            dbs.ensure(2).unwrap();
            assert_eq!(
                dbs.layout_marker().as_deref(),
                Some(super::super::LAYOUT_DATABASES),
                "a second set marks the layout an older version refuses"
            );
            put(dbs.store(0), b"k", b"in 0");
            put(dbs.store(2), b"k", b"in 2");
            assert_eq!(get(dbs.store(2), b"k").as_deref(), Some(&b"in 2"[..]));
            dbs.swap(0, 3).unwrap();
            assert_eq!(get(dbs.store(0), b"k"), None);
            assert_eq!(get(dbs.store(3), b"k").as_deref(), Some(&b"in 0"[..]));
            assert_eq!((dbs.swaps_of(0), dbs.swaps_of(3), dbs.swaps_of(2)), (1, 1, 0));
            dbs.close().unwrap();
        }
        let dbs = open(dir.path(), 4);
        assert_eq!(dbs.each().map(|(d, _)| d).collect::<Vec<_>>(), vec![0, 2, 3]);
        assert_eq!(get(dbs.store(3), b"k").as_deref(), Some(&b"in 0"[..]));
        assert_eq!(get(dbs.store(2), b"k").as_deref(), Some(&b"in 2"[..]));
        assert_eq!(get(dbs.store(0), b"k"), None);
        dbs.close().unwrap();
        drop(dbs);
        // Fewer databases configured than the map names: the sets stay, SELECT stops short.
        let dbs = open(dir.path(), 1);
        assert!(matches!(dbs.ensure(1), Err(DbError::OutOfRange(1))));
        assert_eq!(get(dbs.store(0), b"k"), None);
        assert_eq!(dbs.set_of(3), 0);
        dbs.close().unwrap();
    }

    #[test]
    fn a_map_that_is_not_a_permutation_is_refused_naming_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        {
            let dbs = open(dir.path(), 2);
            let bad = [0u32, 0].iter().flat_map(|s| s.to_le_bytes()).collect();
            dbs.engine().write_server_records(&[(MAP_KEY.to_vec(), Some(bad))]).unwrap();
            dbs.close().unwrap();
        }
        let e =
            Databases::open(Options::default(), dir.path(), SyncPolicy::No, never_stale, 2, false)
                .err()
                .expect("refused");
        let text = e.to_string();
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(text.contains("not a permutation"), "{text}");
    }

    #[test]
    fn only_permutations_are_maps() {
        let enc = |m: &[u32]| m.iter().flat_map(|s| s.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(decode_map(&enc(&[1, 0, 2])), Some(vec![1, 0, 2]));
        assert_eq!(decode_map(&[]), Some(vec![]));
        assert_eq!(decode_map(&enc(&[0, 0])), None);
        assert_eq!(decode_map(&enc(&[0, 2])), None);
        assert_eq!(decode_map(&[1, 0, 0]), None);
    }
}
