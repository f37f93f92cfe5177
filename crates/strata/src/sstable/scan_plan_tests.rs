//! A table iterator reading for a multi-range scan's plan (`readahead/planned.rs`): the same
//! entries as without a plan, in fewer reads of the file, both directions.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::builder::{TableBuilder, TableOptions};
use super::readahead::ScanPlan;
use super::reader::{ReadBlockOptions, TableReader};
use crate::env::{FileSystem, MemFs, RandomAccessFile};
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::key::{lookup_key, make_internal_key, user_key};
use crate::types::{SeqNo, ValueType};

/// A file that counts its reads, and takes and records the OS prefetches asked of it.
struct Counted {
    inner: Arc<dyn RandomAccessFile>,
    reads: Arc<AtomicUsize>,
    prefetched: Arc<std::sync::Mutex<Vec<(u64, usize)>>>,
}

impl RandomAccessFile for Counted {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_at(offset, buf)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn prefetch(&self, offset: u64, len: usize) -> bool {
        self.prefetched.lock().unwrap().push((offset, len));
        true
    }
}

type Prefetched = Arc<std::sync::Mutex<Vec<(u64, usize)>>>;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A table of 2,000 keys in blocks of about four entries (with a partitioned index when
/// `partitioned`), opened through a counting file.
fn table(partitioned: bool) -> (Arc<TableReader>, Arc<AtomicUsize>, Prefetched) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let path = PathBuf::from("/db/000009.sst");
    let mut opts = TableOptions { block_size: 256, ..TableOptions::default() };
    if partitioned {
        opts.index_type = super::partitioned::IndexType::TwoLevel;
        opts.metadata_block_size = 128;
    }
    let mut b = TableBuilder::new(&opts, fs.create(&path).unwrap(), path.clone());
    for i in 0..2000 {
        let ikey = make_internal_key(&key(i), SeqNo(i as u64 + 1), ValueType::Value);
        b.add(&ikey, format!("value-{i:06}-{}", "x".repeat(40)).as_bytes()).unwrap();
    }
    b.finish().unwrap();
    let reads = Arc::new(AtomicUsize::new(0));
    let prefetched = Prefetched::default();
    let inner = fs.open(&path).unwrap();
    let file = Arc::new(Counted { inner, reads: reads.clone(), prefetched: prefetched.clone() });
    (Arc::new(TableReader::open(file, 1, None).unwrap()), reads, prefetched)
}

/// Ten ranges of two keys, 38 keys (about ten blocks) apart: short enough that a scan
/// without a plan never reads ahead.
fn ranges() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..10).map(|r| (key(100 + 40 * r), key(102 + 40 * r))).collect()
}

/// Walks each range (each backward with `reverse`), returning the user keys met and the file
/// reads made.
fn walk(plan: Option<ScanPlan>, reverse: bool) -> (Vec<Vec<u8>>, usize) {
    let (got, reads, _) = walk_asked(plan, reverse, false);
    (got, reads)
}

/// [`walk`], with the prefetches the table asked of the OS, over a table with a partitioned
/// index when `partitioned`.
fn walk_asked(
    plan: Option<ScanPlan>,
    reverse: bool,
    partitioned: bool,
) -> (Vec<Vec<u8>>, usize, Vec<(u64, usize)>) {
    let (t, reads, prefetched) = table(partitioned);
    let mut it = t.iter(ReadBlockOptions::default());
    if let Some(p) = &plan {
        it.plan_scan(p);
    }
    let before = reads.load(Ordering::Relaxed);
    let mut got = Vec::new();
    for (start, limit) in ranges() {
        if reverse {
            it.seek_for_prev(&lookup_key(&limit, SeqNo::MAX));
            while it.valid() && user_key(it.key()) >= &start[..] {
                got.push(user_key(it.key()).to_vec());
                it.prev();
            }
        } else {
            it.seek(&lookup_key(&start, SeqNo::MAX));
            while it.valid() && user_key(it.key()) < &limit[..] {
                got.push(user_key(it.key()).to_vec());
                it.next();
            }
        }
        it.status().unwrap();
    }
    let asked = prefetched.lock().unwrap().clone();
    (got, reads.load(Ordering::Relaxed) - before, asked)
}

fn plan(coalesce: u64, max_prefetch: u64, reverse: bool) -> ScanPlan {
    ScanPlan { ranges: ranges(), coalesce, max_prefetch, reverse, async_io: false }
}

#[test]
fn with_async_io_every_span_is_asked_of_the_os_at_once() {
    let (want, _) = walk(None, false);
    // No coalescing: ten spans, each asked for before the first read.
    let (got, reads, asked) =
        walk_asked(Some(ScanPlan { async_io: true, ..plan(0, 0, false) }), false, false);
    assert_eq!(got, want);
    assert_eq!(reads, 10);
    assert_eq!(asked.len(), 10, "{asked:?}");
    assert!(asked.windows(2).all(|w| w[0].0 + w[0].1 as u64 <= w[1].0), "{asked:?}");
    let (_, _, asked) = walk_asked(Some(plan(0, 0, false)), false, false);
    assert!(asked.is_empty(), "nothing asked without async_io: {asked:?}");
}

#[test]
fn planned_ranges_read_the_same_entries_in_fewer_reads() {
    for reverse in [false, true] {
        let (want, plain_reads) = walk(None, reverse);
        assert_eq!(want.len(), 20);
        // The ranges' blocks lie about 3 KB apart: a 16 KiB threshold joins them all.
        let (got, planned_reads) = walk(Some(plan(16 << 10, 0, reverse)), reverse);
        assert_eq!(got, want, "reverse {reverse}");
        assert_eq!(planned_reads, 1, "reverse {reverse}: one read for all ten ranges");
        assert!(plain_reads >= 10, "reverse {reverse}: {plain_reads} reads without a plan");
        // No coalescing: each range's blocks in one read.
        let (got, reads) = walk(Some(plan(0, 0, reverse)), reverse);
        assert_eq!(got, want);
        assert_eq!(reads, 10, "reverse {reverse}");
    }
}

#[test]
fn blocks_past_the_prefetch_limit_read_as_without_a_plan() {
    // About 90 bytes a block (compressed): 300 bytes plan the first three ranges' blocks.
    let (want, _) = walk(None, false);
    let (got, reads) = walk(Some(plan(16 << 10, 300, false)), false);
    assert_eq!(got, want);
    assert!(reads > 1 && reads <= 10, "{reads} reads");
}

#[test]
fn a_partitioned_index_plans_the_same_blocks() {
    for reverse in [false, true] {
        let (want, _, _) = walk_asked(None, reverse, true);
        assert_eq!(want.len(), 20);
        let (got, _, asked) =
            walk_asked(Some(ScanPlan { async_io: true, ..plan(0, 0, reverse) }), reverse, true);
        assert_eq!(got, want, "reverse {reverse}");
        // The ranges' blocks, as planned over an unpartitioned index of the same data.
        let (_, _, flat) =
            walk_asked(Some(ScanPlan { async_io: true, ..plan(0, 0, reverse) }), reverse, false);
        assert_eq!(asked.len(), flat.len(), "reverse {reverse}: {asked:?} against {flat:?}");
    }
}
