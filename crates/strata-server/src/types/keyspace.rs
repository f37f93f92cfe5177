//! The keyspace as one command sees it ([`Keyspace`]): the store, the settings that choose
//! encodings, and the time the command runs at. Every data operation takes one; this module
//! holds what they all share: a key's live metadata (the expiry rule and the type checks),
//! writing it, and walking a key's sub-keys.

use super::compact_hash::Limits;
use super::error::{Result, TypeError};
use super::metadata::{Kind, Meta};
use super::notify::{self, Notifier};
use super::stream::NodeLimits;
use super::subkey;
use crate::storage::{propagated, MetaRead, Store};
use std::time::{SystemTime, UNIX_EPOCH};
use strata::{ColumnFamily, WriteBatch};

/// Deletes `key`'s metadata record if it is still expired at `now` and raises `expired`
/// once that is written; whether it did. The caller holds the key's lock: the record is read
/// again under it, as a writer may have replaced it since the caller saw it expired.
pub fn delete_if_expired(
    st: &Store,
    notifier: &Notifier,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<bool> {
    Ok(delete_expired(st, notifier, db, &[key], now)? == 1)
}

/// Deletes the metadata records of those of `keys` still expired at `now`, in one write (in
/// cluster mode one entry of their partition's group, so all of one partition), and raises
/// `expired` for each once it is written; how many. The caller holds the keys' locks, as for
/// [`delete_if_expired`].
pub fn delete_expired<K: AsRef<[u8]>>(
    st: &Store,
    notifier: &Notifier,
    db: usize,
    keys: &[K],
    now: u64,
) -> Result<usize> {
    let mut b = WriteBatch::new();
    let mut gone = Vec::new();
    for key in keys {
        let key = key.as_ref();
        let raw = st.read_meta_uncached(key)?;
        if raw.as_deref().and_then(|r| Meta::decode(r).ok()).is_some_and(|m| m.expired(now)) {
            st.delete_meta(&mut b, key);
            gone.push(key);
        }
    }
    if gone.is_empty() {
        return Ok(0);
    }
    // A write of its own in the replication stream: the DELs go out under the keys' locks;
    // not on a replica, whose stream is its master's (a writable replica's own keys).
    let entered = st.backlog.enter();
    propagated::as_expiry(|| st.write(b))?;
    if entered.active() && !st.expired_kept.load(std::sync::atomic::Ordering::Relaxed) {
        propagated::expired(&st.backlog, db, &gone);
    }
    drop(entered);
    for key in &gone {
        notifier.count_expired();
        notifier.raise(db, notify::EXPIRED, "expired", key);
    }
    Ok(gone.len())
}

pub use crate::storage::master_client::{as_master, as_master_now};

/// Whether an expiry time `expire_ms` (0: none) is past at `now_ms` for this thread's
/// lookups (never inside [`as_master`]).
pub fn past(expire_ms: u64, now_ms: u64) -> bool {
    expire_ms != 0 && expire_ms <= now_ms && !as_master_now()
}

thread_local! {
    /// The time [`now_ms`] gives on this thread while [`with_time_held`] runs.
    static HELD_MS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Milliseconds since the Unix epoch; on a thread inside [`with_time_held`], the time it
/// began.
pub fn now_ms() -> u64 {
    HELD_MS.with(std::cell::Cell::get).unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    })
}

/// Runs `f` with [`now_ms`] held at its value now on this thread (a script's run: Redis
/// keeps a script's clock still, so what it wrote does not expire under it); nested calls
/// keep the outer time, and the time runs again when `f` ends or unwinds.
pub fn with_time_held<R>(f: impl FnOnce() -> R) -> R {
    struct Release(Option<u64>);
    impl Drop for Release {
        fn drop(&mut self) {
            HELD_MS.with(|h| h.set(self.0));
        }
    }
    let before = HELD_MS.with(std::cell::Cell::get);
    let _release = Release(before);
    HELD_MS.with(|h| h.set(Some(before.unwrap_or_else(now_ms))));
    f()
}

/// One step of a cursor walk (SCAN, HSCAN): what it kept, and where the next step starts
/// (`None`: the walk reached the end).
pub struct Page<T> {
    /// What the step kept.
    pub items: Vec<T>,
    /// The key or field the next step starts at.
    pub next: Option<Vec<u8>>,
}

