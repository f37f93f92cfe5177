//! Whole-table tests: builder + reader on the in-memory filesystem.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::builder::{TableBuilder, TableOptions, TableSummary};
use super::compression::CompressionType;
use super::format::FOOTER_LEN;
use super::partitioned::IndexType;
use super::reader::{MetaBlockOptions, ReadBlockOptions, TableReader};
use crate::env::{FaultFs, FaultKind, FaultOp, FaultRule, FileSystem, MemFs};
use crate::error::Error;
use crate::iterator::conformance::{check_internal_iterator, sample_entries};
use crate::iterator::InternalIterator;
use crate::key::{compare_internal, lookup_key, make_internal_key, parse_internal_key, user_key};
use crate::sstable::{Cache, CacheAccess};
use crate::types::{SeqNo, ValueType};
use crate::util::checksum::ChecksumType;

type Model = Vec<(Vec<u8>, Vec<u8>)>;

const COMPRESSIONS: [CompressionType; 4] =
    [CompressionType::None, CompressionType::Snappy, CompressionType::Lz4, CompressionType::Zstd];

fn mem_fs() -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    (fs, PathBuf::from("/db/000007.sst"))
}

fn build(fs: &dyn FileSystem, path: &Path, opts: &TableOptions, model: &Model) -> TableSummary {
    let mut b = TableBuilder::new(opts, fs.create(path).unwrap(), path.to_path_buf());
    for (k, v) in model {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), model.len() as u64);
    b.finish().unwrap()
}

fn open(fs: &dyn FileSystem, path: &Path) -> Arc<TableReader> {
    Arc::new(TableReader::open(fs.open(path).unwrap(), 1, None).unwrap())
}

fn opts(block_size: usize, compression: CompressionType, checksum: ChecksumType) -> TableOptions {
    TableOptions { block_size, compression, checksum, ..TableOptions::default() }
}

/// Values that compress (repeated text), so compressed blocks are exercised.
fn compressible_model(n: usize, seed: u64) -> Model {
    sample_entries(n, seed)
        .into_iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let mut v = v;
            if i % 3 != 0 {
                v.extend_from_slice(format!("value-{:04}-", i % 10).repeat(4).as_bytes());
            }
            (k, v)
        })
        .collect()
}

/// The model entries of `user` visible at `seq`, newest first: what a DB get collects.
fn model_get(model: &Model, user: &[u8], seq: SeqNo) -> Model {
    model
        .iter()
        .filter(|(k, _)| {
            let p = parse_internal_key(k).unwrap();
            p.user_key == user && p.seq <= seq
        })
        .cloned()
        .collect()
}

fn table_get(t: &TableReader, user: &[u8], seq: SeqNo) -> crate::error::Result<Model> {
    if !t.may_contain(user)? {
        return Ok(Vec::new()); // as the DB does: the filter first
    }
    let lk = lookup_key(user, seq);
    let mut got = Vec::new();
    t.get(&lk, &ReadBlockOptions::default(), |k, v| {
        if user_key(k) != user {
            return false;
        }
        got.push((k.to_vec(), v.to_vec()));
        true
    })?;
    Ok(got)
}

#[test]
fn iterator_conformance_across_options() {
    for compression in COMPRESSIONS {
        for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
            for block_size in [64, 256, 4096] {
                for n in [0, 1, 3, 500] {
                    let (fs, path) = mem_fs();
                    let model = compressible_model(n, n as u64 + block_size as u64);
                    let o = opts(block_size, compression, checksum);
                    let s = build(&fs, &path, &o, &model);
                    assert_eq!(s.file_size, fs.file_size(&path).unwrap());
                    let t = open(&fs, &path);
                    let mut it = t.iter(ReadBlockOptions::default());
                    check_internal_iterator(&mut it, &model, n as u64 ^ 0x55);
                }
            }
        }
    }
}

#[test]
fn iterator_conformance_with_restart_intervals_and_no_filter() {
    for interval in [1, 16, 1024] {
        let (fs, path) = mem_fs();
        let model = sample_entries(700, interval as u64);
        let o = TableOptions {
            block_size: 512,
            block_restart_interval: interval,
            index_block_restart_interval: 4,
            bloom_bits_per_key: 0,
            ..TableOptions::default()
        };
        build(&fs, &path, &o, &model);
        let t = open(&fs, &path);
        check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 3);
        assert!(t.may_contain(b"anything").unwrap());
    }
}

