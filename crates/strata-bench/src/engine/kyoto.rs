//! `--engine=kyoto` (cargo feature `kyoto`): Kyoto Cabinet's file tree database (TreeDB, a
//! B+ tree) through its C API (`kclangc.h`), linked against the system's library (Debian's
//! `libkyotocabinet-dev`, 1.2.79; build.rs finds it). The declarations below are written from
//! that header; only what the adapter calls is declared.
//!
//! Tuned as LevelDB's benchmark page tuned TreeDB (its `db_bench_tree_db.cc`): the small and
//! linear options (`opts=sl`), a 256 MiB memory map, `--block_size` as the page size (the
//! page: 1024), `--cache_size` as the page cache, compression LZO unless
//! `--compression_type` says otherwise (none, lzo, zlib, lzma), and `OAUTOSYNC` (every update
//! synchronised with the device) when `--sync` is given. A synced write on a DB opened
//! without `OAUTOSYNC` (fillsync without `--sync`) is followed by a hard `kcdbsync`, the
//! same synchronisation made explicitly.
//!
//! Batches: TreeDB has no write batch (the page left it out of its batch rows); a batch of
//! puts is applied with `kcdbsetbulk` and a batch of deletes with `kcdbremovebulk`, both
//! atomic; a batch mixing the two is refused.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::NonNull;

use anyhow::{anyhow, bail, Context, Result};

use super::{Batch, BatchOp, Bounds, Engine, EngineIter, ReadOpts, WriteOpts};
use crate::config::{Compression, Config};

// Flags applied here, benchmarks TreeDB cannot run: `crate::engine_kind` (`KYOTO_*`).

/// `KCDB` of `kclangc.h` (opaque).
#[repr(C)]
struct Kcdb {
    _opaque: [u8; 0],
}
/// `KCCUR` of `kclangc.h` (opaque).
#[repr(C)]
struct KcCur {
    _opaque: [u8; 0],
}

/// `KCSTR` of `kclangc.h`: a byte region.
#[repr(C)]
struct KcStr {
    buf: *mut c_char,
    size: usize,
}

/// `KCREC` of `kclangc.h`: a key and a value.
#[repr(C)]
struct KcRec {
    key: KcStr,
    value: KcStr,
}

/// Open modes of `kclangc.h` (`KCOWRITER`, `KCOCREATE`, `KCOAUTOSYNC`).
const KCOWRITER: u32 = 1 << 1;
const KCOCREATE: u32 = 1 << 2;
const KCOAUTOSYNC: u32 = 1 << 5;
/// `KCENOREC`: no record (a miss, not an error).
const KCENOREC: i32 = 7;

// Linked by build.rs (`cargo:rustc-link-lib=kyotocabinet`), which first checks the library
// is installed.
extern "C" {
    static KCVERSION: *const c_char;
    fn kcfree(ptr: *mut c_void);
    fn kcdbnew() -> *mut Kcdb;
    fn kcdbdel(db: *mut Kcdb);
    fn kcdbopen(db: *mut Kcdb, path: *const c_char, mode: u32) -> i32;
    fn kcdbclose(db: *mut Kcdb) -> i32;
    fn kcdbecode(db: *mut Kcdb) -> i32;
    fn kcdbemsg(db: *mut Kcdb) -> *const c_char;
    fn kcdbset(
        db: *mut Kcdb,
        kbuf: *const c_char,
        ksiz: usize,
        vbuf: *const c_char,
        vsiz: usize,
    ) -> i32;
    fn kcdbremove(db: *mut Kcdb, kbuf: *const c_char, ksiz: usize) -> i32;
    fn kcdbget(db: *mut Kcdb, kbuf: *const c_char, ksiz: usize, sp: *mut usize) -> *mut c_char;
    fn kcdbsetbulk(db: *mut Kcdb, recs: *const KcRec, rnum: usize, atomic: i32) -> i64;
    fn kcdbremovebulk(db: *mut Kcdb, keys: *const KcStr, knum: usize, atomic: i32) -> i64;
    fn kcdbsync(db: *mut Kcdb, hard: i32, proc_: *const c_void, opq: *mut c_void) -> i32;
    fn kcdbcount(db: *mut Kcdb) -> i64;
    fn kcdbsize(db: *mut Kcdb) -> i64;
    fn kcdbstatus(db: *mut Kcdb) -> *mut c_char;
    fn kcdbcursor(db: *mut Kcdb) -> *mut KcCur;
    fn kccurdel(cur: *mut KcCur);
    fn kccurget(
        cur: *mut KcCur,
        ksp: *mut usize,
        vbp: *mut *const c_char,
        vsp: *mut usize,
        step: i32,
    ) -> *mut c_char;
    fn kccurjump(cur: *mut KcCur) -> i32;
    fn kccurjumpkey(cur: *mut KcCur, kbuf: *const c_char, ksiz: usize) -> i32;
    fn kccurjumpback(cur: *mut KcCur) -> i32;
    fn kccurjumpbackkey(cur: *mut KcCur, kbuf: *const c_char, ksiz: usize) -> i32;
    fn kccurstep(cur: *mut KcCur) -> i32;
    fn kccurstepback(cur: *mut KcCur) -> i32;
    fn kccurecode(cur: *mut KcCur) -> i32;
    fn kccuremsg(cur: *mut KcCur) -> *const c_char;
}