/// The keyspace at one moment. Every expiry decision of an operation is made at `now_ms`, so
/// one command sees one time, and the same inputs give the same effect.
#[derive(Clone, Copy)]
pub struct Keyspace<'a> {
    /// The store.
    pub store: &'a Store,
    /// When a hash is compact (`hash-max-listpack-entries`/`-value`).
    pub hash_limits: &'a Limits,
    /// The size of a stream's nodes (`stream-node-max-entries`/`-bytes`).
    pub stream_nodes: &'a NodeLimits,
    /// The keyspace notifications enabled (`notify-keyspace-events`).
    pub notifier: &'a Notifier,
    /// The time, in Unix milliseconds.
    pub now_ms: u64,
    /// The database's number (its keyspace notifications' channels name it).
    pub db: usize,
    /// Expired keys a command meets are left in place (CLIENT PAUSE is in force).
    pub expiry_held: bool,
}

/// Redis's default stream node size, for a keyspace given no other.
static DEFAULT_STREAM_NODES: NodeLimits =
    NodeLimits::new(super::stream::DEFAULT_NODE_ENTRIES, super::stream::DEFAULT_NODE_BYTES);

/// No notification, for a keyspace given no notifier.
static NO_NOTIFICATIONS: Notifier = Notifier::new(0);

