//! `--engine=leveldb` (cargo feature `leveldb`): LevelDB through its C API (`leveldb/c.h`),
//! linked against the system's library (Debian's `libleveldb-dev`, LevelDB 1.23; build.rs
//! finds it). The declarations below are written from that header; only what the adapter
//! calls is declared.
//!
//! Flags map onto `leveldb::Options` as LevelDB's own db_bench maps them: `--cache_size` an
//! LRU block cache, `--write_buffer_size`, `--block_size`, `--block_restart_interval`,
//! `--open_files`, `--bloom_bits` (a Bloom filter policy when positive), `--compression_type`
//! none or snappy, `--paranoid_checks`; `--verify_checksum` on reads, `--sync` per write.
//! Everything else keeps LevelDB's defaults (2 MiB table files, its level sizes).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{self, NonNull};

use anyhow::{anyhow, bail, Context, Result};

use super::{Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, ReadOpts, WriteOpts};
use crate::config::{Compression, Config};

// Flags applied here, benchmarks LevelDB cannot run: `crate::engine_kind` (`LEVELDB_*`).

#[repr(C)]
struct leveldb_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_options_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_readoptions_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_writeoptions_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_cache_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_filterpolicy_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_writebatch_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_iterator_t {
    _opaque: [u8; 0],
}
#[repr(C)]
struct leveldb_snapshot_t {
    _opaque: [u8; 0],
}

/// `leveldb_no_compression` and `leveldb_snappy_compression` of `c.h`.
const NO_COMPRESSION: c_int = 0;
const SNAPPY_COMPRESSION: c_int = 1;

#[allow(non_camel_case_types)]
type errptr = *mut *mut c_char;

// Linked by build.rs (`cargo:rustc-link-lib=leveldb`), which first checks the library is
// installed.
extern "C" {
    fn leveldb_open(
        options: *const leveldb_options_t,
        name: *const c_char,
        err: errptr,
    ) -> *mut leveldb_t;
    fn leveldb_close(db: *mut leveldb_t);
    fn leveldb_approximate_sizes(
        db: *mut leveldb_t,
        num_ranges: c_int,
        range_start_key: *const *const c_char,
        range_start_key_len: *const usize,
        range_limit_key: *const *const c_char,
        range_limit_key_len: *const usize,
        sizes: *mut u64,
    );
    fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t;
    fn leveldb_release_snapshot(db: *mut leveldb_t, snapshot: *const leveldb_snapshot_t);
    fn leveldb_readoptions_set_snapshot(
        o: *mut leveldb_readoptions_t,
        snapshot: *const leveldb_snapshot_t,
    );
    fn leveldb_put(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        err: errptr,
    );
    fn leveldb_delete(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        err: errptr,
    );
    fn leveldb_write(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        batch: *mut leveldb_writebatch_t,
        err: errptr,
    );
    fn leveldb_get(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        err: errptr,
    ) -> *mut c_char;
    fn leveldb_create_iterator(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
    ) -> *mut leveldb_iterator_t;
    fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;
    fn leveldb_compact_range(
        db: *mut leveldb_t,
        start_key: *const c_char,
        start_key_len: usize,
        limit_key: *const c_char,
        limit_key_len: usize,
    );

    fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
    fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8;
    fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t);
    fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t);
    fn leveldb_iter_seek(it: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
    fn leveldb_iter_next(it: *mut leveldb_iterator_t);
    fn leveldb_iter_prev(it: *mut leveldb_iterator_t);
    fn leveldb_iter_key(it: *const leveldb_iterator_t, klen: *mut usize) -> *const c_char;
    fn leveldb_iter_value(it: *const leveldb_iterator_t, vlen: *mut usize) -> *const c_char;
    fn leveldb_iter_get_error(it: *const leveldb_iterator_t, err: errptr);

    fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
    fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t);
    fn leveldb_writebatch_put(
        b: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    fn leveldb_writebatch_delete(b: *mut leveldb_writebatch_t, key: *const c_char, klen: usize);

    fn leveldb_options_create() -> *mut leveldb_options_t;
    fn leveldb_options_destroy(o: *mut leveldb_options_t);
    fn leveldb_options_set_filter_policy(o: *mut leveldb_options_t, p: *mut leveldb_filterpolicy_t);
    fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: u8);
    fn leveldb_options_set_paranoid_checks(o: *mut leveldb_options_t, v: u8);
    fn leveldb_options_set_write_buffer_size(o: *mut leveldb_options_t, v: usize);
    fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, v: c_int);
    fn leveldb_options_set_cache(o: *mut leveldb_options_t, c: *mut leveldb_cache_t);
    fn leveldb_options_set_block_size(o: *mut leveldb_options_t, v: usize);
    fn leveldb_options_set_block_restart_interval(o: *mut leveldb_options_t, v: c_int);
    fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int);

    fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut leveldb_filterpolicy_t;
    fn leveldb_filterpolicy_destroy(p: *mut leveldb_filterpolicy_t);
    fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
    fn leveldb_cache_destroy(c: *mut leveldb_cache_t);

    fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
    fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t);
    fn leveldb_readoptions_set_verify_checksums(o: *mut leveldb_readoptions_t, v: u8);
    fn leveldb_readoptions_set_fill_cache(o: *mut leveldb_readoptions_t, v: u8);
    fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
    fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t);
    fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8);

    fn leveldb_free(ptr: *mut c_void);
    fn leveldb_major_version() -> c_int;
    fn leveldb_minor_version() -> c_int;
}