/// Every block size from one byte up writes only non-empty data blocks: with a block size
/// below an empty block's own size the builder once cut an empty block before a table's first
/// entry, and indexed it under an empty key (a panic in a flush).
#[test]
fn tiny_block_sizes_write_only_non_empty_blocks() {
    for block_size in [1, 2, 3, 7, 16, 33, 100] {
        for interval in [1, 16, 1024] {
            for align in [false, true] {
                for index_type in [IndexType::BinarySearch, IndexType::TwoLevel] {
                    for deviation in [0, 10, 100] {
                        let (fs, path) = mem_fs();
                        let n = 40;
                        let model = compressible_model(n, block_size as u64 ^ interval as u64);
                        let o = TableOptions {
                            block_size,
                            block_size_deviation: deviation,
                            block_restart_interval: interval,
                            block_align: align,
                            index_type,
                            metadata_block_size: block_size,
                            partition_filters: index_type == IndexType::TwoLevel,
                            ..TableOptions::default()
                        };
                        let s = build(&fs, &path, &o, &model);
                        let blocks = s.properties.num_data_blocks;
                        assert!(
                            (1..=n as u64).contains(&blocks),
                            "block_size {block_size}, interval {interval}, align {align}, \
                             {index_type:?}: {blocks} data blocks for {n} entries"
                        );
                        let t = open(&fs, &path);
                        check_internal_iterator(
                            &mut t.iter(ReadBlockOptions::default()),
                            &model,
                            7,
                        );
                        for (k, _) in &model {
                            let user = user_key(k);
                            let want = model_get(&model, user, SeqNo::MAX);
                            assert_eq!(table_get(&t, user, SeqNo::MAX).unwrap(), want);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn empty_user_keys_and_large_values() {
    let mut model: Model = vec![
        (make_internal_key(b"", SeqNo(10), ValueType::Value), vec![7u8; 100 * 1024]),
        (make_internal_key(b"", SeqNo(4), ValueType::Merge), b"m".to_vec()),
        (make_internal_key(b"", SeqNo(2), ValueType::Deletion), vec![]),
        (make_internal_key(b"\x00", SeqNo(3), ValueType::Value), vec![]),
        (make_internal_key(b"big", SeqNo(5), ValueType::Value), vec![0xabu8; 300 * 1024]),
        (make_internal_key(b"\xff\xff", SeqNo(1), ValueType::Value), b"last".to_vec()),
    ];
    model.sort_by(|a, b| compare_internal(&a.0, &b.0));
    for compression in COMPRESSIONS {
        for block_size in [64, 4096] {
            let (fs, path) = mem_fs();
            build(&fs, &path, &opts(block_size, compression, ChecksumType::Crc32c), &model);
            let t = open(&fs, &path);
            check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 1);
            let got = table_get(&t, b"", SeqNo::MAX).unwrap();
            assert_eq!(got, model_get(&model, b"", SeqNo::MAX));
            let got = table_get(&t, b"big", SeqNo::MAX).unwrap();
            assert_eq!(got[0].1.len(), 300 * 1024);
        }
    }
}

#[test]
fn get_matches_the_model() {
    for (block_size, compression) in
        [(64, CompressionType::None), (256, CompressionType::Lz4), (4096, CompressionType::Snappy)]
    {
        let (fs, path) = mem_fs();
        let model = compressible_model(2000, 77);
        build(&fs, &path, &opts(block_size, compression, ChecksumType::Crc32c), &model);
        let t = open(&fs, &path);
        for (k, _) in &model {
            let p = parse_internal_key(k).unwrap();
            for seq in [SeqNo::MAX, p.seq, SeqNo(p.seq.0 - 1)] {
                let got = table_get(&t, p.user_key, seq).unwrap();
                assert_eq!(got, model_get(&model, p.user_key, seq), "{:?} @ {seq}", p.user_key);
            }
            assert!(t.may_contain(p.user_key).unwrap());
        }
        // Absent user keys: between, before and after the present ones.
        for i in 0..5000 {
            let user = format!("key{i:06}x").into_bytes();
            assert!(table_get(&t, &user, SeqNo::MAX).unwrap().is_empty());
        }
        assert!(table_get(&t, b"", SeqNo::MAX).unwrap().is_empty());
        assert!(table_get(&t, b"\xff\xff\xff", SeqNo::MAX).unwrap().is_empty());
        // `f` sees every following entry until it says stop.
        let first = &model[0].0;
        let mut seen = 0;
        t.get(first, &ReadBlockOptions::default(), |_, _| {
            seen += 1;
            true
        })
        .unwrap();
        assert_eq!(seen, model.len());
        assert!(t.get(b"short", &ReadBlockOptions::default(), |_, _| true).is_err());
    }
}

#[test]
fn table_bloom_filter_rejects_most_absent_keys() {
    let (fs, path) = mem_fs();
    let mut model = Model::new();
    for i in 0..20_000u32 {
        model.push((
            make_internal_key(format!("k{i:08}").as_bytes(), SeqNo(1), ValueType::Value),
            vec![],
        ));
    }
    build(&fs, &path, &TableOptions::default(), &model);
    let t = open(&fs, &path);
    let fp =
        (0..20_000u32).filter(|i| t.may_contain(format!("a{i:08}").as_bytes()).unwrap()).count();
    assert!(fp < 400, "{fp} false positives in 20000");
    // Repeated versions of one user key are added to the filter once.
    assert!(t.properties().filter_size > 0);
}

#[test]
fn properties_and_summary() {
    let (fs, path) = mem_fs();
    let model = sample_entries(1000, 4);
    let o = opts(1024, CompressionType::Zstd, ChecksumType::Xxh3);
    let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
    b.set_creation_time(1234);
    for (k, v) in &model {
        b.add(k, v).unwrap();
    }
    let s = b.finish().unwrap();
    let p = &s.properties;
    let count = |t: ValueType| {
        model.iter().filter(|(k, _)| parse_internal_key(k).unwrap().value_type == t).count() as u64
    };
    assert_eq!(s.num_entries, 1000);
    assert_eq!(p.num_entries, 1000);
    assert_eq!(p.num_deletions, count(ValueType::Deletion));
    assert_eq!(p.num_merge_operands, count(ValueType::Merge));
    assert_eq!(p.raw_key_size, model.iter().map(|(k, _)| k.len() as u64).sum::<u64>());
    assert_eq!(p.raw_value_size, model.iter().map(|(_, v)| v.len() as u64).sum::<u64>());
    assert_eq!(p.compression, CompressionType::Zstd);
    assert_eq!(p.creation_time, 1234);
    assert!(p.num_data_blocks > 1);
    assert!(p.data_size + p.index_size + p.filter_size < s.file_size);
    let seqs: Vec<u64> = model.iter().map(|(k, _)| parse_internal_key(k).unwrap().seq.0).collect();
    assert_eq!(s.smallest_seqno.0, *seqs.iter().min().unwrap());
    assert_eq!(s.largest_seqno.0, *seqs.iter().max().unwrap());
    assert_eq!(s.smallest, model[0].0);
    assert_eq!(s.largest, model[999].0);
    let t = open(&fs, &path);
    assert_eq!(t.properties(), p);
    assert_eq!(t.path(), path);
    assert_eq!(t.file_size(), s.file_size);
}

#[test]
fn empty_table_is_valid() {
    let (fs, path) = mem_fs();
    let s = build(&fs, &path, &TableOptions::default(), &Model::new());
    assert_eq!(s.num_entries, 0);
    assert!(s.smallest.is_empty() && s.largest.is_empty());
    let t = open(&fs, &path);
    assert_eq!(t.properties().num_entries, 0);
    assert!(table_get(&t, b"a", SeqNo::MAX).unwrap().is_empty());
    let mut it = t.iter(ReadBlockOptions::default());
    it.seek_to_first();
    assert!(!it.valid());
    it.status().unwrap();
    assert_eq!(t.approximate_offset_of(&lookup_key(b"a", SeqNo::MAX)), 0);
}

#[test]
fn approximate_offsets_grow_with_keys() {
    let (fs, path) = mem_fs();
    let model = compressible_model(3000, 8);
    let o = opts(1024, CompressionType::None, ChecksumType::Crc32c);
    let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
    let mut last_estimate = 0;
    for (k, v) in &model {
        b.add(k, v).unwrap();
        // Without compression the estimate only grows.
        assert!(b.estimated_file_size() >= last_estimate);
        last_estimate = b.estimated_file_size();
    }
    let s = b.finish().unwrap();
    assert!(last_estimate <= s.file_size);
    let t = open(&fs, &path);
    assert_eq!(t.approximate_offset_of(&model[0].0), 0);
    let mut last = 0;
    for (k, _) in model.iter().step_by(50) {
        let o = t.approximate_offset_of(k);
        assert!(o >= last);
        last = o;
    }
    let past = make_internal_key(b"\xff\xff\xff", SeqNo(1), ValueType::Value);
    assert_eq!(t.approximate_offset_of(&past), s.properties.data_size);
    assert!(s.properties.data_size > s.file_size / 2);
}

#[test]
fn block_cache_is_used_and_fill_cache_respected() {
    for cache in [Cache::new_lru(64 << 20), Cache::new_hyper_clock(64 << 20, 512).unwrap()] {
        block_cache_case(&cache);
    }
}

fn block_cache_case(cache: &Cache) {
    let (fs, path) = mem_fs();
    let model = compressible_model(2000, 9);
    let s = build(&fs, &path, &opts(512, CompressionType::Snappy, ChecksumType::Crc32c), &model);
    let access = CacheAccess::new(cache.clone());
    let t = Arc::new(TableReader::open(fs.open(&path).unwrap(), 42, Some(access)).unwrap());
    let no_fill = ReadBlockOptions { fill_cache: false, ..ReadBlockOptions::default() };
    check_internal_iterator(&mut t.iter(no_fill), &model, 1);
    assert_eq!(cache.usage(), 0);
    let mut it = t.iter(ReadBlockOptions::default());
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    assert!(cache.usage() > 0);
    let hits = cache.hits();
    check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 2);
    assert!(cache.hits() > hits);
    let misses = cache.misses();
    for (k, _) in model.iter().step_by(13) {
        let u = user_key(k);
        assert_eq!(table_get(&t, u, SeqNo::MAX).unwrap(), model_get(&model, u, SeqNo::MAX));
    }
    assert_eq!(cache.misses(), misses, "every block is cached");
    assert!(s.properties.num_data_blocks > 10);
    // A second table under another owner, same file id: its blocks are its own.
    let other = CacheAccess::new(cache.clone());
    let t2 = TableReader::open(fs.open(&path).unwrap(), 42, Some(other)).unwrap();
    let misses = cache.misses();
    let first = user_key(&model[0].0);
    assert_eq!(table_get(&t2, first, SeqNo::MAX).unwrap(), model_get(&model, first, SeqNo::MAX));
    assert!(cache.misses() > misses, "owners do not share blocks");
}

/// Opens, scans and probes a possibly damaged table. Every outcome is either exactly the model's
/// data or a corruption error naming the file; never a panic or a wrong entry.
fn check_damaged(fs: &MemFs, path: &Path, model: &Model, verify: bool, what: &str) {
    check_damaged_with(fs, path, model, verify, what, None, MetaBlockOptions::default());
}

/// [`check_damaged`] with the reader's index and filter placed as `meta` says.
fn check_damaged_with(
    fs: &MemFs,
    path: &Path,
    model: &Model,
    verify: bool,
    what: &str,
    cache: Option<&Cache>,
    meta: MetaBlockOptions,
) {
    let path_str = path.display().to_string();
    let check_err = |e: &Error| {
        assert!(e.is_corruption(), "{what}: not corruption: {e}");
        assert!(e.to_string().contains(&path_str), "{what}: no path: {e}");
    };
    let access = cache.map(|c| CacheAccess::new(c.clone()));
    let t = match TableReader::open_with(fs.open(path).unwrap(), 1, access, meta) {
        Ok(t) => Arc::new(t),
        Err(e) => return check_err(&e),
    };
    let read = ReadBlockOptions { verify_checksums: verify, ..ReadBlockOptions::default() };
    let mut it = t.iter(read);
    it.seek_to_first();
    let mut i = 0;
    while it.valid() {
        if verify {
            assert!(i < model.len(), "{what}: extra entry");
            assert_eq!(it.key(), model[i].0.as_slice(), "{what}: key {i}");
            assert_eq!(it.value(), model[i].1.as_slice(), "{what}: value {i}");
        }
        i += 1;
        if i > model.len() * 2 {
            break;
        }
        it.next();
    }
    match it.status() {
        Ok(()) => {
            if verify {
                assert_eq!(i, model.len(), "{what}: scan ended early without error");
            }
        }
        Err(e) => check_err(&e),
    }
    it.seek_to_last();
    let mut steps = 0;
    while it.valid() && steps < model.len() * 2 {
        it.prev();
        steps += 1;
    }
    if let Err(e) = it.status() {
        check_err(&e);
    }
    for (k, _) in model.iter().step_by(3) {
        let u = user_key(k);
        match table_get(&t, u, SeqNo::MAX) {
            Ok(got) => {
                if verify {
                    assert_eq!(got, model_get(model, u, SeqNo::MAX), "{what}: get {u:?}");
                }
            }
            Err(e) => check_err(&e),
        }
        it.seek(k);
        if let Err(e) = it.status() {
            check_err(&e);
        } else if verify {
            assert!(it.valid() && it.key() == k.as_slice(), "{what}: seek");
        }
    }
}

#[test]
fn every_flipped_byte_is_detected_or_harmless() {
    for (compression, checksum) in [
        (CompressionType::None, ChecksumType::Crc32c),
        (CompressionType::Snappy, ChecksumType::Xxh3),
        (CompressionType::Lz4, ChecksumType::Xxh3),
        (CompressionType::Zstd, ChecksumType::Crc32c),
    ] {
        let (fs, path) = mem_fs();
        let model = compressible_model(40, 3);
        build(&fs, &path, &opts(200, compression, checksum), &model);
        let good = fs.read_file(&path).unwrap();
        for i in 0..good.len() {
            for x in [0xffu8, 0x01] {
                let mut d = good.clone();
                d[i] ^= x;
                fs.write_file(&path, &d);
                check_damaged(
                    &fs,
                    &path,
                    &model,
                    true,
                    &format!("{compression:?} byte {i} ^{x:#x}"),
                );
            }
        }
        // Zeroed runs, as a lost sector or a hole would leave.
        for start in (0..good.len()).step_by(5) {
            let mut d = good.clone();
            let end = (start + 16).min(d.len());
            d[start..end].fill(0);
            if d != good {
                fs.write_file(&path, &d);
                check_damaged(
                    &fs,
                    &path,
                    &model,
                    true,
                    &format!("{compression:?} zeros at {start}"),
                );
            }
        }
    }
}

#[test]
fn flipped_bytes_without_checksums_never_panic() {
    let (fs, path) = mem_fs();
    let model = compressible_model(40, 5);
    build(&fs, &path, &opts(200, CompressionType::Lz4, ChecksumType::Crc32c), &model);
    let good = fs.read_file(&path).unwrap();
    for i in 0..good.len() {
        for x in [0xffu8, 0x04] {
            let mut d = good.clone();
            d[i] ^= x;
            fs.write_file(&path, &d);
            check_damaged(&fs, &path, &model, false, &format!("byte {i} ^{x:#x}"));
        }
    }
}

#[test]
fn truncated_and_foreign_files_are_corruption() {
    let (fs, path) = mem_fs();
    let model = compressible_model(100, 6);
    build(&fs, &path, &TableOptions::default(), &model);
    let good = fs.read_file(&path).unwrap();
    let n = good.len();
    for len in [0, 1, 10, FOOTER_LEN - 1, FOOTER_LEN, FOOTER_LEN + 1, n / 2, n - FOOTER_LEN, n - 1]
    {
        fs.write_file(&path, &good[..len]);
        let e = TableReader::open(fs.open(&path).unwrap(), 1, None).unwrap_err();
        assert!(e.is_corruption(), "len {len}: {e}");
        assert!(e.to_string().contains("000007.sst"), "len {len}: {e}");
    }
    let text = "This is not a table. It is a plain text file with a few lines.\n".repeat(20);
    fs.write_file(&path, text.as_bytes());
    let e = TableReader::open(fs.open(&path).unwrap(), 1, None).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("/db/000007.sst"), "{e}");
    assert!(e.to_string().contains("magic"), "{e}");
}

/// Builds `model` with `o` on a file system whose `nth` append fails: `add` reports the
/// failure as an I/O error, and every later call fails too. Returns the file system and the
/// table's path.
fn check_append_failure_is_sticky(o: &TableOptions, model: &Model, nth: u64) -> (FaultFs, PathBuf) {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).unwrap();
    let fs = FaultFs::new(Arc::new(mem), 1);
    let path = PathBuf::from("/db/000009.sst");
    fs.add_rule(FaultRule {
        op: FaultOp::Append,
        kind: FaultKind::Eio,
        nth,
        persistent: false,
        path_contains: None,
    });
    let mut b = TableBuilder::new(o, fs.create(&path).unwrap(), path.clone());
    let mut failed = None;
    for (k, v) in model {
        if let Err(e) = b.add(k, v) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("an append failed");
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(b.add(&model[model.len() - 1].0, b"").is_err(), "errors are sticky");
    assert!(b.finish().is_err());
    (fs, path)
}

#[test]
fn write_failures_are_reported_and_sticky() {
    let model = sample_entries(500, 2);
    let o = opts(128, CompressionType::None, ChecksumType::Crc32c);
    let (fs, path) = check_append_failure_is_sticky(&o, &model, 2);

    // A failed sync fails `finish`.
    fs.clear();
    fs.add_rule(FaultRule {
        op: FaultOp::Sync,
        kind: FaultKind::Eio,
        nth: 1,
        persistent: false,
        path_contains: None,
    });
    let mut b =
        TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path.clone());
    b.add(&model[0].0, b"v").unwrap();
    assert!(b.finish().is_err());
}

#[test]
fn read_errors_are_returned_not_hidden() {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).unwrap();
    let fs = FaultFs::new(Arc::new(mem), 1);
    let path = PathBuf::from("/db/000011.sst");
    let model = sample_entries(300, 2);
    build(&fs, &path, &opts(128, CompressionType::None, ChecksumType::Crc32c), &model);
    let t = open(&fs, &path);
    fs.add_rule(FaultRule {
        op: FaultOp::Read,
        kind: FaultKind::Eio,
        nth: 3,
        persistent: false,
        path_contains: None,
    });
    let mut it = t.iter(ReadBlockOptions::default());
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert!(n < model.len());
    assert!(it.status().is_err());
    // The error stays until the next seek, which then works again.
    assert!(!it.valid());
    it.seek_to_first();
    assert!(it.valid());
    it.status().unwrap();
}

#[test]
fn invalid_keys_are_rejected_by_the_builder() {
    let (fs, path) = mem_fs();
    let mut b =
        TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path.clone());
    assert!(matches!(b.add(b"short", b""), Err(Error::InvalidArgument(_))));
    let mut bad_type = make_internal_key(b"k", SeqNo(1), ValueType::Value);
    let n = bad_type.len();
    bad_type[n - 8] = 99;
    assert!(matches!(b.add(&bad_type, b""), Err(Error::InvalidArgument(_))));
    b.add(&make_internal_key(b"k", SeqNo(1), ValueType::Value), b"v").unwrap();
    assert_eq!(b.finish().unwrap().num_entries, 1);
}

#[cfg(feature = "invariants")]
#[test]
fn out_of_order_keys_are_rejected_under_invariants() {
    let (fs, path) = mem_fs();
    let mut b =
        TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path.clone());
    b.add(&make_internal_key(b"b", SeqNo(1), ValueType::Value), b"").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.add(&make_internal_key(b"a", SeqNo(1), ValueType::Value), b"")
    }));
    assert!(r.is_err() || r.unwrap().is_err());
}

