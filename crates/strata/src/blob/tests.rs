//! Blob files written and read back; damage anywhere is an error naming the file, never a
//! wrong value.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::format::{self, FOOTER_LEN, HEADER_LEN};
use super::index::BlobIndex;
use super::reader::BlobFileReader;
use super::writer::{BlobFileWriter, BlobFlow, BlobOutput, BlobWriteConfig};
use crate::env::{FileSystem, MemFs};
use crate::key::{make_internal_key, parse_internal_key};
use crate::sstable::CompressionType;
use crate::types::{FileNumber, SeqNo, ValueType};

/// Writes blob file `n` of `records` into `/db` with compression `c`; their indexes.
pub(super) fn write_file(
    fs: &MemFs,
    n: u64,
    c: CompressionType,
    records: &[(Vec<u8>, Vec<u8>)],
) -> Vec<BlobIndex> {
    fs.create_dir_all(Path::new("/db")).unwrap();
    let path = crate::filename::blob_path(Path::new("/db"), FileNumber(n));
    let file = fs.create(&path).unwrap();
    let cfg = BlobWriteConfig { compression: c, column_family: 3, ..config() };
    let mut w = BlobFileWriter::start(path, file, FileNumber(n), &cfg).unwrap();
    let idx = records.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    let a = w.finish().unwrap();
    assert_eq!(a.records, records.len() as u64);
    idx
}

/// Blob files from 64-byte values, 1,000 bytes each, uncompressed, family 0.
fn config() -> BlobWriteConfig {
    BlobWriteConfig {
        min_blob_size: Some(64),
        file_size: 1000,
        compression: CompressionType::None,
        zstd_level: 3,
        column_family: 0,
        relocate_below: None,
        statistics: None,
        file_checksum: false,
    }
}

fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..20u32)
        .map(|i| {
            let v = if i % 2 == 0 {
                vec![b'a' + (i % 26) as u8; 50 + i as usize * 37]
            } else {
                (0..(10 + i * 13)).map(|j| (j * 7 + i) as u8).collect()
            };
            (format!("key{i:03}").into_bytes(), v)
        })
        .collect()
}

