//! Redis data types on Strata, Kvrocks-style: one metadata entry per key ([`metadata`]) and
//! one sub-key per field/member/element ([`subkey`]), plus a score index for sorted sets
//! ([`score`]); small hashes keep their pairs inside the metadata entry instead
//! ([`compact_hash`]). Stale sub-keys are collected by a compaction filter ([`filter`]).
//!
//! Column families: `metadata` (user key -> [`Meta`]), `subkey`, `zscore`. Every command
//! writes its changes in one `WriteBatch` across the families (atomic).

pub mod compact_hash;
pub mod filter;
pub mod locks;
pub mod meta_cache;
pub mod metadata;
pub mod pop_hints;
pub mod score;
pub mod subkey;
pub mod sync_group;

pub use metadata::{Kind, Meta};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use strata::{
    ColumnFamily, ColumnFamilyDescriptor, Db, Options, ReadOptions, WriteBatch, WriteOptions,
};

/// The metadata family's name.
pub const CF_METADATA: &str = "metadata";
/// The sub-key family's name.
pub const CF_SUBKEY: &str = "subkey";
/// The sorted-set score index family's name.
pub const CF_ZSCORE: &str = "zscore";

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
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

/// An engine failure, as a reply text.
pub fn engine_err(e: strata::Error) -> String {
    format!("ERR storage error: {e}")
}

/// The open store: the DB, its families, the lock table and the version counter.
pub struct Store {
    /// The engine.
    pub db: Arc<Db>,
    /// `metadata` family.
    pub meta_cf: Arc<ColumnFamily>,
    /// `subkey` family.
    pub sub_cf: Arc<ColumnFamily>,
    /// `zscore` family.
    pub score_cf: Arc<ColumnFamily>,
    /// Per-key write locks.
    pub locks: locks::LockTable,
    sync: AtomicU8,
    last_version: AtomicU64,
    /// Set when shutting down: the compaction filter stops consulting the store.
    pub closing: AtomicBool,
    /// Shared WAL syncs for `appendfsync always` (`sync_group`).
    pub syncs: Arc<sync_group::SyncGroup>,
    /// Small metadata entries of hot keys (`meta_cache`).
    pub meta_cache: meta_cache::MetaCache,
    /// Where SPOP/ZPOPMIN/ZPOPMAX start (`pop_hints`).
    pub pop_hints: pop_hints::PopHints,
    /// Internal entries sub-key scans have stepped over (INFO `strata_scan_steps`): what
    /// tombstones and old versions cost the scans.
    pub scan_steps: AtomicU64,
    /// When a hash is compact (`hash-max-listpack-entries`/`-value`).
    pub hash_limits: compact_hash::Limits,
}