/// The linked library's version (`1.23`).
pub fn version() -> String {
    // SAFETY: both functions only return constants.
    unsafe { format!("{}.{}", leveldb_major_version(), leveldb_minor_version()) }
}

/// Turns an error string the C API set into an `Err`, freeing it.
///
/// SAFETY (callers): `err` is null or a string LevelDB allocated for this call.
unsafe fn check(err: *mut c_char, what: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets `err` to a NUL-terminated malloc()-ed string, released here once.
    let msg = unsafe {
        let m = CStr::from_ptr(err).to_string_lossy().into_owned();
        leveldb_free(err.cast());
        m
    };
    bail!("LevelDB {what}: {msg}")
}

fn int(name: &str, v: i64) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| anyhow!("--{name}={v}: out of range"))
}

fn size(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| anyhow!("--{name}={v}: must not be negative"))
}

/// The options LevelDB is opened with and the objects they point to, which must outlive the
/// DB: LevelDB keeps pointers to the cache and the filter policy.
struct OpenOptions {
    opts: NonNull<leveldb_options_t>,
    cache: Option<NonNull<leveldb_cache_t>>,
    filter: Option<NonNull<leveldb_filterpolicy_t>>,
}

impl OpenOptions {
    fn new(cfg: &Config) -> Result<OpenOptions> {
        let f = &cfg.flags;
        let compression = match cfg.compression {
            Compression::None => NO_COMPRESSION,
            Compression::Snappy => SNAPPY_COMPRESSION,
            other => bail!(
                "--compression_type={}: LevelDB compresses with snappy or not at all ({other:?} \
                 is not available)",
                f.compression_type
            ),
        };
        let write_buffer = size("write_buffer_size", f.write_buffer_size)?;
        let block_size = size("block_size", f.block_size)?;
        let restart = int("block_restart_interval", f.block_restart_interval)?;
        if restart < 1 {
            bail!("--block_restart_interval={restart}: must be at least 1");
        }
        // -1 (db_bench's "all"): LevelDB takes a count, so "all" is as many as a process may
        // hold, bounded here by an int.
        let open_files =
            if f.open_files < 0 { c_int::MAX } else { int("open_files", f.open_files)? };
        let bloom = if f.bloom_bits > 0 { Some(int("bloom_bits", f.bloom_bits)?) } else { None };
        // SAFETY: every object is created here and owned by the returned value (or destroyed
        // by its Drop on an early return); setters only store values.
        unsafe {
            let opts = NonNull::new(leveldb_options_create())
                .ok_or_else(|| anyhow!("leveldb_options_create failed"))?;
            let mut o = OpenOptions { opts, cache: None, filter: None };
            let p = o.opts.as_ptr();
            leveldb_options_set_create_if_missing(p, u8::from(!cfg.use_existing_db));
            leveldb_options_set_paranoid_checks(p, u8::from(f.paranoid_checks));
            leveldb_options_set_write_buffer_size(p, write_buffer);
            leveldb_options_set_block_size(p, block_size);
            leveldb_options_set_block_restart_interval(p, restart);
            leveldb_options_set_max_open_files(p, open_files);
            leveldb_options_set_compression(p, compression);
            // <= 0: no block cache of our own; LevelDB then keeps its default 8 MiB one.
            if f.cache_size > 0 {
                let c = NonNull::new(leveldb_cache_create_lru(size("cache_size", f.cache_size)?))
                    .ok_or_else(|| anyhow!("leveldb_cache_create_lru failed"))?;
                o.cache = Some(c);
                leveldb_options_set_cache(p, c.as_ptr());
            }
            if let Some(bits) = bloom {
                let fp = NonNull::new(leveldb_filterpolicy_create_bloom(bits))
                    .ok_or_else(|| anyhow!("leveldb_filterpolicy_create_bloom failed"))?;
                o.filter = Some(fp);
                leveldb_options_set_filter_policy(p, fp.as_ptr());
            }
            Ok(o)
        }
    }
}

