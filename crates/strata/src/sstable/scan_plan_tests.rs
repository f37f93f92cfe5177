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

/// A file that counts its reads.
struct Counted {
    inner: Arc<dyn RandomAccessFile>,
    reads: Arc<AtomicUsize>,
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
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A table of 2,000 keys in blocks of about four entries, opened through a counting file.
fn table() -> (Arc<TableReader>, Arc<AtomicUsize>) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let path = PathBuf::from("/db/000009.sst");
    let opts = TableOptions { block_size: 256, ..TableOptions::default() };
    let mut b = TableBuilder::new(&opts, fs.create(&path).unwrap(), path.clone());
    for i in 0..2000 {
        let ikey = make_internal_key(&key(i), SeqNo(i as u64 + 1), ValueType::Value);
        b.add(&ikey, format!("value-{i:06}-{}", "x".repeat(40)).as_bytes()).unwrap();
    }
    b.finish().unwrap();
    let reads = Arc::new(AtomicUsize::new(0));
    let file = Arc::new(Counted { inner: fs.open(&path).unwrap(), reads: reads.clone() });
    (Arc::new(TableReader::open(file, 1, None).unwrap()), reads)
}

/// Ten ranges of two keys, 38 keys (about ten blocks) apart: short enough that a scan
/// without a plan never reads ahead.
fn ranges() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..10).map(|r| (key(100 + 40 * r), key(102 + 40 * r))).collect()
}

/// Walks each range (each backward with `reverse`), returning the user keys met and the file
/// reads made.
fn walk(plan: Option<ScanPlan>, reverse: bool) -> (Vec<Vec<u8>>, usize) {
    let (t, reads) = table();
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
    (got, reads.load(Ordering::Relaxed) - before)
}

fn plan(coalesce: u64, max_prefetch: u64, reverse: bool) -> ScanPlan {
    ScanPlan { ranges: ranges(), coalesce, max_prefetch, reverse }
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