/// The linked library's version (`1.2.79`).
pub fn version() -> String {
    // SAFETY: KCVERSION is a constant NUL-terminated string of the library.
    unsafe { CStr::from_ptr(KCVERSION).to_string_lossy().into_owned() }
}

/// The tuning parameters that follow the file name in `kcdbopen`'s path (`#name=value`).
pub fn tuning(cfg: &Config) -> Result<String> {
    let f = &cfg.flags;
    // Not given: LZO, the page's TreeDB compression.
    let compression =
        if cfg.set.contains("compression_type") { cfg.compression } else { Compression::Lzo };
    let zcomp = match compression {
        Compression::None => None,
        Compression::Lzo => Some("lzo"),
        Compression::Zlib => Some("zlib"),
        Compression::Lzma => Some("lzma"),
        other => bail!(
            "--compression_type={}: Kyoto Cabinet compresses with lzo, zlib or lzma, or not at \
             all ({other:?} is not available)",
            f.compression_type
        ),
    };
    if !(256..=32768).contains(&f.block_size) {
        bail!("--block_size={}: Kyoto Cabinet's page size must be 256..32768 bytes", f.block_size);
    }
    // <= 0: TreeDB's own default page cache (64 MiB).
    let pccap = if f.cache_size > 0 { format!("#pccap={}", f.cache_size) } else { String::new() };
    let opts = if zcomp.is_some() { "slc" } else { "sl" };
    let zcomp = zcomp.map_or(String::new(), |z| format!("#zcomp={z}"));
    Ok(format!("#opts={opts}{zcomp}#psiz={}{pccap}#msiz={}", f.block_size, 256u64 << 20))
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(&cfg.db)
        .with_context(|| format!("cannot create {}", cfg.db.display()))?;
    let file = cfg.db.join(super::KYOTO_FILE);
    let file = file.to_str().ok_or_else(|| anyhow!("--db={}: not UTF-8", cfg.db.display()))?;
    if file.contains('#') {
        bail!(
            "--db={}: Kyoto Cabinet reads '#' in a path as its tuning parameters",
            cfg.db.display()
        );
    }
    let path = CString::new(format!("{file}{}", tuning(cfg)?))
        .map_err(|_| anyhow!("--db={}: a path with a NUL byte", cfg.db.display()))?;
    let autosync = cfg.flags.sync;
    let mut mode = KCOWRITER;
    if !cfg.use_existing_db {
        mode |= KCOCREATE;
    }
    if autosync {
        mode |= KCOAUTOSYNC;
    }
    // SAFETY: the object is created here and owned by `db` (deleted by its Drop).
    let db =
        Db(NonNull::new(unsafe { kcdbnew() }).ok_or_else(|| anyhow!("kcdbnew failed"))?, false);
    let mut db = db;
    // SAFETY: the object is live; the path is a NUL-terminated string valid for the call.
    if unsafe { kcdbopen(db.0.as_ptr(), path.as_ptr(), mode) } == 0 {
        return Err(db.error("open"));
    }
    db.1 = true;
    Ok(Box::new(KyotoEngine { db, autosync }))
}

/// A `KCDB` object, and whether it is open (closed and deleted on drop).
struct Db(NonNull<Kcdb>, bool);

impl Db {
    fn ptr(&self) -> *mut Kcdb {
        self.0.as_ptr()
    }