impl Drop for OpenOptions {
    fn drop(&mut self) {
        // SAFETY: each object was created by the matching constructor and is destroyed once;
        // the DB that used them is closed before (field order in `LevelDbEngine`).
        unsafe {
            leveldb_options_destroy(self.opts.as_ptr());
            if let Some(c) = self.cache {
                leveldb_cache_destroy(c.as_ptr());
            }
            if let Some(fp) = self.filter {
                leveldb_filterpolicy_destroy(fp.as_ptr());
            }
        }
    }
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(&cfg.db)
        .with_context(|| format!("cannot create {}", cfg.db.display()))?;
    let opts = OpenOptions::new(cfg)?;
    let path = CString::new(cfg.db.to_string_lossy().as_bytes())
        .map_err(|_| anyhow!("--db={}: a path with a NUL byte", cfg.db.display()))?;
    let mut err = ptr::null_mut();
    // SAFETY: `opts` and `path` are valid for the call; `err` receives an error string.
    let db = unsafe {
        let db = leveldb_open(opts.opts.as_ptr(), path.as_ptr(), &mut err);
        check(err, "open")?;
        NonNull::new(db).ok_or_else(|| anyhow!("leveldb_open returned no DB and no error"))?
    };
    let engine = LevelDbEngine {
        db: Db(db),
        read: [
            [ReadOptions::new(false, false)?, ReadOptions::new(false, true)?],
            [ReadOptions::new(true, false)?, ReadOptions::new(true, true)?],
        ],
        write: [WriteOptions::new(false)?, WriteOptions::new(true)?],
        _opts: opts,
    };
    Ok(Box::new(engine))
}

/// An open `leveldb_t`, closed on drop.
struct Db(NonNull<leveldb_t>);

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: the handle is open and closed once; iterators borrow the engine, so none
        // is alive here.
        unsafe { leveldb_close(self.0.as_ptr()) }
    }
}

struct ReadOptions(NonNull<leveldb_readoptions_t>);

impl ReadOptions {
    fn new(verify_checksums: bool, fill_cache: bool) -> Result<ReadOptions> {
        // SAFETY: created here, owned by the returned value; setters only store values.
        unsafe {
            let o = NonNull::new(leveldb_readoptions_create())
                .ok_or_else(|| anyhow!("leveldb_readoptions_create failed"))?;
            leveldb_readoptions_set_verify_checksums(o.as_ptr(), u8::from(verify_checksums));
            leveldb_readoptions_set_fill_cache(o.as_ptr(), u8::from(fill_cache));
            Ok(ReadOptions(o))
        }
    }
}

impl Drop for ReadOptions {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_readoptions_create, destroyed once.
        unsafe { leveldb_readoptions_destroy(self.0.as_ptr()) }
    }
}

struct WriteOptions(NonNull<leveldb_writeoptions_t>);

impl WriteOptions {
    fn new(sync: bool) -> Result<WriteOptions> {
        // SAFETY: created here, owned by the returned value; the setter only stores a value.
        unsafe {
            let o = NonNull::new(leveldb_writeoptions_create())
                .ok_or_else(|| anyhow!("leveldb_writeoptions_create failed"))?;
            leveldb_writeoptions_set_sync(o.as_ptr(), u8::from(sync));
            Ok(WriteOptions(o))
        }
    }
}

impl Drop for WriteOptions {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_writeoptions_create, destroyed once.
        unsafe { leveldb_writeoptions_destroy(self.0.as_ptr()) }
    }
}

/// A LevelDB snapshot with read options at it, by `[verify_checksums * 2 + fill_cache]`, each
/// made when a read first asks for it (a snapshot is usually read with one).
struct LevelDbSnapshot<'a> {
    engine: &'a LevelDbEngine,
    snap: *const leveldb_snapshot_t,
    read: [std::cell::OnceCell<ReadOptions>; 4],
}

