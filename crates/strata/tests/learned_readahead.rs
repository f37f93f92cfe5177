//! Learned readahead at a seek (issue #14, `sstable/readahead.rs`): when a table's iterators
//! keep reading the block after (or before) the one a seek lands on, a seek's read takes that
//! block too, so a short scan costs one table read, not two; point seeks keep reading one
//! block. Checked through the DB with no block cache (every block comes from the file),
//! counting table reads through the `FileSystem` seam, and every scan checked against a
//! model (BTreeMap).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use strata::env::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use strata::{CompressionType, Db, Options, Result};

/// Table reads (count and bytes) of everything opened through it.
#[derive(Default)]
struct Counts {
    reads: AtomicU64,
    bytes: AtomicU64,
}

struct CountingFs {
    inner: MemFs,
    counts: Arc<Counts>,
}

struct CountingFile {
    inner: Arc<dyn RandomAccessFile>,
    counts: Arc<Counts>,
}

impl RandomAccessFile for CountingFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let n = self.inner.read_at(offset, buf)?;
        self.counts.reads.fetch_add(1, Relaxed);
        self.counts.bytes.fetch_add(n as u64, Relaxed);
        Ok(n)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl FileSystem for CountingFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.create(path)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let inner = self.inner.open(path)?;
        if path.extension().is_some_and(|e| e == "sst") {
            return Ok(Arc::new(CountingFile { inner, counts: self.counts.clone() }));
        }
        Ok(inner)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.inner.sync_file(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
}

const KEYS: u64 = 20_000;

/// One table of `KEYS` entries of about 110 bytes in 1 KiB blocks (about nine a block), no
/// block cache, and its model.
fn loaded() -> (Db, Arc<Counts>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let counts = Arc::new(Counts::default());
    let opts = Options {
        fs: Arc::new(CountingFs { inner: MemFs::new(), counts: counts.clone() }),
        block_size: 1024,
        block_cache_size: 0,
        compression: CompressionType::None,
        target_file_size_base: 64 << 20,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    let mut model = BTreeMap::new();
    for i in 0..KEYS {
        let (k, v) = (format!("key{i:08}").into_bytes(), format!("{i:0100}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    (db, counts, model)
}

/// A seek to a pseudo-random key, then `steps` entries forward (or backward from a
/// `seek_for_prev`), each checked against the model.
fn scan(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, i: u64, steps: usize, backward: bool) {
    let target = format!("key{:08}", (i * 7_919) % KEYS).into_bytes();
    let expected: Vec<_> = if backward {
        model.range(..=target.clone()).rev().take(steps + 1).collect()
    } else {
        model.range(target.clone()..).take(steps + 1).collect()
    };
    let mut it = db.raw_iterator();
    if backward {
        it.seek_for_prev(&target);
    } else {
        it.seek(&target);
    }
    for (k, v) in expected {
        assert_eq!(
            (it.key(), it.value()),
            (Some(&k[..]), Some(&v[..])),
            "scan {i} from {target:?}"
        );
        if backward {
            it.prev();
        } else {
            it.next();
        }
    }
}

/// Table reads per scan over 500 scans, after 100 unmeasured ones (the table learns).
fn reads_per_scan(steps: usize, backward: bool) -> f64 {
    let (db, counts, model) = loaded();
    for i in 0..100 {
        scan(&db, &model, i, steps, backward);
    }
    let before = counts.reads.load(Relaxed);
    for i in 100..600 {
        scan(&db, &model, i, steps, backward);
    }
    (counts.reads.load(Relaxed) - before) as f64 / 500.0
}

#[test]
fn short_forward_scans_take_one_read_once_learned() {
    // Eight entries after the sought one: the next block is needed on most scans, and without
    // learning a scan takes 1 + (about 0.9) reads.
    let rps = reads_per_scan(8, false);
    assert!(rps < 1.2, "{rps} table reads per forward scan");
}

#[test]
fn short_backward_scans_take_one_read_once_learned() {
    let rps = reads_per_scan(8, true);
    assert!(rps < 1.2, "{rps} table reads per backward scan");
}

#[test]
fn point_seeks_read_one_block_each() {
    let (db, counts, model) = loaded();
    scan(&db, &model, 0, 0, false); // opens the table: footer, index and filter reads
    let (reads0, bytes0) = (counts.reads.load(Relaxed), counts.bytes.load(Relaxed));
    for i in 1..600 {
        scan(&db, &model, i, 0, false);
    }
    let reads = counts.reads.load(Relaxed) - reads0;
    let bytes = counts.bytes.load(Relaxed) - bytes0;
    assert!(reads >= 590, "{reads} reads for 599 seeks");
    // A block and its trailer, not the block after it as well.
    assert!(bytes / reads < 1200, "{} bytes per read over {reads} reads", bytes / reads);
}