    /// The object's last error.
    fn error(&self, what: &str) -> anyhow::Error {
        // SAFETY: the object is live; the message is a constant string of the library.
        let msg = unsafe { CStr::from_ptr(kcdbemsg(self.ptr())).to_string_lossy().into_owned() };
        anyhow!("Kyoto Cabinet {what}: {msg}")
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: closed (if open) and deleted once; cursors borrow the engine, so none is
        // alive. A failed close cannot be reported from a drop: it is printed.
        unsafe {
            if self.1 && kcdbclose(self.ptr()) == 0 {
                let msg = CStr::from_ptr(kcdbemsg(self.ptr())).to_string_lossy().into_owned();
                eprintln!("strata-bench: Kyoto Cabinet close failed: {msg}");
            }
            kcdbdel(self.ptr());
        }
    }
}

struct KyotoEngine {
    db: Db,
    /// Opened with `OAUTOSYNC`: every update is already synchronised.
    autosync: bool,
}

// SAFETY: Kyoto Cabinet's database objects are thread-safe ("all methods are thread-safe",
// its documentation of `kyotocabinet::PolyDB` that the C API wraps); cursors are not shared.
unsafe impl Send for KyotoEngine {}
// SAFETY: as above.
unsafe impl Sync for KyotoEngine {}

impl KyotoEngine {
    /// What a write must do after it succeeded, given its options.
    fn after_write(&self, wo: WriteOpts) -> Result<()> {
        if wo.sync && !self.autosync {
            // SAFETY: the DB is open; no callback.
            let ok = unsafe { kcdbsync(self.db.ptr(), 1, std::ptr::null(), std::ptr::null_mut()) };
            if ok == 0 {
                return Err(self.db.error("sync"));
            }
        }
        Ok(())
    }
}

impl Engine for KyotoEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        // SAFETY: the DB is open; the slices are valid for the call (Kyoto copies them).
        let ok = unsafe {
            kcdbset(
                self.db.ptr(),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
        if ok == 0 {
            return Err(self.db.error("set"));
        }
        self.after_write(*wo)
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        // SAFETY: the DB is open; the slice is valid for the call.
        let ok = unsafe { kcdbremove(self.db.ptr(), key.as_ptr().cast(), key.len()) };
        // SAFETY: the DB is open.
        if ok == 0 && unsafe { kcdbecode(self.db.ptr()) } != KCENOREC {
            return Err(self.db.error("remove"));
        }
        self.after_write(*wo)
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _wo: &WriteOpts) -> Result<()> {
        bail!("Kyoto Cabinet has no merge operator")
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut ops = batch.iter().map(|(op, _, _)| op);
        let Some(first) = ops.next() else { return Ok(()) };
        if ops.any(|op| op != first) {
            bail!("Kyoto Cabinet cannot apply a batch of both puts and deletes atomically");
        }
        // The regions point into `batch`, which outlives the call; Kyoto only reads them.
        let region = |b: &[u8]| KcStr { buf: b.as_ptr().cast_mut().cast(), size: b.len() };
        let done = match first {
            BatchOp::Put => {
                let recs: Vec<KcRec> = batch
                    .iter()
                    .map(|(_, k, v)| KcRec { key: region(k), value: region(v) })
                    .collect();
                // SAFETY: the DB is open; `recs` and the bytes it points to are valid for the call.
                unsafe { kcdbsetbulk(self.db.ptr(), recs.as_ptr(), recs.len(), 1) }
            }
            BatchOp::Delete => {
                let keys: Vec<KcStr> = batch.iter().map(|(_, k, _)| region(k)).collect();
                // SAFETY: as above. Missing keys are not an error of a bulk remove.
                unsafe { kcdbremovebulk(self.db.ptr(), keys.as_ptr(), keys.len(), 1) }
            }
            BatchOp::Merge => bail!("Kyoto Cabinet has no merge operator"),
            BatchOp::DeleteRange => bail!("Kyoto Cabinet has no range deletion"),
        };
        if done < 0 {
            return Err(self.db.error("bulk write"));
        }
        self.after_write(*wo)
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let mut len = 0usize;
        // SAFETY: the DB is open; the key is valid for the call; the value is NULL or `len`
        // bytes allocated by Kyoto, copied and released once here.
        unsafe {
            let v = kcdbget(self.db.ptr(), key.as_ptr().cast(), key.len(), &mut len);
            if v.is_null() {
                if kcdbecode(self.db.ptr()) == KCENOREC {
                    return Ok(false);
                }
                return Err(self.db.error("get"));
            }
            out.clear();
            out.extend_from_slice(std::slice::from_raw_parts(v.cast::<u8>(), len));
            kcfree(v.cast());
        }
        Ok(true)
    }

    fn new_iterator<'a>(
        &'a self,
        _ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        // SAFETY: the DB is open for 'a (the cursor borrows the engine).
        let cur = NonNull::new(unsafe { kcdbcursor(self.db.ptr()) })
            .ok_or_else(|| anyhow!("kcdbcursor failed"))?;
        Ok(Box::new(KyotoCursor {
            cur,
            rec: None,
            lower: bounds.lower.map(<[u8]>::to_vec),
            upper: bounds.upper.map(<[u8]>::to_vec),
            error: None,
            _engine: std::marker::PhantomData,
        }))
    }

    /// Writes the page cache's dirty pages to the file (no device sync).
    fn flush(&self) -> Result<()> {
        // SAFETY: the DB is open; no callback.
        if unsafe { kcdbsync(self.db.ptr(), 0, std::ptr::null(), std::ptr::null_mut()) } == 0 {
            return Err(self.db.error("sync"));
        }
        Ok(())
    }

    fn compact_range(&self) -> Result<()> {
        bail!("Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction")
    }

    fn wait_for_compaction(&self) -> Result<()> {
        bail!("Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction")
    }

    fn property(&self, _name: &str) -> Result<Option<String>> {
        Ok(None)
    }

    /// `kcdbstatus`: the DB's own `name<TAB>value` lines (records, size, page cache, ...).
    fn stats_text(&self) -> Result<String> {
        // SAFETY: the DB is open; the status is NULL or a string allocated by Kyoto,
        // released once here.
        unsafe {
            let s = kcdbstatus(self.db.ptr());
            if s.is_null() {
                return Err(self.db.error("status"));
            }
            let text = CStr::from_ptr(s).to_string_lossy().into_owned();
            kcfree(s.cast());
            Ok(format!(
                "** Kyoto Cabinet {} TreeDB: {} records, {:.2} MB **\n{text}",
                version(),
                kcdbcount(self.db.ptr()),
                kcdbsize(self.db.ptr()) as f64 / 1_048_576.0
            ))
        }
    }

    fn level_stats_text(&self) -> Result<String> {
        bail!("Kyoto Cabinet's TreeDB has no LSM levels")
    }

    fn sstables_text(&self) -> Result<String> {
        bail!("Kyoto Cabinet's TreeDB has no table files")
    }
}