#[test]
fn iterators_and_readers_are_shareable() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_send<T: Send + 'static>() {}
    assert_send_sync::<TableReader>();
    assert_send::<super::reader::TableIterator>();
    assert_send::<super::block::BlockIter>();
}

mod range_tombstones {
    use super::*;
    use crate::key::{is_exclusive_bound, range_end_bound};
    use crate::range_del::RangeTombstone;

    fn t(s: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone::new(s.as_bytes(), e.as_bytes(), SeqNo(seq))
    }

    #[test]
    fn roundtrip_with_points_and_bounds() {
        let (fs, path) = mem_fs();
        let o = opts(256, CompressionType::Snappy, ChecksumType::Crc32c);
        let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
        b.add_range_tombstone(&t("m", "q", 30));
        for (i, k) in ["c", "d", "n"].iter().enumerate() {
            b.add(&make_internal_key(k.as_bytes(), SeqNo(10 + i as u64), ValueType::Value), b"v")
                .unwrap();
        }
        b.add_range_tombstone(&t("a", "e", 5));
        b.add_range_tombstone(&t("x", "x", 99)); // empty: ignored
        b.add_range_tombstone(&t("p", "z", 40));
        let s = b.finish().unwrap();
        assert_eq!(s.num_entries, 3);
        assert_eq!(s.properties.num_range_deletions, 3);
        assert_eq!(s.smallest, make_internal_key(b"a", SeqNo(5), ValueType::RangeDeletion));
        assert_eq!(s.largest, range_end_bound(b"z"));
        assert!(is_exclusive_bound(&s.largest));
        assert_eq!((s.smallest_seqno, s.largest_seqno), (SeqNo(5), SeqNo(40)));

        let r = open(&fs, &path);
        assert_eq!(r.range_tombstones(), &[t("a", "e", 5), t("m", "q", 30), t("p", "z", 40)]);
        assert_eq!(r.properties().num_range_deletions, 3);
        let f = r.fragmented_range_tombstones().unwrap();
        assert_eq!(f.max_covering_seq(b"d", SeqNo::MAX), SeqNo(5));
        assert_eq!(f.max_covering_seq(b"p", SeqNo::MAX), SeqNo(40));
        assert_eq!(f.max_covering_seq(b"p", SeqNo(35)), SeqNo(30));
        assert_eq!(f.max_covering_seq(b"z", SeqNo::MAX), SeqNo::ZERO);
        // Point entries are unaffected: tombstones are not in the data blocks.
        let mut it = r.iter(ReadBlockOptions::default());
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(parse_internal_key(it.key()).unwrap().value_type, ValueType::Value);
            n += 1;
            it.next();
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn table_with_only_tombstones() {
        let (fs, path) = mem_fs();
        let o = TableOptions::default();
        let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
        b.add_range_tombstone(&t("k", "m", 7));
        let s = b.finish().unwrap();
        assert_eq!(s.num_entries, 0);
        assert_eq!(s.smallest, make_internal_key(b"k", SeqNo(7), ValueType::RangeDeletion));
        assert_eq!(s.largest, range_end_bound(b"m"));
        assert_eq!((s.smallest_seqno, s.largest_seqno), (SeqNo(7), SeqNo(7)));
        let r = open(&fs, &path);
        assert_eq!(r.range_tombstones(), &[t("k", "m", 7)]);
        let mut it = r.iter(ReadBlockOptions::default());
        it.seek_to_first();
        assert!(!it.valid());
        it.status().unwrap();
        assert!(table_get(&r, b"l", SeqNo::MAX).unwrap().is_empty());
        // A table without tombstones has no block and no fragments.
        let (fs2, path2) = mem_fs();
        build(&fs2, &path2, &o, &sample_entries(10, 3));
        assert!(open(&fs2, &path2).fragmented_range_tombstones().is_none());
    }

    #[test]
    fn damaged_rangedel_block_is_corruption() {
        let (fs, path) = mem_fs();
        let o = TableOptions { bloom_bits_per_key: 0, ..TableOptions::default() };
        let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
        b.add_range_tombstone(&t("k", "m", 7));
        b.finish().unwrap();
        let data = fs.open(&path).unwrap();
        let bytes = data.read_exact_at(0, data.len() as usize).unwrap();
        // The rangedel block is the first block of this table (no data, no filter).
        for i in 0..6 {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            let p2 = PathBuf::from(format!("/db/00010{i}.sst"));
            let mut f = fs.create(&p2).unwrap();
            f.append(&bad).unwrap();
            f.sync().unwrap();
            let e = TableReader::open(fs.open(&p2).unwrap(), 2, None).unwrap_err();
            assert!(e.is_corruption() || matches!(e, Error::ChecksumMismatch { .. }), "{e}");
        }
    }
}

/// Table options with a partitioned index of small partitions (and, if asked, filters).
fn partitioned(block_size: usize, metadata_block_size: usize, filters: bool) -> TableOptions {
    TableOptions {
        block_size,
        index_type: IndexType::TwoLevel,
        partition_filters: filters,
        metadata_block_size,
        ..TableOptions::default()
    }
}

/// Every placement of index and filter blocks a reader can be opened with, and the cache
/// it is given.
fn meta_placements() -> Vec<(Option<Cache>, MetaBlockOptions)> {
    let cached = MetaBlockOptions { cache_index_and_filter_blocks: true, ..Default::default() };
    vec![
        (None, MetaBlockOptions::default()),
        (Some(Cache::new_lru(1 << 20)), MetaBlockOptions::default()),
        (Some(Cache::new_lru(1 << 20)), cached),
        (Some(Cache::new_lru(1 << 20)), MetaBlockOptions { pin_top_level: false, ..cached }),
        (Some(Cache::new_lru(1 << 20)), MetaBlockOptions { pin: true, ..cached }),
        // A cache too small for anything: every metadata block is read again on each use.
        (Some(Cache::new_lru(64)), MetaBlockOptions { pin_top_level: false, ..cached }),
    ]
}

#[test]
fn partitioned_tables_read_as_the_model_and_as_unpartitioned_tables() {
    for compression in [CompressionType::None, CompressionType::Snappy] {
        for (block_size, mbs) in [(64, 32), (256, 128), (512, 4096)] {
            for filters in [false, true] {
                for n in [0, 1, 7, 900] {
                    let (fs, path) = mem_fs();
                    let plain_path = PathBuf::from("/db/000008.sst");
                    let model = compressible_model(n, (n + block_size) as u64);
                    let o = TableOptions { compression, ..partitioned(block_size, mbs, filters) };
                    let s = build(&fs, &path, &o, &model);
                    // Version 1, whose separators are internal keys as the partitions' are.
                    let plain = TableOptions {
                        block_size,
                        compression,
                        user_key_index: false,
                        ..TableOptions::default()
                    };
                    let sp = build(&fs, &plain_path, &plain, &model);
                    let what =
                        format!("{compression:?} bs {block_size} mbs {mbs} f {filters} n {n}");
                    assert_eq!(
                        s.properties.num_data_blocks, sp.properties.num_data_blocks,
                        "{what}"
                    );
                    assert_eq!(s.properties.data_size, sp.properties.data_size, "{what}");
                    let p = open(&fs, &plain_path);
                    for (cache, meta) in meta_placements() {
                        let access = cache.as_ref().map(|c| CacheAccess::new(c.clone()));
                        let t = Arc::new(
                            TableReader::open_with(fs.open(&path).unwrap(), 1, access, meta)
                                .unwrap(),
                        );
                        let what = format!("{what} {meta:?}");
                        check_internal_iterator(
                            &mut t.iter(ReadBlockOptions::default()),
                            &model,
                            7,
                        );
                        let seps: Vec<_> =
                            t.data_blocks().unwrap().into_iter().map(|(k, _)| k).collect();
                        let plain_seps: Vec<_> =
                            p.data_blocks().unwrap().into_iter().map(|(k, _)| k).collect();
                        assert_eq!(seps, plain_seps, "{what}");
                        for (i, (k, _)) in model.iter().enumerate().step_by(5) {
                            let u = user_key(k);
                            let seq = parse_internal_key(k).unwrap().seq;
                            for at in [SeqNo::MAX, seq] {
                                let want = model_get(&model, u, at);
                                assert_eq!(table_get(&t, u, at).unwrap(), want, "{what} {i}");
                                assert_eq!(table_get(&p, u, at).unwrap(), want, "{what} {i}");
                            }
                            assert_eq!(
                                t.approximate_offset_of(k),
                                p.approximate_offset_of(k),
                                "{what} {i}"
                            );
                        }
                        for absent in [&b""[..], b"zzzz", b"\xff\xff\xff"] {
                            assert_eq!(table_get(&t, absent, SeqNo::MAX).unwrap(), vec![]);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn partitioned_filters_reject_absent_keys_and_keep_straddling_user_keys() {
    // Many versions of few user keys, so user keys straddle data blocks and partitions.
    let mut model: Model = Vec::new();
    for u in 0..300u32 {
        for seq in (1..=6u64).rev() {
            let k =
                make_internal_key(format!("key{u:06}").as_bytes(), SeqNo(seq), ValueType::Value);
            model.push((k, format!("v{u}-{seq}").into_bytes()));
        }
    }
    let (fs, path) = mem_fs();
    build(&fs, &path, &partitioned(64, 48, true), &model);
    let t = open(&fs, &path);
    for u in 0..300u32 {
        let k = format!("key{u:06}");
        assert!(t.may_contain(k.as_bytes()).unwrap(), "{k}");
        for seq in 1..=6u64 {
            let want = model_get(&model, k.as_bytes(), SeqNo(seq));
            assert_eq!(table_get(&t, k.as_bytes(), SeqNo(seq)).unwrap(), want, "{k}@{seq}");
        }
    }
    let fp =
        (0..5000u32).filter(|i| t.may_contain(format!("nokey{i}").as_bytes()).unwrap()).count();
    assert!(fp < 250, "{fp} false positives of 5000");
}

fn format_version(fs: &MemFs, path: &Path) -> u32 {
    let bytes = fs.read_file(path).unwrap();
    let at = (bytes.len() - FOOTER_LEN) as u64;
    super::format::Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], at).unwrap().version
}

/// One entry per user key: every block boundary falls between two user keys.
fn one_version_per_key(n: usize, seed: u64) -> Model {
    let mut m = compressible_model(n, seed);
    m.dedup_by(|a, b| user_key(&a.0) == user_key(&b.0));
    m
}

#[test]
fn table_format_versions() {
    use super::format::{
        FORMAT_VERSION, FORMAT_VERSION_PARTITIONED, FORMAT_VERSION_USER_KEY_INDEX,
    };
    let distinct = one_version_per_key(200, 4);
    // Forty versions of one key: with 64-byte blocks it spans a block boundary.
    let spanning: Model = (1..=40u64)
        .rev()
        .map(|s| (make_internal_key(b"k", SeqNo(s), ValueType::Value), vec![7; 20]))
        .collect();
    let small = TableOptions { block_size: 64, ..TableOptions::default() };
    for (o, model, version) in [
        (TableOptions::default(), &distinct, FORMAT_VERSION_USER_KEY_INDEX),
        (small.clone(), &distinct, FORMAT_VERSION_USER_KEY_INDEX),
        (small.clone(), &spanning, FORMAT_VERSION),
        (TableOptions { user_key_index: false, ..small }, &distinct, FORMAT_VERSION),
        (
            TableOptions { block_align: true, ..TableOptions::default() },
            &distinct,
            FORMAT_VERSION_USER_KEY_INDEX,
        ),
        (partitioned(256, 128, true), &distinct, FORMAT_VERSION_PARTITIONED),
    ] {
        let (fs, path) = mem_fs();
        build(&fs, &path, &o, model);
        assert_eq!(format_version(&fs, &path), version, "{o:?}");
        let t = open(&fs, &path);
        check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), model, 3);
    }
}

/// A version-3 table (user-key index) reads as the same data in a version-1 table: every
/// iterator move, point lookups at several sequence numbers, offsets, block handles, and
/// with the index held, cached or pinned; its index takes less memory.
#[test]
fn user_key_index_tables_read_as_version_1_tables() {
    use super::format::{FORMAT_VERSION, FORMAT_VERSION_USER_KEY_INDEX};
    for block_size in [64, 256, 4096] {
        for n in [0, 1, 50, 600] {
            let model = one_version_per_key(n, (n + block_size) as u64);
            let what = format!("bs {block_size} n {n}");
            let (fs, path) = mem_fs();
            let v1_path = PathBuf::from("/db/000008.sst");
            let o = TableOptions { block_size, ..TableOptions::default() };
            build(&fs, &path, &o, &model);
            build(&fs, &v1_path, &TableOptions { user_key_index: false, ..o }, &model);
            assert_eq!(format_version(&fs, &path), FORMAT_VERSION_USER_KEY_INDEX, "{what}");
            assert_eq!(format_version(&fs, &v1_path), FORMAT_VERSION, "{what}");
            let v1 = open(&fs, &v1_path);
            for (cache, meta) in meta_placements() {
                let access = cache.as_ref().map(|c| CacheAccess::new(c.clone()));
                let t = Arc::new(
                    TableReader::open_with(fs.open(&path).unwrap(), 1, access, meta).unwrap(),
                );
                let what = format!("{what} {meta:?}");
                check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 11);
                let handles = |r: &Arc<TableReader>| -> Vec<_> {
                    r.data_blocks().unwrap().into_iter().map(|(_, h)| h).collect()
                };
                assert_eq!(handles(&t), handles(&v1), "{what}");
                for (k, _) in &model {
                    let u = user_key(k);
                    let seq = parse_internal_key(k).unwrap().seq;
                    for at in [SeqNo::MAX, seq, SeqNo(seq.0.saturating_sub(1))] {
                        let want = model_get(&model, u, at);
                        assert_eq!(table_get(&t, u, at).unwrap(), want, "{what} {u:?}@{at:?}");
                    }
                    assert_eq!(t.approximate_offset_of(k), v1.approximate_offset_of(k), "{what}");
                }
                for probe in [&b""[..], b"key", b"key000000", b"zzz"] {
                    let ik = lookup_key(probe, SeqNo::MAX);
                    assert_eq!(t.approximate_offset_of(&ik), v1.approximate_offset_of(&ik));
                }
            }
            if n >= 50 {
                assert!(open(&fs, &path).memory_usage() < v1.memory_usage(), "{what}");
            }
        }
    }
}

#[test]
fn every_flipped_byte_of_a_partitioned_table_is_detected_or_harmless() {
    let model = compressible_model(40, 3);
    for filters in [false, true] {
        let (fs, path) = mem_fs();
        build(
            &fs,
            &path,
            &TableOptions { compression: CompressionType::Snappy, ..partitioned(128, 40, filters) },
            &model,
        );
        let good = fs.read_file(&path).unwrap();
        for i in 0..good.len() {
            let mut d = good.clone();
            d[i] ^= 0x20;
            fs.write_file(&path, &d);
            for (cache, meta) in meta_placements() {
                let what = format!("filters {filters} byte {i} {meta:?}");
                check_damaged_with(&fs, &path, &model, true, &what, cache.as_ref(), meta);
            }
        }
    }
}

#[test]
fn a_damaged_partition_is_an_error_naming_file_and_offset() {
    let model = compressible_model(600, 8);
    let (fs, path) = mem_fs();
    build(&fs, &path, &partitioned(128, 64, true), &model);
    let good = fs.read_file(&path).unwrap();
    let t = open(&fs, &path);
    // The second index partition: a partition other than the first block the top level names.
    let top = t.index_block().unwrap();
    let mut it = top.iter();
    it.seek_to_first();
    it.next();
    assert!(it.valid(), "the table has at least two partitions");
    let (ih, fh) = super::partitioned::decode_top_entry(it.value()).unwrap();
    let fh = fh.unwrap();
    for (h, kind) in [(ih, "index"), (fh, "filter")] {
        let mut d = good.clone();
        d[h.offset as usize + 1] ^= 0x40;
        fs.write_file(&path, &d);
        let cache = Cache::new_lru(1 << 20);
        let meta = MetaBlockOptions { cache_index_and_filter_blocks: true, ..Default::default() };
        let t = Arc::new(
            TableReader::open_with(fs.open(&path).unwrap(), 1, Some(CacheAccess::new(cache)), meta)
                .unwrap(),
        );
        let mut found = None;
        for (k, _) in &model {
            let r = if kind == "filter" {
                t.may_contain(user_key(k)).map(|_| ())
            } else {
                table_get(&t, user_key(k), SeqNo::MAX).map(|_| ())
            };
            if let Err(e) = r {
                found = Some(e);
                break;
            }
        }
        let e = found.unwrap_or_else(|| panic!("no read saw the damaged {kind} partition"));
        let msg = e.to_string();
        assert!(msg.contains("000007.sst"), "{kind}: {msg}");
        assert!(msg.contains(&format!("offset {}", h.offset)), "{kind}: {msg}");
        let mut scan = t.iter(ReadBlockOptions::default());
        scan.seek_to_first();
        while scan.valid() {
            scan.next();
        }
        if kind == "index" {
            let e = scan.status().unwrap_err();
            assert!(e.to_string().contains(&format!("offset {}", h.offset)), "{kind}: {e}");
        }
    }
}

#[test]
fn cached_index_and_filter_blocks_are_charged_and_not_held() {
    let model = compressible_model(3000, 12);
    for o in
        [TableOptions { block_size: 256, ..TableOptions::default() }, partitioned(256, 256, true)]
    {
        let (fs, path) = mem_fs();
        build(&fs, &path, &o, &model);
        let held = open(&fs, &path);
        let cache = Cache::new_lru(16 << 20);
        let meta = MetaBlockOptions {
            cache_index_and_filter_blocks: true,
            pin_top_level: false,
            ..Default::default()
        };
        let t = Arc::new(
            TableReader::open_with(
                fs.open(&path).unwrap(),
                1,
                Some(CacheAccess::new(cache.clone())),
                meta,
            )
            .unwrap(),
        );
        let what = format!("{:?}", o.index_type);
        // Open verified the index and filter (or top level) through the cache.
        let after_open = cache.usage();
        assert!(after_open > 0, "{what}");
        assert!(
            t.memory_usage() < held.memory_usage(),
            "{what}: {} vs {}",
            t.memory_usage(),
            held.memory_usage()
        );
        assert_eq!(t.pinned_usage(), 0);
        for (k, _) in model.iter().step_by(7) {
            let u = user_key(k);
            assert_eq!(table_get(&t, u, SeqNo::MAX).unwrap(), model_get(&model, u, SeqNo::MAX));
        }
        assert!(cache.usage() > after_open, "{what}");
        // Pinned: held and charged.
        let cache = Cache::new_lru(16 << 20);
        let pinned = MetaBlockOptions { pin: true, ..meta };
        let t = TableReader::open_with(
            fs.open(&path).unwrap(),
            1,
            Some(CacheAccess::new(cache.clone())),
            pinned,
        )
        .unwrap();
        assert!(t.pinned_usage() > 0, "{what}");
        assert!(cache.usage() >= t.pinned_usage(), "{what}");
    }
}

#[test]
fn block_align_keeps_every_data_block_inside_one_unit() {
    use proptest::prelude::*;
    let config = ProptestConfig { cases: 48, ..ProptestConfig::default() };
    proptest!(config, |(
        sizes in proptest::collection::vec((1usize..40, 0usize..700), 1..400),
        align_pow in 9u32..13,
        compressed in any::<bool>(),
        partitioned_index in any::<bool>(),
    )| {
        let block_size = 1usize << align_pow;
        let model: Model = sizes
            .iter()
            .enumerate()
            .map(|(i, &(kl, vl))| {
                let mut u = format!("{i:08}").into_bytes();
                u.resize(8 + kl, b'k');
                let v = (0..vl).map(|j| (j * 7 + i) as u8).collect();
                (make_internal_key(&u, SeqNo(1), ValueType::Value), v)
            })
            .collect();
        let (fs, path) = mem_fs();
        let o = TableOptions {
            block_size,
            block_align: true,
            compression: if compressed { CompressionType::Snappy } else { CompressionType::None },
            index_type: if partitioned_index { IndexType::TwoLevel } else { IndexType::BinarySearch },
            metadata_block_size: 256,
            ..TableOptions::default()
        };
        let s = build(&fs, &path, &o, &model);
        let t = open(&fs, &path);
        let unit = block_size as u64;
        for (_, h) in t.data_blocks().unwrap() {
            let end = h.end_with_trailer().unwrap();
            if end - h.offset <= unit {
                prop_assert_eq!(h.offset / unit, (end - 1) / unit, "block {:?} straddles", h);
            } else {
                prop_assert_eq!(h.offset % unit, 0, "large block {:?} is not aligned", h);
            }
            prop_assert!(end <= s.properties.data_size);
        }
        check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 5);
    });
}

/// An external table (distinct user keys at seqno 0) read with a global seqno: the iterator
/// conforms to the mapped model, seeks honour the mapped order at sequence numbers below,
/// at and above the global one, and `get` sees the entry only at or above it.
#[test]
fn global_seqno_maps_entries_seeks_and_gets() {
    const G: SeqNo = SeqNo(1000);
    let types = [ValueType::Value, ValueType::Merge, ValueType::Deletion];
    let stored: Model = (0..300u32)
        .map(|i| {
            let k = make_internal_key(
                format!("k{i:04}").as_bytes(),
                SeqNo::ZERO,
                types[i as usize % 3],
            );
            (k, format!("v{i}").into_bytes())
        })
        .collect();
    let mapped: Model = stored
        .iter()
        .map(|(k, v)| {
            let p = parse_internal_key(k).unwrap();
            (make_internal_key(p.user_key, G, p.value_type), v.clone())
        })
        .collect();
    for block_size in [64, 4096] {
        let (fs, path) = mem_fs();
        build(&fs, &path, &opts(block_size, CompressionType::None, ChecksumType::Crc32c), &stored);
        let mut reader = TableReader::open(fs.open(&path).unwrap(), 1, None).unwrap();
        reader.set_global_seqno(G).unwrap();
        let t = Arc::new(reader);
        let mut it = t.iter(ReadBlockOptions::default());
        check_internal_iterator(&mut it, &mapped, block_size as u64);
        for (i, (k, _)) in mapped.iter().enumerate() {
            let user = user_key(k);
            // At or above G the entry is found; below, the seek passes it.
            for (seq, hit) in [(G, true), (SeqNo(G.0 + 1), true), (SeqNo(G.0 - 1), false)] {
                it.seek(&lookup_key(user, seq));
                let want = if hit { Some(k) } else { mapped.get(i + 1).map(|e| &e.0) };
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()).as_ref(),
                    want,
                    "seek {i} @{}",
                    seq.0
                );
                assert_eq!(table_get(&t, user, seq).unwrap().len(), usize::from(hit), "get {i}");
                // Backward: the entry is at or before (user, s) exactly when G >= s.
                it.seek_for_prev(&lookup_key(user, seq));
                let want = if seq <= G { Some(k) } else { i.checked_sub(1).map(|j| &mapped[j].0) };
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()).as_ref(),
                    want,
                    "seek_for_prev {i} @{}",
                    seq.0
                );
            }
        }
    }
    // A table written by the DB (entries above 0) cannot take a global seqno.
    let (fs, path) = mem_fs();
    build(&fs, &path, &TableOptions::default(), &sample_entries(10, 3));
    let mut reader = TableReader::open(fs.open(&path).unwrap(), 1, None).unwrap();
    assert!(reader.set_global_seqno(G).unwrap_err().is_corruption());
}