impl<'a> Keyspace<'a> {
    /// The keyspace of `store` at `now_ms`.
    pub fn new(store: &'a Store, hash_limits: &'a Limits, now_ms: u64) -> Keyspace<'a> {
        Keyspace {
            store,
            hash_limits,
            stream_nodes: &DEFAULT_STREAM_NODES,
            notifier: &NO_NOTIFICATIONS,
            now_ms,
            db: 0,
            expiry_held: false,
        }
    }

    /// The same keyspace as database number `db`'s.
    pub fn in_db(self, db: usize) -> Keyspace<'a> {
        Keyspace { db, ..self }
    }

    /// The same keyspace with streams' node size `limits`.
    pub fn with_stream_nodes(self, limits: &'a NodeLimits) -> Keyspace<'a> {
        Keyspace { stream_nodes: limits, ..self }
    }

    /// The same keyspace leaving the expired keys commands meet in place (`held`: CLIENT
    /// PAUSE is in force, and an expiry is a write), or not.
    pub fn holding_expiry(self, held: bool) -> Keyspace<'a> {
        Keyspace { expiry_held: held, ..self }
    }

    /// The same keyspace raising the notifications `notifier` enables.
    pub fn with_notifier(self, notifier: &'a Notifier) -> Keyspace<'a> {
        Keyspace { notifier, ..self }
    }

    /// Raises keyspace event `event` of `class` (`notify::STRING`...) on `key`, if enabled:
    /// called after the write it reports succeeded.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.notifier.raise(self.db, class, event, key);
    }

    /// Raises `new` on `key` if `created` (the write made a key where there was none).
    #[inline]
    pub fn notify_new(&self, created: bool, key: &[u8]) {
        if created {
            self.notify(notify::NEW, "new", key);
        }
    }

    /// Whether a write of `key` creates it (no live key there), read only when `new` events
    /// are wanted (else false, without reading): for writes that do not look at the key
    /// otherwise.
    pub fn would_create(&self, key: &[u8]) -> Result<bool> {
        Ok(self.notifier.wants(notify::NEW) && self.meta(key)?.is_none())
    }

    /// Raises `event` of `class` on `key`, then `del` when the write `emptied` it (the
    /// element commands that remove the key with its last element).
    #[inline]
    pub fn notify_removal(&self, class: u32, event: &'static str, key: &[u8], emptied: bool) {
        self.notify(class, event, key);
        if emptied {
            self.notify(notify::GENERIC, "del", key);
        }
    }

    /// The live metadata of `key` (an expired key reads as absent).
    pub fn meta(&self, key: &[u8]) -> Result<Option<Meta>> {
        let Some(read) = self.store.read_meta(key)? else { return Ok(None) };
        // A use, counted for OBJECT FREQ under an LFU policy (`storage::frequency`).
        if self.store.frequencies.counting() {
            self.store.frequencies.used(self.store.space, key);
        }
        let m = match read {
            // Cached records were decoded (validated) before they were cached.
            MetaRead::Cached(raw) => Meta::decode_trusted(&raw),
            MetaRead::Stored { raw, generation } => {
                // Shared by the decoded payload and the cache entry the fill makes.
                let raw = std::sync::Arc::new(raw);
                let m = Meta::decode_shared(&raw, true)
                    .map_err(|e| TypeError::Corrupt(format!("metadata of a key: {e}")))?;
                // A use (a cache hit stamps its entry instead: `storage::access`); the entry
                // the fill makes takes the stamp.
                self.store.meta_cache.access.touch(self.store.space, key);
                self.store.cache_meta(key, raw, generation);
                m
            }
        };
        if past(m.expire_ms, self.now_ms) {
            self.expire_on_access(key);
            return Ok(None);
        }
        Ok(Some(m))
    }

    /// A command met `key` after its time was up: the key is deleted now (counted, and its
    /// `expired` event raised), as redis-server does on access; else it waits for the expiry
    /// task, and reads as absent meanwhile. Only where that is safe: not in cluster mode (a
    /// replica must not write; the leader's expiry task deletes it), not during CLIENT PAUSE
    /// (Redis's rule: an expiry is a write), not in the middle of building a batch (its
    /// metadata notes would be settled by this write), and not where taking the key's lock
    /// could wait out of order.
    #[cold]
    fn expire_on_access(&self, key: &[u8]) {
        if self.expiry_held
            || self.store.is_replicated()
            || self.store.meta_cache.noting()
            || self.store.expired_kept.load(std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let Some(_g) = self.store.locks.lock_if_in_order(key) else { return };
        // A failure leaves the key to the expiry task; it reads as absent meanwhile.
        let _ = delete_if_expired(self.store, self.notifier, self.db, key, self.now_ms);
    }

    /// Whether `key` has a record whose time is up: reads see no key, and the expiry task has
    /// not deleted it yet (WATCH tells such a key from a live one).
    pub fn expired_in_place(&self, key: &[u8]) -> Result<bool> {
        Ok(self.stored_meta(key)?.is_some_and(|m| m.expired(self.now_ms)))
    }

    /// The metadata record of `key` as stored, whether or not its time is up (read past the
    /// metadata cache); `None` when there is none.
    pub fn stored_meta(&self, key: &[u8]) -> Result<Option<Meta>> {
        let Some(raw) = self.store.read_meta_uncached(key)? else { return Ok(None) };
        Meta::decode(&raw)
            .map(Some)
            .map_err(|e| TypeError::Corrupt(format!("metadata of a key: {e}")))
    }

    /// The live metadata of `key` if it is of `kind`; `Ok(None)` when absent;
    /// [`TypeError::WrongType`] when it holds another type.
    pub fn typed(&self, key: &[u8], kind: Kind) -> Result<Option<Meta>> {
        match self.meta(key)? {
            Some(m) if m.kind != kind => Err(TypeError::WrongType),
            other => Ok(other),
        }
    }

    /// Like [`Keyspace::typed`], but an absent key gives a new empty record at a fresh
    /// version.
    pub fn typed_or_new(&self, key: &[u8], kind: Kind) -> Result<Meta> {
        Ok(match self.typed(key, kind)? {
            Some(m) => m,
            None => Meta::composite(kind, self.store.new_version()),
        })
    }

    /// Writes `b`, the whole effect of one operation (one batch, so atomic). Every write of a
    /// data operation goes through here; an expired key's removal by the expiry task does not.
    pub fn write(&self, b: WriteBatch) -> Result<()> {
        Ok(self.store.write(b)?)
    }

    /// Writes `b` as [`Keyspace::write`] does, and returns once it is applied (in cluster
    /// mode a write is otherwise only proposed when this returns): for an operation that
    /// records something about its write afterwards (the pop hints).
    pub fn write_applied(&self, b: WriteBatch) -> Result<()> {
        Ok(self.store.write_applied(b)?)
    }

    /// Puts `meta` for `key` into `b`.
    pub fn put_meta(&self, b: &mut WriteBatch, key: &[u8], meta: &Meta) {
        self.store.put_meta(b, key, meta.encode());
    }

    /// Puts the deletion of `key` into `b`: its metadata goes, and with it (to the
    /// compaction filter) its sub-keys.
    pub fn delete_meta(&self, b: &mut WriteBatch, key: &[u8]) {
        self.store.delete_meta(b, key);
    }

    /// Puts `m` for `key` into `b`, or deletes the key when `m` is an empty container.
    pub fn put_or_delete_meta(&self, b: &mut WriteBatch, key: &[u8], m: &Meta) {
        if m.kind != Kind::String && m.size == 0 {
            self.delete_meta(b, key);
        } else {
            self.put_meta(b, key, m);
        }
    }

    /// Visits live keys from the stored position `from` (inclusive; empty: the first) on, in
    /// stored order, until `f` returns false; `f` gets the key's position (where a later walk
    /// goes on from: `Store::scan_meta`), the key and its metadata. Records that do not
    /// decode are skipped.
    pub fn scan_keys(
        &self,
        from: &[u8],
        mut f: impl FnMut(&[u8], &[u8], &Meta) -> bool,
    ) -> Result<()> {
        self.store.scan_meta(from, |at, k, v| match Meta::decode(v) {
            Ok(m) if !m.expired(self.now_ms) => f(at, k, &m),
            _ => true,
        })?;
        Ok(())
    }

    /// [`Keyspace::scan_keys`], and then deletes the keys it passed whose time was up, as
    /// a command that met them does (Redis's SCAN and RANDOMKEY delete what they meet).
    pub fn scan_keys_expiring(
        &self,
        from: &[u8],
        mut f: impl FnMut(&[u8], &[u8], &Meta) -> bool,
    ) -> Result<()> {
        let mut met = Vec::new();
        self.store.scan_meta(from, |at, k, v| match Meta::decode(v) {
            Ok(m) if !m.expired(self.now_ms) => f(at, k, &m),
            Ok(_) => {
                met.push(k.to_vec());
                true
            }
            Err(_) => true,
        })?;
        for k in met {
            self.expire_on_access(&k);
        }
        Ok(())
    }

    /// Visits every key record from the start in stored order, as [`Keyspace::scan_keys`]
    /// does, keys whose expiry passed but that are still stored included (DBSIZE and INFO
    /// keyspace count them until they are removed, as Redis's counts do), with its expiry (0:
    /// none); the records [`Meta::decode`] refuses are left out. No payload is copied.
    pub fn scan_stored_keys(&self, mut f: impl FnMut(&[u8], &[u8], u64) -> bool) -> Result<()> {
        self.store.scan_meta(b"", |at, k, v| match Meta::stored_expiry(v) {
            Some(expire_ms) => f(at, k, expire_ms),
            None => true,
        })?;
        Ok(())
    }

    /// Reads the sub-key `field` of (`key`, `version`).
    pub fn get_sub(&self, key: &[u8], version: u64, field: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .store
            .get(&self.store.sub_cf, &subkey::encode(self.store.filing, key, version, field))?)
    }

    /// One step of a cursor walk (SSCAN, ZSCAN) over the sub-keys of (`key`, `version`): from
    /// the field `from` (empty: the first), `count` fields visited, those `keep` keeps
    /// returned with their values, and the field the next step starts at.
    pub fn scan_page(
        &self,
        key: &[u8],
        version: u64,
        from: &[u8],
        count: usize,
        mut keep: impl FnMut(&[u8]) -> bool,
    ) -> Result<Page<(Vec<u8>, Vec<u8>)>> {
        let (mut items, mut next, mut seen) = (Vec::new(), None, 0);
        self.scan(&self.store.sub_cf, key, version, from, false, |f, v| {
            if seen == count {
                next = Some(f.to_vec());
                return false;
            }
            seen += 1;
            if keep(f) {
                items.push((f.to_vec(), v.to_vec()));
            }
            true
        })?;
        Ok(Page { items, next })
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
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let prefix = subkey::prefix(self.store.filing, key, version);
        let upper = if reverse && !from.is_empty() {
            let mut e = prefix.clone();
            e.extend_from_slice(from);
            e
        } else {
            subkey::prefix_end(self.store.filing, key, version)
        };
        self.store.scan_prefix(cf, prefix, upper, from, reverse, f)?;
        Ok(())
    }
}