/// A TreeDB cursor. Kyoto copies a record out on each read (`kccurget`): the current record
/// is read once per move and kept in `rec` (key and value in one Kyoto allocation).
struct KyotoCursor<'a> {
    cur: NonNull<KcCur>,
    /// The current record: the region, the key's length, the value's start and length.
    rec: Option<(NonNull<c_char>, usize, *const c_char, usize)>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    error: Option<String>,
    _engine: std::marker::PhantomData<&'a KyotoEngine>,
}

impl Drop for KyotoCursor<'_> {
    fn drop(&mut self) {
        self.release();
        // SAFETY: created by kcdbcursor, deleted once, before the DB closes (the cursor
        // borrows the engine).
        unsafe { kccurdel(self.cur.as_ptr()) }
    }
}

impl KyotoCursor<'_> {
    fn release(&mut self) {
        if let Some((region, ..)) = self.rec.take() {
            // SAFETY: the region was allocated by kccurget and is released once.
            unsafe { kcfree(region.as_ptr().cast()) }
        }
    }

    /// After a move that returned `moved`: reads the record under the cursor, or notes why
    /// there is none (the end of the records is not an error).
    fn load(&mut self, moved: bool) {
        self.release();
        if moved {
            let (mut ksiz, mut vbuf, mut vsiz) = (0usize, std::ptr::null(), 0usize);
            // SAFETY: the cursor is live; the result is NULL or a region allocated by Kyoto
            // holding the key, with `vbuf` pointing at the value inside it.
            let k = unsafe { kccurget(self.cur.as_ptr(), &mut ksiz, &mut vbuf, &mut vsiz, 0) };
            if let Some(k) = NonNull::new(k) {
                self.rec = Some((k, ksiz, vbuf, vsiz));
                if !self.in_bounds() {
                    self.release();
                }
                return;
            }
        }
        // SAFETY: the cursor is live; the message is a constant string of the library.
        unsafe {
            if kccurecode(self.cur.as_ptr()) != KCENOREC {
                self.error = Some(
                    CStr::from_ptr(kccuremsg(self.cur.as_ptr())).to_string_lossy().into_owned(),
                );
            }
        }
    }

    fn in_bounds(&self) -> bool {
        let k = self.key();
        self.lower.as_deref().is_none_or(|l| k >= l) && self.upper.as_deref().is_none_or(|u| k < u)
    }
}