impl Drop for LevelDbSnapshot<'_> {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_create_snapshot on this engine's open DB, released once.
        unsafe { leveldb_release_snapshot(self.engine.db.0.as_ptr(), self.snap) }
    }
}

impl EngineSnapshot for LevelDbSnapshot<'_> {
    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let slot = &self.read[usize::from(ro.verify_checksums) * 2 + usize::from(ro.fill_cache)];
        let o = match slot.get() {
            Some(o) => o,
            None => {
                let o = ReadOptions::new(ro.verify_checksums, ro.fill_cache)?;
                // SAFETY: both are live; the options only keep the pointer, and are dropped
                // with the snapshot, whose release comes after every read through them.
                unsafe { leveldb_readoptions_set_snapshot(o.0.as_ptr(), self.snap) };
                slot.get_or_init(|| o)
            }
        };
        self.engine.get_with(o.0.as_ptr(), key, out)
    }
}

/// Fields drop in order: the DB closes before the options (cache, filter policy) it uses.
struct LevelDbEngine {
    db: Db,
    /// Read options by `[verify_checksums][fill_cache]`, built once: a read or an iterator
    /// takes the caller's choice without creating options per call.
    read: [[ReadOptions; 2]; 2],
    /// Write options without and with sync.
    write: [WriteOptions; 2],
    _opts: OpenOptions,
}

// SAFETY: a `leveldb_t` is safe for concurrent use from several threads (LevelDB's
// documented threading contract: "A database may be safely accessed from multiple threads
// without external synchronization"); the option objects are only read after construction.
unsafe impl Send for LevelDbEngine {}
// SAFETY: as above.
unsafe impl Sync for LevelDbEngine {}

impl LevelDbEngine {
    /// A get with read options `o`.
    fn get_with(
        &self,
        o: *const leveldb_readoptions_t,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: the DB and options are live; the key is valid for the call; the value is
        // NULL (not found) or `len` malloc()-ed bytes, copied and released once here.
        unsafe {
            let v = leveldb_get(
                self.db.0.as_ptr(),
                o,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            check(err, "get")?;
            if v.is_null() {
                return Ok(false);
            }
            out.clear();
            out.extend_from_slice(std::slice::from_raw_parts(v.cast::<u8>(), len));
            leveldb_free(v.cast());
        }
        Ok(true)
    }

    /// The read options of `ro`.
    fn read_options(&self, ro: &ReadOpts) -> *const leveldb_readoptions_t {
        self.read[usize::from(ro.verify_checksums)][usize::from(ro.fill_cache)].0.as_ptr()
    }

    /// The write options of `wo` (`--disable_wal` never reaches here: it is refused when the
    /// flags are checked, LevelDB having no way to write without its log).
    fn wo(&self, wo: &WriteOpts) -> *const leveldb_writeoptions_t {
        self.write[usize::from(wo.sync)].0.as_ptr()
    }

    fn raw_property(&self, name: &str) -> Result<Option<String>> {
        let c = CString::new(name).map_err(|_| anyhow!("property name with a NUL byte"))?;
        // SAFETY: the DB is open; the result is NULL or a malloc()-ed NUL-terminated string,
        // released once here.
        unsafe {
            let v = leveldb_property_value(self.db.0.as_ptr(), c.as_ptr());
            if v.is_null() {
                return Ok(None);
            }
            let s = CStr::from_ptr(v).to_string_lossy().into_owned();
            leveldb_free(v.cast());
            Ok(Some(s))
        }
    }
}

/// A batch in LevelDB's format, destroyed on drop.
struct WriteBatch(NonNull<leveldb_writebatch_t>);

impl Drop for WriteBatch {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_writebatch_create, destroyed once.
        unsafe { leveldb_writebatch_destroy(self.0.as_ptr()) }
    }
}