/// Index blocks at Strata's default restart interval (8) keep an index about a third smaller
/// in memory than at 1 for db_bench-shaped keys (8-byte big-endian numbers padded to 20 bytes),
/// and every key is still found by a point read and by a seek.
#[test]
fn prefix_compressed_index_blocks_are_smaller_and_find_every_key() {
    let model: Model = (0..20_000u64)
        .map(|i| {
            let mut k = (i * 7).to_be_bytes().to_vec();
            k.resize(20, b'0');
            (make_internal_key(&k, SeqNo(i + 1), ValueType::Value), vec![b'v'; 100])
        })
        .collect();
    let mut sizes = Vec::new();
    for interval in [1, TableOptions::default().index_block_restart_interval] {
        let (fs, path) = mem_fs();
        let o = TableOptions {
            index_block_restart_interval: interval,
            bloom_bits_per_key: 0,
            ..TableOptions::default()
        };
        build(&fs, &path, &o, &model);
        let t = open(&fs, &path);
        sizes.push(t.memory_usage());
        for (ik, _) in model.iter().step_by(7) {
            let user = user_key(ik);
            assert_eq!(
                table_get(&t, user, SeqNo::MAX).unwrap(),
                model_get(&model, user, SeqNo::MAX)
            );
        }
        check_internal_iterator(&mut t.iter(ReadBlockOptions::default()), &model, 11);
    }
    assert_eq!(TableOptions::default().index_block_restart_interval, 8);
    assert!(sizes[1] * 4 < sizes[0] * 3, "index memory at 1 and at 8: {sizes:?}");
}

