//! RocksDB's block caches (`LRUCache`, `HyperClockCache`) for cache_bench's `-engine=rocksdb`,
//! through the C++ shim `rocks_cache_shim.cc` (build.rs compiles it against the headers of
//! the RocksDB librocksdb-sys builds and links it with that library).
//!
//! Ownership: a value goes into the cache as the raw pointer of one `Arc<Value>` reference
//! (`Arc::into_raw`); RocksDB frees it through the item helper's deleter, which calls
//! [`free_value`] (`Arc::from_raw` and drop) once the entry is gone and unreferenced. When an
//! insert fails the reference comes back to the caller, who drops it. A [`RocksHandle`] holds
//! its entry (and so its value) until dropped, which releases it; handles borrow the cache, so
//! all are released before the cache is destroyed.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use anyhow::{anyhow, Result};

use super::caches::{BenchCache, CacheKind, Key, Value, HIGH_PRI_POOL_RATIO};
use super::CacheBenchFlags;

/// The shim's cache (a `std::shared_ptr<rocksdb::Cache>`).
#[repr(C)]
struct RawCache {
    _opaque: [u8; 0],
}

type FreeFn = extern "C" fn(*mut c_void);

extern "C" {
    fn strata_rocks_cache_new_lru(
        capacity: usize,
        num_shard_bits: c_int,
        high_pri_pool_ratio: f64,
        strict: c_int,
        free_value: FreeFn,
    ) -> *mut RawCache;
    fn strata_rocks_cache_new_hyper_clock(
        capacity: usize,
        estimated_entry_charge: usize,
        num_shard_bits: c_int,
        strict: c_int,
        free_value: FreeFn,
    ) -> *mut RawCache;
    fn strata_rocks_cache_destroy(c: *mut RawCache);
    fn strata_rocks_cache_insert(
        c: *mut RawCache,
        key: *const c_char,
        key_len: usize,
        value: *mut c_void,
        charge: usize,
        priority: c_int,
        out_handle: *mut *mut c_void,
    ) -> c_int;
    fn strata_rocks_cache_lookup(
        c: *mut RawCache,
        key: *const c_char,
        key_len: usize,
        out_value: *mut *mut c_void,
    ) -> *mut c_void;
    fn strata_rocks_cache_release(c: *mut RawCache, handle: *mut c_void);
    fn strata_rocks_cache_erase(c: *mut RawCache, key: *const c_char, key_len: usize);
    fn strata_rocks_cache_usage(c: *const RawCache) -> usize;
    fn strata_rocks_cache_capacity(c: *const RawCache) -> usize;
    fn strata_rocks_cache_occupancy(c: *const RawCache) -> usize;
    fn strata_rocks_cache_table_slots(c: *const RawCache) -> usize;
    fn strata_rocks_cache_options(c: *const RawCache, buf: *mut c_char, cap: usize) -> usize;
    fn strata_rocks_cache_name(c: *const RawCache) -> *const c_char;
    fn strata_rocks_cache_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
}

/// The deleter RocksDB calls for each value it owned.
extern "C" fn free_value(value: *mut c_void) {
    // SAFETY: every value the shim hands to RocksDB is one `Arc<Value>` reference made by
    // `Arc::into_raw` in `RocksCache::insert`, and RocksDB calls the deleter once per value it
    // accepted (a refused value is dropped by `insert` instead, never passed here).
    drop(unsafe { Arc::from_raw(value as *const Value) });
}

/// One of RocksDB's caches.
pub(super) struct RocksCache {
    raw: NonNull<RawCache>,
}

// SAFETY: rocksdb::Cache is thread-safe (every method may be called concurrently); the
// pointer is owned by this value and destroyed once, in `drop`, when no handle borrows it.
unsafe impl Send for RocksCache {}
// SAFETY: as above.
unsafe impl Sync for RocksCache {}

impl Drop for RocksCache {
    fn drop(&mut self) {
        // SAFETY: `raw` came from a shim constructor and is destroyed only here; handles borrow
        // `self`, so none is outstanding.
        unsafe { strata_rocks_cache_destroy(self.raw.as_ptr()) }
    }
}

#[inline]
fn key_bytes(key: &Key) -> (*const c_char, usize) {
    (key.as_ptr().cast(), std::mem::size_of::<Key>())
}