impl EngineIter for KyotoCursor<'_> {
    fn seek_to_first(&mut self) {
        // SAFETY: the cursor is live; the key is valid for the call.
        let moved = unsafe {
            match &self.lower {
                Some(l) => kccurjumpkey(self.cur.as_ptr(), l.as_ptr().cast(), l.len()),
                None => kccurjump(self.cur.as_ptr()),
            }
        };
        self.load(moved != 0);
    }

    fn seek_to_last(&mut self) {
        let moved = match self.upper.clone() {
            Some(u) => {
                // The last key below the bound: jump back to the last key <= it, then step
                // back once more if that key is the bound itself.
                // SAFETY: the cursor is live; the key is valid for the call.
                let m = unsafe { kccurjumpbackkey(self.cur.as_ptr(), u.as_ptr().cast(), u.len()) };
                self.load(m != 0);
                if self.rec.is_some() || self.error.is_some() {
                    return;
                }
                // On the bound itself (dropped by `load` as out of bounds): one step back.
                // SAFETY: the cursor is live.
                unsafe {
                    kccurjumpbackkey(self.cur.as_ptr(), u.as_ptr().cast(), u.len()) != 0
                        && kccurstepback(self.cur.as_ptr()) != 0
                }
            }
            // SAFETY: the cursor is live.
            None => unsafe { kccurjumpback(self.cur.as_ptr()) != 0 },
        };
        self.load(moved);
    }

    fn seek(&mut self, key: &[u8]) {
        // Never before the lower bound (borrowed: a seek allocates nothing).
        let key: &[u8] = match self.lower.as_deref() {
            Some(l) if key < l => l,
            _ => key,
        };
        // SAFETY: the cursor is live; the key is valid for the call.
        let moved = unsafe { kccurjumpkey(self.cur.as_ptr(), key.as_ptr().cast(), key.len()) };
        self.load(moved != 0);
    }

    fn next(&mut self) {
        if self.rec.is_some() {
            // SAFETY: the cursor is live and on a record.
            let moved = unsafe { kccurstep(self.cur.as_ptr()) };
            self.load(moved != 0);
        }
    }

    fn prev(&mut self) {
        if self.rec.is_some() {
            // SAFETY: the cursor is live and on a record.
            let moved = unsafe { kccurstepback(self.cur.as_ptr()) };
            self.load(moved != 0);
        }
    }

    fn valid(&self) -> bool {
        self.rec.is_some()
    }

    fn key(&self) -> &[u8] {
        match self.rec {
            // SAFETY: the region holds `ksiz` key bytes and lives until the next move.
            Some((k, ksiz, ..)) => unsafe {
                std::slice::from_raw_parts(k.as_ptr().cast::<u8>(), ksiz)
            },
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.rec {
            // SAFETY: `vbuf` points at `vsiz` value bytes inside the region.
            Some((_, _, v, vsiz)) if !v.is_null() => unsafe {
                std::slice::from_raw_parts(v.cast::<u8>(), vsiz)
            },
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => bail!("Kyoto Cabinet cursor: {e}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tuning_follows_the_page_and_the_flags() {
        let cfg = |args: &[&str]| {
            let mut a = vec!["--engine=kyoto", "--db=/tmp/x"];
            a.extend_from_slice(args);
            crate::config::Config::from_args(&a).expect("config")
        };
        let t =
            super::tuning(&cfg(&["--block_size=1024", "--cache_size=4194304"])).expect("tuning");
        assert_eq!(t, "#opts=slc#zcomp=lzo#psiz=1024#pccap=4194304#msiz=268435456");
        let t =
            super::tuning(&cfg(&["--compression_type=none", "--block_size=1024"])).expect("none");
        assert!(t.starts_with("#opts=sl#psiz=1024"), "{t}");
        let e = super::tuning(&cfg(&["--compression_type=snappy"])).expect_err("snappy");
        assert!(e.to_string().contains("lzo, zlib or lzma"), "{e}");
        let e = super::tuning(&cfg(&["--block_size=100"])).expect_err("tiny page");
        assert!(e.to_string().contains("256..32768"), "{e}");
    }
}