impl Engine for LevelDbEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        let o = self.wo(wo);
        let mut err = ptr::null_mut();
        // SAFETY: the DB and options are live; the slices are valid for the call.
        unsafe {
            leveldb_put(
                self.db.0.as_ptr(),
                o,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            );
            check(err, "put")
        }
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let o = self.wo(wo);
        let mut err = ptr::null_mut();
        // SAFETY: the DB and options are live; the slice is valid for the call.
        unsafe {
            leveldb_delete(self.db.0.as_ptr(), o, key.as_ptr().cast(), key.len(), &mut err);
            check(err, "delete")
        }
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _wo: &WriteOpts) -> Result<()> {
        bail!("LevelDB has no merge operator")
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let o = self.wo(wo);
        // SAFETY: the batch is created here and owned by `b`; puts copy the slices.
        let b = unsafe {
            WriteBatch(
                NonNull::new(leveldb_writebatch_create())
                    .ok_or_else(|| anyhow!("leveldb_writebatch_create failed"))?,
            )
        };
        for (op, k, v) in batch.iter() {
            // SAFETY: `b` is live; the slices are valid for the call (LevelDB copies them).
            unsafe {
                match op {
                    BatchOp::Put => leveldb_writebatch_put(
                        b.0.as_ptr(),
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    BatchOp::Delete => {
                        leveldb_writebatch_delete(b.0.as_ptr(), k.as_ptr().cast(), k.len());
                    }
                    BatchOp::Merge => bail!("LevelDB has no merge operator"),
                    BatchOp::DeleteRange => bail!("LevelDB has no range deletion"),
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: the DB, options and batch are live for the call.
        unsafe {
            leveldb_write(self.db.0.as_ptr(), o, b.0.as_ptr(), &mut err);
            check(err, "write")
        }
    }

    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        self.get_with(self.read_options(ro), key, out)
    }

    fn approximate_sizes(
        &self,
        ranges: &[u8],
        key_size: usize,
        sizes: &mut Vec<u64>,
    ) -> Result<()> {
        let pairs: Vec<&[u8]> = ranges.chunks_exact(2 * key_size).collect();
        let n = c_int::try_from(pairs.len()).map_err(|_| anyhow!("too many ranges"))?;
        let starts: Vec<*const c_char> = pairs.iter().map(|r| r.as_ptr().cast()).collect();
        let limits: Vec<*const c_char> =
            pairs.iter().map(|r| r[key_size..].as_ptr().cast()).collect();
        let lens = vec![key_size; pairs.len()];
        sizes.clear();
        sizes.resize(pairs.len(), 0);
        // SAFETY: the DB is open; every array holds `n` entries, the keys live in `ranges`
        // for the call, and `sizes` has room for `n` results.
        unsafe {
            leveldb_approximate_sizes(
                self.db.0.as_ptr(),
                n,
                starts.as_ptr(),
                lens.as_ptr(),
                limits.as_ptr(),
                lens.as_ptr(),
                sizes.as_mut_ptr(),
            );
        }
        Ok(())
    }

    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        // SAFETY: the DB is open; the snapshot is released once, by `LevelDbSnapshot`'s drop,
        // while the engine it borrows is still open.
        let snap = unsafe { leveldb_create_snapshot(self.db.0.as_ptr()) };
        if snap.is_null() {
            bail!("leveldb_create_snapshot failed");
        }
        Ok(Box::new(LevelDbSnapshot { engine: self, snap, read: Default::default() }))
    }

    fn new_iterator<'a>(
        &'a self,
        ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        // SAFETY: the DB and the options are live for 'a (the iterator borrows the engine).
        let it = unsafe { leveldb_create_iterator(self.db.0.as_ptr(), self.read_options(ro)) };
        let it = NonNull::new(it).ok_or_else(|| anyhow!("leveldb_create_iterator failed"))?;
        Ok(Box::new(LevelDbIter {
            it,
            lower: bounds.lower.map(<[u8]>::to_vec),
            upper: bounds.upper.map(<[u8]>::to_vec),
            _engine: std::marker::PhantomData,
        }))
    }

    fn flush(&self) -> Result<()> {
        bail!("LevelDB's API has no memtable flush")
    }

    /// `CompactRange(nullptr, nullptr)`: writes the memtable out and compacts every level;
    /// returns when done.
    fn compact_range(&self) -> Result<()> {
        // SAFETY: the DB is live; null keys mean the whole key range.
        unsafe { leveldb_compact_range(self.db.0.as_ptr(), ptr::null(), 0, ptr::null(), 0) };
        Ok(())
    }

    fn wait_for_compaction(&self) -> Result<()> {
        bail!("LevelDB's API cannot wait for background compactions")
    }

    /// `rocksdb.X` is asked as `leveldb.X` (LevelDB's names: `stats`, `sstables`,
    /// `num-files-at-level<N>`, `approximate-memory-usage`).
    fn property(&self, name: &str) -> Result<Option<String>> {
        self.raw_property(&format!("leveldb.{}", super::strip_rocksdb_prefix(name)))
    }

    fn stats_text(&self) -> Result<String> {
        self.raw_property("leveldb.stats")?.ok_or_else(|| anyhow!("leveldb.stats is not available"))
    }

    fn level_stats_text(&self) -> Result<String> {
        self.stats_text()
    }

    fn sstables_text(&self) -> Result<String> {
        self.raw_property("leveldb.sstables")?
            .ok_or_else(|| anyhow!("leveldb.sstables is not available"))
    }
}