impl RocksCache {
    /// The cache `-cache_type` names, with `-cache_size` and `-num_shard_bits` (LRU: high
    /// priority pool ratio 0.5, as RocksDB's tool; clock: as Strata's, see [`CacheKind`]).
    pub(super) fn new(f: &CacheBenchFlags) -> Result<Self> {
        let capacity = usize::try_from(f.cache_size)?;
        let kind = CacheKind::parse(&f.cache_type)?;
        // SAFETY: plain values and a function pointer that lives for the whole program.
        let raw = unsafe {
            match kind {
                CacheKind::Lru => strata_rocks_cache_new_lru(
                    capacity,
                    f.num_shard_bits,
                    HIGH_PRI_POOL_RATIO,
                    0,
                    free_value,
                ),
                CacheKind::FixedClock | CacheKind::AutoClock => strata_rocks_cache_new_hyper_clock(
                    capacity,
                    kind.estimated_entry_charge(f),
                    f.num_shard_bits,
                    0,
                    free_value,
                ),
            }
        };
        let raw = NonNull::new(raw).ok_or_else(|| {
            anyhow!(
                "RocksDB refused to create a {} with -cache_size={} -num_shard_bits={}",
                f.cache_type,
                f.cache_size,
                f.num_shard_bits
            )
        })?;
        Ok(RocksCache { raw })
    }

    /// RocksDB's `GetPrintableOptions()` text.
    fn printable_options(&self) -> String {
        let mut buf = vec![0u8; 4096];
        // SAFETY: the shim writes at most `buf.len()` bytes, NUL included.
        unsafe {
            strata_rocks_cache_options(self.raw.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }
}

/// A held RocksDB cache entry; dropping it releases the entry.
pub(super) struct RocksHandle<'a> {
    cache: &'a RocksCache,
    handle: NonNull<c_void>,
    value: NonNull<Value>,
}

impl Deref for RocksHandle<'_> {
    type Target = Value;

    #[inline]
    fn deref(&self) -> &Value {
        // SAFETY: the value is the `Arc<Value>` payload the entry owns, which RocksDB frees
        // only after the entry's last handle is released, and this handle is not yet.
        unsafe { self.value.as_ref() }
    }
}

impl Drop for RocksHandle<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the handle came from a lookup on this cache and is released once, here.
        unsafe { strata_rocks_cache_release(self.cache.raw.as_ptr(), self.handle.as_ptr()) }
    }
}

impl BenchCache for RocksCache {
    type Handle<'a> = RocksHandle<'a>;