/// Data blocks stay near `block_size`: with the default deviation (10%) a block that is 90%
/// full is cut before an entry that would take it past `block_size`, so uncompressed blocks of
/// 430-byte entries hold 9 of them (at most 4 KiB) instead of 10 (past 4 KiB). With 0 a block
/// is cut only once it reaches `block_size`. Every key is found either way.
#[test]
fn blocks_are_cut_before_they_overshoot_the_block_size() {
    let model: Model = (0..2000u64)
        .map(|i| {
            let mut k = i.to_be_bytes().to_vec();
            k.resize(20, b'0');
            (make_internal_key(&k, SeqNo(i + 1), ValueType::Value), vec![b'v'; 400])
        })
        .collect();
    let mut avg = Vec::new();
    for deviation in [TableOptions::default().block_size_deviation, 0] {
        let (fs, path) = mem_fs();
        let o = TableOptions {
            block_size_deviation: deviation,
            compression: CompressionType::None,
            ..TableOptions::default()
        };
        let s = build(&fs, &path, &o, &model);
        let p = &s.properties;
        avg.push(p.data_size / p.num_data_blocks);
        let t = open(&fs, &path);
        for (ik, _) in model.iter().step_by(13) {
            let user = user_key(ik);
            assert_eq!(
                table_get(&t, user, SeqNo::MAX).unwrap(),
                model_get(&model, user, SeqNo::MAX)
            );
        }
    }
    assert_eq!(TableOptions::default().block_size_deviation, 10);
    // Stored blocks carry a 5-byte trailer.
    assert!((3687..=4096 + 5).contains(&avg[0]), "average block at 10%: {}", avg[0]);
    assert!(avg[1] > 4096 + 5, "average block at 0: {}", avg[1]);
}