#[test]
fn written_values_read_back_in_every_compression() {
    let fs = MemFs::new();
    let recs = records();
    for (n, c) in [CompressionType::None, CompressionType::Snappy, CompressionType::Zstd]
        .into_iter()
        .enumerate()
    {
        let idx = write_file(&fs, n as u64 + 1, c, &recs);
        let path = crate::filename::blob_path(Path::new("/db"), FileNumber(n as u64 + 1));
        let r = BlobFileReader::open(&fs, &path).unwrap();
        assert_eq!(r.footer().map(|f| f.records), Some(recs.len() as u64));
        for ((k, v), i) in recs.iter().zip(&idx) {
            assert_eq!(&r.read(k, i, None).unwrap(), v);
        }
        // Compressible values are stored compressed, the others raw.
        if c != CompressionType::None {
            assert!(idx.iter().any(|i| i.compression == c));
            assert!(idx.iter().any(|i| i.compression == CompressionType::None));
        }
        // A scan of the whole file finds every record.
        let data = fs.read_file(&path).unwrap();
        let mut seen = Vec::new();
        format::scan(&path, &data, |rec| {
            seen.push(rec.key.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, recs.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>());
    }
}

#[test]
fn a_flipped_byte_is_an_error_naming_the_file_never_a_wrong_value() {
    let fs = MemFs::new();
    let recs = records();
    let idx = write_file(&fs, 9, CompressionType::Snappy, &recs);
    let path = crate::filename::blob_path(Path::new("/db"), FileNumber(9));
    let clean = fs.read_file(&path).unwrap();
    for pos in 0..clean.len() {
        let mut bad = clean.clone();
        bad[pos] ^= 0x20;
        fs.write_file(&path, &bad);
        let opened = BlobFileReader::open(&fs, &path);
        let in_frame = pos < HEADER_LEN || pos >= clean.len() - FOOTER_LEN;
        let r = match opened {
            Ok(r) => r,
            Err(e) => {
                assert!(in_frame, "byte {pos}: open failed inside the records: {e}");
                assert!(e.to_string().contains("000009.blob"), "{e}");
                continue;
            }
        };
        let mut failed = 0;
        for ((k, v), i) in recs.iter().zip(&idx) {
            match r.read(k, i, None) {
                Ok(got) => assert_eq!(&got, v, "byte {pos}: a wrong value for {k:?}"),
                Err(e) => {
                    assert!(e.to_string().contains("000009.blob"), "{e}");
                    failed += 1;
                }
            }
        }
        assert!(in_frame || failed == 1, "byte {pos}: {failed} records failed");
        // A scan finds the damage too.
        assert!(format::scan(&path, &bad, |_| Ok(())).is_err(), "byte {pos}: scan passed");
    }
}

#[test]
fn truncated_files_and_stray_indexes_are_refused() {
    let fs = MemFs::new();
    let recs = records();
    let idx = write_file(&fs, 4, CompressionType::None, &recs);
    let path = crate::filename::blob_path(Path::new("/db"), FileNumber(4));
    let clean = fs.read_file(&path).unwrap();
    for cut in [0, 10, HEADER_LEN + 5, clean.len() - 1] {
        fs.write_file(&path, &clean[..cut]);
        let e = BlobFileReader::open(&fs, &path).err().expect("truncated file opened");
        assert!(e.to_string().contains("000004.blob"), "{e}");
    }
    fs.write_file(&path, &clean);
    let r = BlobFileReader::open(&fs, &path).unwrap();
    let (k, _) = &recs[3];
    let i = idx[3];
    for stray in [
        BlobIndex { offset: i.offset + 1, ..i },
        BlobIndex { size: i.size + 1, ..i },
        BlobIndex { offset: 1, ..i },
        BlobIndex { offset: u64::MAX - 2, ..i },
        BlobIndex { compression: CompressionType::Zstd, ..i },
        // Another record's place, for this key.
        idx[4],
    ] {
        let e = r.read(k, &stray, None).expect_err("a stray index read a value");
        assert!(e.to_string().contains("000004.blob"), "{e}");
    }
}

#[test]
fn outputs_route_large_values_roll_files_and_count_references() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let next = AtomicU64::new(100);
    let new_number = || FileNumber(next.fetch_add(1, Ordering::Relaxed));
    let cfg = config();
    let mut out = BlobOutput::new(cfg.clone(), &fs, Path::new("/db"), &new_number, None);
    let mut written = Vec::new();
    for i in 0..30u64 {
        let k = make_internal_key(format!("k{i:02}").as_bytes(), SeqNo(i + 1), ValueType::Value);
        let v = vec![b'v'; if i % 3 == 0 { 10 } else { 200 }];
        let (k2, v2) = out.route(&k, &v).unwrap();
        let p = parse_internal_key(k2).unwrap();
        assert_eq!(p.seq, SeqNo(i + 1));
        if i % 3 == 0 {
            assert_eq!((p.value_type, v2), (ValueType::Value, &v[..]), "small values stay");
        } else {
            assert_eq!(p.value_type, ValueType::BlobIndex);
            written.push(BlobIndex::decode(v2).unwrap());
        }
    }
    let refs = out.take_table_refs();
    let files = out.finish().unwrap();
    assert!(files.len() >= 4, "rolled at 1000 bytes: {files:?}");
    assert_eq!(refs, files.iter().map(|f| f.number).collect::<Vec<_>>());
    assert_eq!(files.iter().map(|f| f.records).sum::<u64>(), 20);
    assert_eq!(out.out_flow.by_file.values().map(|(r, _)| r).sum::<u64>(), 20);
    for f in &files {
        let path = crate::filename::blob_path(Path::new("/db"), f.number);
        assert_eq!(fs.file_size(&path).unwrap(), f.bytes + (HEADER_LEN + FOOTER_LEN) as u64);
    }
    // Garbage is what the input referred to and the output no longer does.
    let mut input = BlobFlow::default();
    for i in &written {
        input.count_index(3, i);
    }
    let mut kept = BlobFlow::default();
    for i in &written[..5] {
        kept.count_index(3, i);
    }
    let garbage = input.garbage(&kept);
    assert_eq!(garbage.iter().map(|g| g.records).sum::<u64>(), 15);
    let bytes: u64 = written[5..].iter().map(|i| i.record_bytes(3)).sum();
    assert_eq!(garbage.iter().map(|g| g.bytes).sum::<u64>(), bytes);
    // Abandoning removes what the output wrote.
    let mut out = BlobOutput::new(cfg, &fs, Path::new("/db"), &new_number, None);
    let k = make_internal_key(b"x", SeqNo(1), ValueType::Value);
    out.route(&k, &[1u8; 100]).unwrap();
    let before = fs.paths().len();
    out.abandon();
    assert_eq!(fs.paths().len(), before - 1);
}