    #[inline]
    fn lookup(&self, key: &Key) -> Option<RocksHandle<'_>> {
        let (k, n) = key_bytes(key);
        let mut value: *mut c_void = ptr::null_mut();
        // SAFETY: the key pointer is valid for `n` bytes; `value` is written when a handle is
        // returned.
        let h = unsafe { strata_rocks_cache_lookup(self.raw.as_ptr(), k, n, &mut value) };
        let handle = NonNull::new(h)?;
        match NonNull::new(value.cast::<Value>()) {
            Some(value) => Some(RocksHandle { cache: self, handle, value }),
            None => {
                // Every entry this tool inserts has a value; release a stray handle anyway.
                // SAFETY: the handle came from the lookup above and is released once.
                unsafe { strata_rocks_cache_release(self.raw.as_ptr(), h) };
                None
            }
        }
    }

    #[inline]
    fn insert(&self, key: Key, value: Arc<Value>, charge: usize) {
        let (k, n) = key_bytes(&key);
        let raw = Arc::into_raw(value).cast_mut().cast::<c_void>();
        // SAFETY: the key is valid for `n` bytes; on success RocksDB owns `raw` and frees it
        // through `free_value`.
        let rc = unsafe {
            strata_rocks_cache_insert(self.raw.as_ptr(), k, n, raw, charge, 0, ptr::null_mut())
        };
        if rc != 0 {
            // SAFETY: a refused insert leaves the reference with the caller (RocksDB's
            // contract): take it back and drop it.
            drop(unsafe { Arc::from_raw(raw.cast_const().cast::<Value>()) });
        }
    }

    #[inline]
    fn erase(&self, key: &Key) {
        let (k, n) = key_bytes(key);
        // SAFETY: the key pointer is valid for `n` bytes.
        unsafe { strata_rocks_cache_erase(self.raw.as_ptr(), k, n) }
    }

    fn occupancy(&self) -> usize {
        // SAFETY: `raw` is live for `&self`.
        unsafe { strata_rocks_cache_occupancy(self.raw.as_ptr()) }
    }

    fn usage(&self) -> usize {
        // SAFETY: `raw` is live for `&self`.
        unsafe { strata_rocks_cache_usage(self.raw.as_ptr()) }
    }

    fn capacity(&self) -> usize {
        // SAFETY: `raw` is live for `&self`.
        unsafe { strata_rocks_cache_capacity(self.raw.as_ptr()) }
    }

    fn table_slots(&self) -> Option<usize> {
        // SAFETY: `raw` is live for `&self`.
        let n = unsafe { strata_rocks_cache_table_slots(self.raw.as_ptr()) };
        (n > 0).then_some(n)
    }

    fn num_shard_bits(&self) -> u32 {
        self.printable_options()
            .lines()
            .find_map(|l| l.trim().strip_prefix("num_shard_bits :"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    fn impl_name(&self) -> String {
        // SAFETY: RocksDB's `Name()` returns a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(strata_rocks_cache_name(self.raw.as_ptr())) };
        // RocksDB's names already tell the table (`FixedHyperClockCache`, `Auto...`).
        format!("rocksdb::{}", name.to_string_lossy())
    }

    fn version_line(&self) -> String {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: the shim writes the three integers.
        unsafe { strata_rocks_cache_version(&mut major, &mut minor, &mut patch) };
        format!("RocksDB version     : {major}.{minor}.{patch}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(cache_type: &str, cache_size: u64) -> CacheBenchFlags {
        CacheBenchFlags {
            cache_type: cache_type.into(),
            cache_size,
            num_shard_bits: 0,
            value_bytes: 1024,
            engine: "rocksdb".into(),
            ..CacheBenchFlags::default()
        }
    }

    #[test]
    fn insert_lookup_erase_and_values_are_freed() {
        for cache_type in ["lru_cache", "hyper_clock_cache", "auto_hyper_clock_cache"] {
            let c = RocksCache::new(&flags(cache_type, 64 << 10)).unwrap();
            assert_eq!(c.capacity(), 64 << 10);
            let v = Arc::new(vec![7u8; 1024]);
            c.insert([1, 1], v.clone(), 1024);
            assert_eq!(Arc::strong_count(&v), 2, "{cache_type}: the cache holds one reference");
            {
                let h = c.lookup(&[1, 1]).expect("just inserted");
                assert_eq!(h.len(), 1024);
                assert!(h.iter().all(|&b| b == 7));
                assert!(c.lookup(&[2, 2]).is_none());
                // An erased entry stays alive while a handle holds it.
                c.erase(&[1, 1]);
                assert!(c.lookup(&[1, 1]).is_none());
                assert_eq!(Arc::strong_count(&v), 2, "{cache_type}: held by the handle");
            }
            assert_eq!(Arc::strong_count(&v), 1, "{cache_type}: freed after release");
            // Eviction frees: insert far more than the capacity.
            for k in 0..1000u64 {
                c.insert([k, k], Arc::new(vec![0u8; 1024]), 1024);
            }
            assert!(c.usage() <= (64 << 10) + 4096, "{cache_type}: usage {}", c.usage());
            let occ = c.occupancy();
            assert!(occ > 0 && occ < 1000, "{cache_type}: occupancy {occ}");
            assert!(c.impl_name().starts_with("rocksdb::"), "{}", c.impl_name());
            assert!(c.version_line().contains("RocksDB version"));
        }
    }

    #[test]
    fn destroying_the_cache_frees_every_value() {
        for cache_type in ["lru_cache", "hyper_clock_cache", "auto_hyper_clock_cache"] {
            let c = RocksCache::new(&flags(cache_type, 1 << 20)).unwrap();
            let probes: Vec<Arc<Value>> = (0..10u8).map(|i| Arc::new(vec![i; 16])).collect();
            for (k, p) in probes.iter().enumerate() {
                c.insert([k as u64, 7], p.clone(), 16);
            }
            assert_eq!(c.occupancy(), 10, "{cache_type}");
            assert!(probes.iter().all(|p| Arc::strong_count(p) == 2), "{cache_type}");
            drop(c);
            assert!(
                probes.iter().all(|p| Arc::strong_count(p) == 1),
                "{cache_type}: the cache's references are dropped with it"
            );
        }
    }

    #[test]
    fn bad_options_are_an_error() {
        assert!(RocksCache::new(&CacheBenchFlags {
            num_shard_bits: 30,
            ..flags("lru_cache", 1 << 20)
        })
        .is_err());
        assert!(RocksCache::new(&flags("clock_cache", 1 << 20)).is_err());
    }
}