/// A LevelDB iterator with the bounds applied here (the C API has none): seeks start at the
/// lower bound at the earliest, and a key outside the bounds ends the walk.
struct LevelDbIter<'a> {
    it: NonNull<leveldb_iterator_t>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    _engine: std::marker::PhantomData<&'a LevelDbEngine>,
}

impl Drop for LevelDbIter<'_> {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_create_iterator, destroyed once, before the DB closes
        // (the iterator borrows the engine).
        unsafe { leveldb_iter_destroy(self.it.as_ptr()) }
    }
}

impl LevelDbIter<'_> {
    fn raw_valid(&self) -> bool {
        // SAFETY: the iterator is live.
        unsafe { leveldb_iter_valid(self.it.as_ptr()) != 0 }
    }

    fn raw_key(&self) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: only called on a valid iterator; the key stays valid until the iterator
        // moves, which needs `&mut self`.
        unsafe {
            let k = leveldb_iter_key(self.it.as_ptr(), &mut len);
            std::slice::from_raw_parts(k.cast::<u8>(), len)
        }
    }
}

impl EngineIter for LevelDbIter<'_> {
    fn seek_to_first(&mut self) {
        match &self.lower {
            Some(l) => {
                // SAFETY: the iterator is live; the key is valid for the call.
                unsafe { leveldb_iter_seek(self.it.as_ptr(), l.as_ptr().cast(), l.len()) }
            }
            // SAFETY: the iterator is live.
            None => unsafe { leveldb_iter_seek_to_first(self.it.as_ptr()) },
        }
    }

    fn seek_to_last(&mut self) {
        match &self.upper {
            Some(u) => {
                // The last key below the upper bound: the one before the first key >= it.
                // SAFETY: the iterator is live; the key is valid for the call.
                unsafe {
                    leveldb_iter_seek(self.it.as_ptr(), u.as_ptr().cast(), u.len());
                    if leveldb_iter_valid(self.it.as_ptr()) != 0 {
                        leveldb_iter_prev(self.it.as_ptr());
                    } else {
                        leveldb_iter_seek_to_last(self.it.as_ptr());
                    }
                }
            }
            // SAFETY: the iterator is live.
            None => unsafe { leveldb_iter_seek_to_last(self.it.as_ptr()) },
        }
    }

    fn seek(&mut self, key: &[u8]) {
        // Never before the lower bound (borrowed: a seek allocates nothing).
        let key: &[u8] = match self.lower.as_deref() {
            Some(l) if key < l => l,
            _ => key,
        };
        // SAFETY: the iterator is live; the key is valid for the call.
        unsafe { leveldb_iter_seek(self.it.as_ptr(), key.as_ptr().cast(), key.len()) }
    }

    fn next(&mut self) {
        if self.raw_valid() {
            // SAFETY: the iterator is live and valid.
            unsafe { leveldb_iter_next(self.it.as_ptr()) }
        }
    }

    fn prev(&mut self) {
        if self.raw_valid() {
            // SAFETY: the iterator is live and valid.
            unsafe { leveldb_iter_prev(self.it.as_ptr()) }
        }
    }

    fn valid(&self) -> bool {
        if !self.raw_valid() {
            return false;
        }
        let k = self.raw_key();
        self.lower.as_deref().is_none_or(|l| k >= l) && self.upper.as_deref().is_none_or(|u| k < u)
    }

    fn key(&self) -> &[u8] {
        if self.raw_valid() {
            self.raw_key()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if !self.raw_valid() {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: the iterator is live and valid; the value stays valid until it moves.
        unsafe {
            let v = leveldb_iter_value(self.it.as_ptr(), &mut len);
            std::slice::from_raw_parts(v.cast::<u8>(), len)
        }
    }

    fn status(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is live; `err` receives an error string or stays null.
        unsafe {
            leveldb_iter_get_error(self.it.as_ptr(), &mut err);
            check(err, "iterator")
        }
    }
}