/// Tables built with helper threads compressing their data blocks hold exactly the bytes of
/// those compressed inline, for every codec, block size (tiny blocks gathered into jobs,
/// blocks of large values each a job of its own), index layout, with and without range
/// tombstones; partitioned filters keep compression inline.
#[test]
fn parallel_compression_writes_the_bytes_inline_compression_writes() {
    let codecs = [
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
        CompressionType::Zlib,
    ];
    let large = |n: usize, seed: u64| -> Model {
        compressible_model(n, seed).into_iter().map(|(k, v)| (k, v.repeat(400))).collect()
    };
    let mut cases = 0;
    for (i, &compression) in codecs.iter().enumerate() {
        for (j, block_size) in [64usize, 4096, 100_000].into_iter().enumerate() {
            let seed = (i * 3 + j) as u64;
            let model = if block_size == 100_000 {
                large(60, seed)
            } else {
                compressible_model(3000, seed)
            };
            for layout in 0..3 {
                let mut base = TableOptions { block_size, compression, ..TableOptions::default() };
                match layout {
                    0 => {}
                    1 => base.user_key_index = false,
                    _ => (base.index_type, base.metadata_block_size) = (IndexType::TwoLevel, 256),
                }
                let tombstones = layout == 1;
                let build_with = |threads: usize| {
                    let (fs, path) = mem_fs();
                    let o = TableOptions { parallel_threads: threads, ..base.clone() };
                    let mut b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
                    assert_eq!(b.compresses_in_parallel(), threads > 1);
                    for (k, v) in &model {
                        b.add(k, v).unwrap();
                    }
                    if tombstones {
                        let t = crate::range_del::RangeTombstone::new(b"a", b"m", SeqNo(1));
                        b.add_range_tombstone(&t);
                    }
                    let estimate = b.estimated_file_size();
                    let summary = b.finish().unwrap();
                    (fs.read_file(&path).unwrap(), summary, estimate)
                };
                let (inline, inline_summary, inline_estimate) = build_with(1);
                for threads in [2, 3] {
                    let (bytes, summary, estimate) = build_with(threads);
                    assert!(bytes == inline, "{compression:?} {block_size} {layout} {threads}");
                    assert_eq!(summary, inline_summary);
                    // Blocks in flight count at the ratio of those written (raw before any):
                    // at most the jobs in flight and the one gathering, raw.
                    let in_flight = ((2 * threads + 1) * (64 << 10) + block_size) as u64;
                    assert!(
                        estimate >= inline_estimate / 2
                            && estimate <= inline_estimate * 2 + in_flight,
                        "estimate {estimate} against {inline_estimate}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 4 * 3 * 3 * 2);
    // An empty table, and one with partitioned filters: inline.
    let (fs, path) = mem_fs();
    let o = TableOptions { parallel_threads: 4, ..TableOptions::default() };
    let b = TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone());
    assert!(b.compresses_in_parallel());
    assert_eq!(b.finish().unwrap().num_entries, 0);
    let o = TableOptions { parallel_threads: 4, ..partitioned(256, 256, true) };
    assert!(
        !TableBuilder::new(&o, fs.create(&path).unwrap(), path.clone()).compresses_in_parallel()
    );
}

/// A write failure while the pool compresses is reported and sticky, as inline.
#[test]
fn parallel_compression_reports_write_failures() {
    let model = compressible_model(20_000, 5);
    let o = TableOptions { parallel_threads: 2, block_size: 256, ..TableOptions::default() };
    check_append_failure_is_sticky(&o, &model, 3);
}