impl Store {
    /// Opens (creating if needed) the store in `dir` with engine options `opts`.
    pub fn open(
        mut opts: Options,
        dir: &std::path::Path,
        policy: SyncPolicy,
    ) -> Result<Arc<Store>, String> {
        opts.create_if_missing = true;
        opts.create_missing_column_families = true;
        let slot: filter::StoreSlot = Arc::new(OnceLock::new());
        let mut sub_opts = opts.clone();
        install_filter(&mut sub_opts, &slot);
        let descriptors = vec![
            ColumnFamilyDescriptor::new(CF_METADATA, opts.clone()),
            ColumnFamilyDescriptor::new(CF_SUBKEY, sub_opts.clone()),
            ColumnFamilyDescriptor::new(CF_ZSCORE, sub_opts),
        ];
        let db = Db::open_cf_descriptors(&opts, dir, descriptors)
            .map_err(|e| format!("cannot open the database in {}: {e}", dir.display()))?;
        let handle = |n: &str| {
            db.cf_handle(n).ok_or_else(|| format!("column family {n} missing after open"))
        };
        let meta_cf = handle(CF_METADATA)?;
        let sub_cf = handle(CF_SUBKEY)?;
        let score_cf = handle(CF_ZSCORE)?;
        let store = Arc::new(Store {
            db: Arc::new(db),
            meta_cf,
            sub_cf,
            score_cf,
            locks: locks::LockTable::default(),
            sync: AtomicU8::new(policy as u8),
            last_version: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            syncs: Arc::new(sync_group::SyncGroup::default()),
            meta_cache: meta_cache::MetaCache::for_block_cache(opts.block_cache_size),
            pop_hints: pop_hints::PopHints::default(),
            scan_steps: AtomicU64::new(0),
            hash_limits: compact_hash::Limits::default(),
        });
        let _ = slot.set(Arc::downgrade(&store));
        Ok(store)
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

    /// Writes `batch` under the current sync policy. Under `always` the write is made without
    /// a sync and this thread owes one: the caller takes it with [`Store::owed_sync`] and
    /// waits for it before acknowledging (after releasing its key locks; `sync_group`).
    pub fn write(&self, batch: WriteBatch) -> Result<(), String> {
        if batch.is_empty() {
            self.meta_cache.invalidate_noted(false);
            return Ok(());
        }
        let written = self.db.write_opt(batch, &WriteOptions::default());
        // After the write (`meta_cache` contract), whether or not it succeeded.
        self.meta_cache.invalidate_noted(written.is_ok());
        written.map_err(engine_err)?;
        if self.sync_policy() == SyncPolicy::Always {
            sync_group::owe_sync();
        }
        Ok(())
    }

    /// The sync this thread's writes since the last call must wait for, if they owe one (see
    /// [`Store::write`]): requested now, awaited with `self.syncs.wait`.
    pub fn owed_sync(&self) -> Option<u64> {
        sync_group::take_owed_sync().then(|| self.syncs.request(&self.db))
    }

    /// The live metadata of `key` (an expired key reads as absent).
    pub fn meta(&self, key: &[u8]) -> Result<Option<Meta>, String> {
        let m = match self.meta_cache.get(key) {
            // Cached entries were decoded (validated) before they were cached.
            Ok(raw) => Meta::decode_trusted(raw),
            Err(generation) => {
                let Some(raw) = self.db.get_cf(&*self.meta_cf, key).map_err(engine_err)? else {
                    return Ok(None);
                };
                let m = Meta::decode(&raw)
                    .map_err(|e| format!("ERR corrupt metadata of a key: {e}"))?;
                self.meta_cache.fill(key, raw, generation);
                m
            }
        };
        Ok(if m.expired(now_ms()) { None } else { Some(m) })
    }

    /// Puts `meta` for `key` into `batch`.
    pub fn put_meta(&self, batch: &mut WriteBatch, key: &[u8], meta: &Meta) {
        let raw = meta.encode();
        batch.put_cf(&*self.meta_cf, key, &raw);
        self.meta_cache.note_write(key, Some(raw));
    }

    /// Puts the deletion of `key`'s metadata into `batch`.
    pub fn delete_meta(&self, batch: &mut WriteBatch, key: &[u8]) {
        self.meta_cache.note_write(key, None);
        batch.delete_cf(&*self.meta_cf, key);
    }

    /// Visits sub-keys of (`key`, `version`) in `cf` in order, from the first whose field is
    /// at or above `from`, until `f` returns false; or in reverse, from the last whose field
    /// is below `from` (empty `from`: the last of all). `f` gets the field and the value.
    pub fn scan(
        &self,
        cf: &ColumnFamily,
        key: &[u8],
        version: u64,
        from: &[u8],
        reverse: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), String> {
        let prefix = subkey::prefix(key, version);
        let end = if reverse && !from.is_empty() {
            let mut e = prefix.clone();
            e.extend_from_slice(from);
            e
        } else {
            subkey::prefix_end(key, version)
        };
        let mut start = Vec::new();
        if !reverse {
            start.reserve(prefix.len() + from.len());
            start.extend_from_slice(&prefix);
            start.extend_from_slice(from);
        }
        let plen = prefix.len();
        let ro = ReadOptions {
            iterate_lower_bound: Some(prefix),
            iterate_upper_bound: Some(end),
            ..ReadOptions::default()
        };
        let mut it = self.db.raw_iterator_cf_opt(cf, &ro);
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
        it.status().map_err(engine_err)
    }

    /// Reads one sub-key.
    pub fn get_sub(
        &self,
        key: &[u8],
        version: u64,
        field: &[u8],
    ) -> Result<Option<Vec<u8>>, String> {
        self.db.get_cf(&*self.sub_cf, subkey::encode(key, version, field)).map_err(engine_err)
    }

    /// Visits live keys of the metadata family from `from` (inclusive) on, until `f` returns
    /// false; `f` gets the key and its decoded metadata.
    pub fn scan_keys(
        &self,
        from: &[u8],
        mut f: impl FnMut(&[u8], &Meta) -> bool,
    ) -> Result<(), String> {
        let now = now_ms();
        let mut it = self.db.raw_iterator_cf(&*self.meta_cf);
        it.seek(from);
        while let Some((k, v)) = it.item() {
            if let Ok(m) = Meta::decode(v) {
                if !m.expired(now) && !f(k, &m) {
                    break;
                }
            }
            it.next();
        }
        it.status().map_err(engine_err)
    }

    /// Deletes every key (all families), by range deletions up to each family's last key.
    pub fn flush_all(&self) -> Result<(), String> {
        self.pop_hints.clear();
        for cf in [&self.meta_cf, &self.sub_cf, &self.score_cf] {
            let mut it = self.db.raw_iterator_cf(&**cf);
            it.seek_to_last();
            if let Some(last) = it.key() {
                let mut end = last.to_vec();
                end.push(0);
                let mut b = WriteBatch::new();
                b.delete_range_cf(&**cf, Vec::new(), end);
                self.write(b)?;
            }
            it.status().map_err(engine_err)?;
        }
        self.meta_cache.clear();
        Ok(())
    }

    /// Flushes the memtables and stops background work: the clean shutdown.
    pub fn close(&self) -> Result<(), String> {
        self.closing.store(true, Ordering::Release);
        let mut res = self.db.flush_wal(true).map_err(engine_err);
        for cf in [&self.meta_cf, &self.sub_cf, &self.score_cf] {
            if let Err(e) = self.db.flush_cf(&**cf) {
                res = Err(engine_err(e));
            }
        }
        self.db.cancel_all_background_work(true);
        self.syncs.stop();
        res
    }
}

/// Installs the stale sub-key filter on a family's options (when the engine offers one).
fn install_filter(opts: &mut Options, slot: &filter::StoreSlot) {
    let slot = slot.clone();
    opts.set_compaction_filter("strata-server.stale-subkeys", move |_level, key, _value| {
        if filter::decide(&slot, key) {
            strata::Decision::Remove
        } else {
            strata::Decision::Keep
        }
    });
}

impl Store {
    /// The live metadata of `key` if it is of `kind`; `Ok(None)` when absent; the WRONGTYPE
    /// error when it holds another type.
    pub fn typed(&self, key: &[u8], kind: Kind) -> Result<Option<Meta>, String> {
        match self.meta(key)? {
            Some(m) if m.kind != kind => Err(crate::commands::WRONGTYPE.into()),
            other => Ok(other),
        }
    }

    /// Like [`Store::typed`], but an absent key gives a new empty entry at a fresh version.
    pub fn typed_or_new(&self, key: &[u8], kind: Kind) -> Result<Meta, String> {
        Ok(match self.typed(key, kind)? {
            Some(m) => m,
            None => Meta::composite(kind, self.new_version()),
        })
    }

    /// Puts `m` for `key` into `b`, or deletes the key when `m` is an empty container.
    pub fn put_or_delete_meta(&self, b: &mut WriteBatch, key: &[u8], m: &Meta) {
        if m.kind != Kind::String && m.size == 0 {
            self.delete_meta(b, key);
        } else {
            self.put_meta(b, key, m);
        }
    }
}
