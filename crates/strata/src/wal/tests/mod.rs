//! Tests of the log writer and reader: layout, round trips, every truncation and bit flip in
//! every recovery mode, hand-built damage, and writer poisoning.

mod recycle;
mod zeros_ahead;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use super::format::{encode_header, FragmentType, BLOCK_SIZE, HEADER_SIZE};
use super::reader::ReplayOutcome;
use super::*;
use crate::env::{
    FaultFs, FaultKind, FaultOp, FaultRule, FileSystem, MemFs, RandomAccessFile, WritableFile,
};
use crate::error::{Error, Result};

const MODES: [WalRecoveryMode; 4] = [
    WalRecoveryMode::TolerateCorruptedTailRecords,
    WalRecoveryMode::AbsoluteConsistency,
    WalRecoveryMode::PointInTime,
    WalRecoveryMode::SkipAnyCorruptedRecords,
];

/// A read-only file over a byte vector that checks the reader's access pattern.
struct VecFile {
    data: Vec<u8>,
    path: PathBuf,
    reads: AtomicU64,
}

impl RandomAccessFile for VecFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        assert!(buf.len() <= BLOCK_SIZE, "read of {} bytes: reads must be block-sized", buf.len());
        self.reads.fetch_add(1, Ordering::Relaxed);
        let start = (offset as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

fn vec_file(data: &[u8]) -> Arc<VecFile> {
    Arc::new(VecFile {
        data: data.to_vec(),
        path: PathBuf::from("/db/000007.log"),
        reads: AtomicU64::new(0),
    })
}

/// A writable file collecting bytes in memory, shared with the test.
#[derive(Default, Clone)]
struct VecSink {
    data: Arc<parking_lot::Mutex<Vec<u8>>>,
}

impl WritableFile for VecSink {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
}

/// A written log: its bytes, and each record with its start and end offsets.
struct Log {
    bytes: Vec<u8>,
    records: Vec<Vec<u8>>,
    starts: Vec<u64>,
    ends: Vec<u64>,
}

/// Where a record appended at log size `size` starts (skipping a block trailer).
fn record_start(size: u64) -> u64 {
    let left = BLOCK_SIZE as u64 - size % BLOCK_SIZE as u64;
    if left < HEADER_SIZE as u64 {
        size + left
    } else {
        size
    }
}

fn write_log(records: &[Vec<u8>]) -> Log {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let path = Path::new("/db/000007.log");
    let mut w = LogWriter::new(fs.create(path).unwrap());
    let (mut starts, mut ends) = (Vec::new(), Vec::new());
    for r in records {
        starts.push(record_start(w.file_size()));
        w.add_record(r).unwrap();
        ends.push(w.file_size());
    }
    w.flush().unwrap();
    let bytes = fs.read_file(path).unwrap();
    assert_eq!(bytes.len() as u64, w.file_size());
    Log { bytes, records: records.to_vec(), starts, ends }
}

/// Records with the offsets they were read at.
type Replayed = Vec<(u64, Vec<u8>)>;

/// Replays `data`, returning the records with their offsets.
fn replay(data: &[u8], mode: WalRecoveryMode) -> Result<(Replayed, ReplayOutcome)> {
    let file: Arc<dyn RandomAccessFile> = vec_file(data);
    let mut got = Vec::new();
    let outcome = replay_log(&file, mode, |off, rec| {
        got.push((off, rec.to_vec()));
        Ok(())
    })?;
    assert_eq!(outcome.records, got.len() as u64);
    Ok((got, outcome))
}

fn records_of(got: &[(u64, Vec<u8>)]) -> Vec<Vec<u8>> {
    got.iter().map(|(_, r)| r.clone()).collect()
}

fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen()).collect()
}

fn corruption_offset(e: &Error) -> u64 {
    match e {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, Path::new("/db/000007.log"));
            *offset
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
}

/// True when `sub` is a subsequence of `all`.
fn is_subsequence(sub: &[Vec<u8>], all: &[Vec<u8>]) -> bool {
    let mut it = all.iter();
    sub.iter().all(|s| it.any(|a| a == s))
}

fn small_log() -> Log {
    let records: Vec<Vec<u8>> = (0..24).map(|i| payload((i * 7) % 61, i as u64)).collect();
    let log = write_log(&records);
    assert!(log.bytes.len() < BLOCK_SIZE);
    log
}

/// A log of about four blocks with trailers, empty `First` fragments, and records spanning
/// two and three blocks.
fn multi_block_log() -> Log {
    let b = BLOCK_SIZE;
    let h = HEADER_SIZE;
    let records = vec![
        payload(b - h - 6 - h - 10, 1), // with the next record, leaves 6 bytes: trailer
        payload(10, 2),
        payload(b - h - 7, 3),   // exactly fills block 1
        payload(b - 2 * h, 4),   // leaves exactly a header's worth of room
        payload(3, 5),           // starts with 7 bytes left: empty First, Last in block 3
        payload(2 * b + 100, 6), // First, Middle, Last
        payload(0, 7),
        payload(1, 8),
    ];
    write_log(&records)
}

#[test]
fn header_layout_of_small_records() {
    let log = write_log(&[Vec::new(), b"abc".to_vec()]);
    let want_empty = encode_header(FragmentType::Full, b"");
    assert_eq!(&log.bytes[..7], &want_empty);
    assert_eq!(log.bytes[4..6], [0, 0]);
    assert_eq!(log.bytes[6], 1);
    assert_eq!(&log.bytes[7..14], &encode_header(FragmentType::Full, b"abc"));
    assert_eq!(log.bytes[11..13], [3, 0]);
    assert_eq!(&log.bytes[14..], b"abc");
    assert_eq!(log.bytes.len(), 17);
}

#[test]
fn roundtrip_boundary_sizes() {
    let b = BLOCK_SIZE;
    let h = HEADER_SIZE;
    let sizes = [
        0,
        1,
        b - h,
        b - h - 6,
        b - h - 7,
        b - h - 8,
        b - h + 1,
        b,
        2 * (b - h),
        2 * (b - h) + 1,
        100_000,
        1 << 20,
        0,
    ];
    // Each size alone, then all of them in one log (so they start at varied block offsets).
    for (i, &n) in sizes.iter().enumerate() {
        let log = write_log(&[payload(n, i as u64)]);
        for mode in MODES {
            let (got, out) = replay(&log.bytes, mode).unwrap();
            assert_eq!(records_of(&got), log.records, "size {n} mode {mode:?}");
            assert!(!out.torn_tail);
            assert_eq!(out.last_valid_end, log.bytes.len() as u64);
        }
    }
    let records: Vec<Vec<u8>> =
        sizes.iter().enumerate().map(|(i, &n)| payload(n, 100 + i as u64)).collect();
    let log = write_log(&records);
    for mode in MODES {
        let (got, out) = replay(&log.bytes, mode).unwrap();
        assert_eq!(records_of(&got), records);
        let offsets: Vec<u64> = got.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, log.starts);
        assert_eq!(
            out,
            ReplayOutcome {
                records: records.len() as u64,
                last_valid_end: *log.ends.last().unwrap(),
                ..Default::default()
            }
        );
    }
}

#[test]
fn trailer_and_empty_first_fragment() {
    let log = multi_block_log();
    let b = BLOCK_SIZE;
    // Record 1 ends 6 bytes before the block end; those bytes are zero padding.
    assert_eq!(log.ends[1], (b - 6) as u64);
    assert_eq!(&log.bytes[b - 6..b], &[0u8; 6]);
    assert_eq!(log.starts[2], b as u64);
    // Record 4 starts with exactly a header's worth of room: an empty First fragment.
    assert_eq!(log.starts[4], (3 * b - HEADER_SIZE) as u64);
    assert_eq!(&log.bytes[3 * b - 7..3 * b], &encode_header(FragmentType::First, b""));
    let (got, _) = replay(&log.bytes, WalRecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!(records_of(&got), log.records);
}

#[test]
fn many_small_records() {
    let records: Vec<Vec<u8>> = (0..20_000).map(|i| payload(i % 37, i as u64)).collect();
    let log = write_log(&records);
    let (got, out) = replay(&log.bytes, WalRecoveryMode::PointInTime).unwrap();
    assert_eq!(records_of(&got), records);
    assert_eq!(out.records, 20_000);
}

#[test]
fn reads_one_block_at_a_time() {
    let log = write_log(&[payload(1 << 20, 9), payload(5, 10)]);
    let f = vec_file(&log.bytes);
    let file: Arc<dyn RandomAccessFile> = f.clone();
    let mut n = 0;
    replay_log(&file, WalRecoveryMode::PointInTime, |_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 2);
    let blocks = (log.bytes.len() as u64).div_ceil(BLOCK_SIZE as u64);
    assert_eq!(f.reads.load(Ordering::Relaxed), blocks);
}

#[test]
fn empty_file_has_no_records() {
    for mode in MODES {
        let (got, out) = replay(&[], mode).unwrap();
        assert!(got.is_empty());
        assert_eq!(out, ReplayOutcome::default());
    }
}

#[test]
fn callback_error_stops_replay() {
    let log = small_log();
    let file: Arc<dyn RandomAccessFile> = vec_file(&log.bytes);
    let mut seen = 0;
    let r = replay_log(&file, WalRecoveryMode::PointInTime, |_, _| {
        seen += 1;
        if seen == 3 {
            Err(Error::InvalidArgument("stop".into()))
        } else {
            Ok(())
        }
    });
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert_eq!(seen, 3);
}

/// True when a log cut at `cut` ends cleanly: at 0, at the end of a record, or inside (or at
/// the end of) the block trailer right after one.
fn clean_cut(log: &Log, cut: u64) -> bool {
    cut == 0 || log.ends.iter().any(|&e| e <= cut && cut <= record_start(e))
}

fn check_truncation(log: &Log, cut: usize) {
    let data = &log.bytes[..cut];
    let n_complete = log.ends.iter().filter(|&&e| e <= cut as u64).count();
    let prefix = &log.records[..n_complete];
    let clean = clean_cut(log, cut as u64);
    for mode in MODES {
        let r = replay(data, mode);
        if mode == WalRecoveryMode::AbsoluteConsistency && !clean {
            let e = r.expect_err("absolute consistency must reject a torn tail");
            assert_eq!(corruption_offset(&e), log.starts[n_complete], "cut {cut}");
            continue;
        }
        let (got, out) = r.unwrap_or_else(|e| panic!("cut {cut} mode {mode:?}: {e}"));
        assert_eq!(records_of(&got), prefix, "cut {cut} mode {mode:?}");
        assert_eq!(out.torn_tail, !clean, "cut {cut} mode {mode:?}");
        if !clean {
            assert_eq!(out.dropped_bytes, cut as u64 - log.starts[n_complete], "cut {cut}");
            assert_eq!(out.dropped_records_or_fragments, 1);
        }
        let want_end = if n_complete == 0 { 0 } else { log.ends[n_complete - 1] };
        assert_eq!(out.last_valid_end, want_end);
    }
}

#[test]
fn truncation_at_every_offset_small_log() {
    let log = small_log();
    for cut in 0..=log.bytes.len() {
        check_truncation(&log, cut);
    }
}

#[test]
fn truncation_around_every_boundary_multi_block_log() {
    let log = multi_block_log();
    let len = log.bytes.len();
    let mut cuts: Vec<usize> = (0..=len).step_by(61).collect();
    let mut marks: Vec<usize> = log.starts.iter().chain(&log.ends).map(|&x| x as usize).collect();
    marks.extend((0..=len / BLOCK_SIZE + 1).map(|i| i * BLOCK_SIZE));
    for m in marks {
        cuts.extend(m.saturating_sub(9)..=(m + 9).min(len));
    }
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        check_truncation(&log, cut);
    }
}

/// Index of the record whose bytes (headers and payloads) contain `pos`; `None` for block
/// trailer padding (the only bytes between records: a `First` fragment always fills its block).
fn record_at(log: &Log, pos: u64) -> Option<usize> {
    (0..log.records.len()).find(|&i| pos >= log.starts[i] && pos < log.ends[i])
}

#[test]
fn bit_flip_at_every_position_small_log() {
    let log = small_log();
    let n = log.records.len();
    for pos in 0..log.bytes.len() {
        let i = record_at(&log, pos as u64).expect("no padding in a one-block log");
        for bit in 0..8 {
            let mut data = log.bytes.clone();
            data[pos] ^= 1 << bit;
            for mode in MODES {
                let r = replay(&data, mode);
                let ctx = format!("pos {pos} bit {bit} record {i} mode {mode:?}");
                match mode {
                    WalRecoveryMode::AbsoluteConsistency => {
                        assert_eq!(corruption_offset(&r.expect_err(&ctx)), log.starts[i], "{ctx}");
                    }
                    WalRecoveryMode::PointInTime
                    | WalRecoveryMode::TolerateCorruptedTailRecords => {
                        if i + 1 == n {
                            let (got, out) = r.expect(&ctx);
                            assert_eq!(records_of(&got), &log.records[..i], "{ctx}");
                            assert!(out.torn_tail, "{ctx}");
                        } else {
                            let e = r.expect_err(&ctx);
                            assert_eq!(corruption_offset(&e), log.starts[i], "{ctx}");
                        }
                    }
                    WalRecoveryMode::SkipAnyCorruptedRecords => {
                        let (got, out) = r.expect(&ctx);
                        let mut want = log.records.clone();
                        want.remove(i);
                        assert_eq!(records_of(&got), want, "{ctx}");
                        assert_eq!(out.dropped_records_or_fragments, 1, "{ctx}");
                        assert_eq!(out.torn_tail, i + 1 == n, "{ctx}");
                        let offsets: Vec<u64> = got.iter().map(|(o, _)| *o).collect();
                        let mut want_offsets = log.starts.clone();
                        want_offsets.remove(i);
                        assert_eq!(offsets, want_offsets, "{ctx}");
                    }
                }
            }
        }
    }
}

#[test]
fn bit_flips_in_multi_block_log() {
    let log = multi_block_log();
    let n = log.records.len();
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut positions: Vec<usize> = (0..400).map(|_| rng.gen_range(0..log.bytes.len())).collect();
    // Every header byte of every fragment and every trailer byte.
    for blk in 0..=log.bytes.len() / BLOCK_SIZE {
        positions.extend((blk * BLOCK_SIZE..blk * BLOCK_SIZE + 7).filter(|&p| p < log.bytes.len()));
        positions.extend(
            (blk * BLOCK_SIZE + BLOCK_SIZE - 7..(blk + 1) * BLOCK_SIZE)
                .filter(|&p| p < log.bytes.len()),
        );
    }
    positions.extend(log.starts.iter().flat_map(|&s| s as usize..s as usize + 7));
    for pos in positions {
        let mut data = log.bytes.clone();
        data[pos] ^= 0x10;
        let hit = record_at(&log, pos as u64);
        for mode in MODES {
            let r = replay(&data, mode);
            let ctx = format!("pos {pos} record {hit:?} mode {mode:?}");
            let Some(i) = hit else {
                // Trailer padding is not checked.
                assert_eq!(records_of(&r.expect(&ctx).0), log.records, "{ctx}");
                continue;
            };
            match mode {
                WalRecoveryMode::AbsoluteConsistency => {
                    assert_eq!(corruption_offset(&r.expect_err(&ctx)), log.starts[i], "{ctx}");
                }
                WalRecoveryMode::SkipAnyCorruptedRecords => {
                    let mut want = log.records.clone();
                    want.remove(i);
                    assert_eq!(records_of(&r.expect(&ctx).0), want, "{ctx}");
                }
                _ => {
                    if i + 1 == n {
                        assert_eq!(records_of(&r.expect(&ctx).0), &log.records[..i], "{ctx}");
                    } else {
                        assert_eq!(corruption_offset(&r.expect_err(&ctx)), log.starts[i], "{ctx}");
                    }
                }
            }
        }
    }
}

#[test]
fn zero_filled_and_garbage_tails_are_torn() {
    let log = small_log();
    for extra in [1usize, 6, 7, 100, BLOCK_SIZE, 3 * BLOCK_SIZE + 5] {
        for fill in [0u8, 0xa5] {
            let mut data = log.bytes.clone();
            data.extend(std::iter::repeat_n(fill, extra));
            if fill != 0 {
                let g = payload(extra, extra as u64);
                let at = log.bytes.len();
                data[at..].copy_from_slice(&g);
            }
            for mode in MODES {
                let r = replay(&data, mode);
                if mode == WalRecoveryMode::AbsoluteConsistency {
                    assert_eq!(corruption_offset(&r.unwrap_err()), log.bytes.len() as u64);
                    continue;
                }
                let (got, out) = r.unwrap();
                assert_eq!(records_of(&got), log.records, "extra {extra} fill {fill}");
                assert!(out.torn_tail);
                assert_eq!(out.dropped_bytes, extra as u64);
                assert_eq!(out.last_valid_end, log.bytes.len() as u64);
            }
        }
    }
}

#[test]
fn zeroed_record_in_the_middle_is_an_error_unless_skipping() {
    let log = small_log();
    let i = 10;
    let mut data = log.bytes.clone();
    data[log.starts[i] as usize..log.ends[i] as usize].fill(0);
    for mode in MODES {
        let r = replay(&data, mode);
        if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
            let (got, out) = r.unwrap();
            let mut want = log.records.clone();
            want.remove(i);
            assert_eq!(records_of(&got), want);
            assert_eq!(out.dropped_bytes, log.ends[i] - log.starts[i]);
            assert!(!out.torn_tail);
        } else {
            let e = r.unwrap_err();
            assert_eq!(corruption_offset(&e), log.starts[i]);
            assert!(e.to_string().contains("zero-filled"), "{e}");
        }
    }
}

#[test]
fn damaged_start_of_a_spanning_last_record_is_a_torn_tail() {
    // The last record spans three blocks; its first fragment is zeroed (a lost page), its
    // Middle and Last still verify. No record starts after the damage: a torn tail.
    let records = vec![payload(100, 1), payload(2 * BLOCK_SIZE + 5, 2)];
    let log = write_log(&records);
    let mut data = log.bytes.clone();
    data[log.starts[1] as usize..log.starts[1] as usize + 50].fill(0);
    let (got, out) = replay(&data, WalRecoveryMode::PointInTime).unwrap();
    assert_eq!(records_of(&got), &records[..1]);
    assert!(out.torn_tail);
    // With a record after it, the same damage is mid-file corruption.
    let records = vec![payload(100, 1), payload(2 * BLOCK_SIZE + 5, 2), payload(9, 3)];
    let log = write_log(&records);
    let mut data = log.bytes.clone();
    data[log.starts[1] as usize..log.starts[1] as usize + 50].fill(0);
    let e = replay(&data, WalRecoveryMode::PointInTime).unwrap_err();
    assert_eq!(corruption_offset(&e), log.starts[1]);
    let (got, out) = replay(&data, WalRecoveryMode::SkipAnyCorruptedRecords).unwrap();
    assert_eq!(records_of(&got), vec![records[0].clone(), records[2].clone()]);
    assert_eq!(out.dropped_records_or_fragments, 1);
    assert_eq!(out.dropped_bytes, log.starts[2] - log.starts[1]);
}

/// Builds a log from raw fragments, all inside the first block.
fn raw_log(frags: &[(FragmentType, &[u8])]) -> Vec<u8> {
    let mut v = Vec::new();
    for (t, p) in frags {
        v.extend_from_slice(&encode_header(*t, p));
        v.extend_from_slice(p);
    }
    v
}

#[test]
fn fragment_sequence_errors() {
    use FragmentType::{First, Full, Last, Middle};
    // A First interrupted by a Full: mid-file damage at the First.
    let data = raw_log(&[(Full, b"a"), (First, b"bb"), (Full, b"cc"), (Full, b"d")]);
    for mode in MODES {
        let r = replay(&data, mode);
        if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
            let (got, out) = r.unwrap();
            assert_eq!(records_of(&got), vec![b"a".to_vec(), b"cc".to_vec(), b"d".to_vec()]);
            assert_eq!(out.dropped_records_or_fragments, 1);
            assert_eq!(out.dropped_bytes, 9);
            assert_eq!(got[1].0, 17);
        } else {
            assert_eq!(corruption_offset(&r.unwrap_err()), 8);
        }
    }
    // Orphan Middle/Last followed by a record.
    let data = raw_log(&[(Middle, b"xx"), (Last, b"y"), (Full, b"z")]);
    for mode in MODES {
        let r = replay(&data, mode);
        if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
            let (got, out) = r.unwrap();
            assert_eq!(records_of(&got), vec![b"z".to_vec()]);
            assert_eq!(out.dropped_bytes, 17);
        } else {
            assert_eq!(corruption_offset(&r.unwrap_err()), 0);
        }
    }
    // An orphan Last at the end, and a First with no Last: torn tails.
    for data in [raw_log(&[(Full, b"a"), (Last, b"y")]), raw_log(&[(Full, b"a"), (First, b"y")])] {
        for mode in MODES {
            let r = replay(&data, mode);
            if mode == WalRecoveryMode::AbsoluteConsistency {
                assert_eq!(corruption_offset(&r.unwrap_err()), 8);
            } else {
                let (got, out) = r.unwrap();
                assert_eq!(records_of(&got), vec![b"a".to_vec()]);
                assert!(out.torn_tail);
                assert_eq!(out.dropped_bytes, 8);
            }
        }
    }
    // A two-fragment record within a block (never written by LogWriter, but well-formed).
    let data = raw_log(&[(First, b"ab"), (Middle, b""), (Last, b"cd"), (Full, b"")]);
    let (got, _) = replay(&data, WalRecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!(got, vec![(0, b"abcd".to_vec()), (25, Vec::new())]);
}

#[test]
fn unknown_fragment_type_is_damage() {
    let mut frag = raw_log(&[(FragmentType::Full, b"new")]);
    frag[6] = 9;
    let crc = super::format::fragment_checksum(9, b"new");
    frag[..4].copy_from_slice(&crc.to_le_bytes());
    let mut data = raw_log(&[(FragmentType::Full, b"a")]);
    data.extend_from_slice(&frag);
    let e = replay(&data, WalRecoveryMode::AbsoluteConsistency).unwrap_err();
    assert!(e.to_string().contains("unknown fragment type 9"), "{e}");
    let (got, out) = replay(&data, WalRecoveryMode::PointInTime).unwrap();
    assert_eq!(got.len(), 1);
    assert!(out.torn_tail);
    data.extend_from_slice(&raw_log(&[(FragmentType::Full, b"b")]));
    assert!(replay(&data, WalRecoveryMode::PointInTime).unwrap_err().is_corruption());
}

#[test]
fn io_errors_are_returned_in_every_mode() {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).unwrap();
    let log = small_log();
    mem.write_file(Path::new("/db/000007.log"), &log.bytes);
    let fs = FaultFs::new(Arc::new(mem), 1);
    fs.add_rule(FaultRule {
        op: FaultOp::Read,
        kind: FaultKind::Eio,
        nth: 1,
        persistent: true,
        path_contains: None,
    });
    let file = fs.open(Path::new("/db/000007.log")).unwrap();
    for mode in MODES {
        let r = replay_log(&file, mode, |_, _| Ok(()));
        assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    }
}

#[test]
fn appending_at_an_existing_offset_continues_the_layout() {
    let first = multi_block_log();
    let more = vec![payload(BLOCK_SIZE, 50), payload(3, 51)];
    let mut all = first.records.clone();
    all.extend(more.iter().cloned());
    let whole = write_log(&all);
    // Through a handle whose len() counts the existing bytes.
    let sink = VecSink { data: Arc::new(parking_lot::Mutex::new(first.bytes.clone())) };
    let mut w = LogWriter::new(Box::new(sink.clone()));
    for r in &more {
        w.add_record(r).unwrap();
    }
    assert_eq!(w.file_size(), whole.bytes.len() as u64);
    assert_eq!(*sink.data.lock(), whole.bytes);
    // Through a fresh handle told the existing size.
    let sink2 = VecSink::default();
    let mut w2 = LogWriter::with_initial_offset(Box::new(sink2.clone()), first.bytes.len() as u64);
    for r in &more {
        w2.add_record(r).unwrap();
    }
    assert_eq!(w2.file_size(), whole.bytes.len() as u64);
    let mut joined = first.bytes.clone();
    joined.extend_from_slice(&sink2.data.lock());
    assert_eq!(joined, whole.bytes);
    let (got, _) = replay(&joined, WalRecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!(records_of(&got), all);
}

fn fault_setup(rule: FaultRule) -> (FaultFs, MemFs, LogWriter) {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).unwrap();
    let fs = FaultFs::new(Arc::new(mem.clone()), 3);
    let file = fs.create(Path::new("/db/000007.log")).unwrap();
    let mut w = LogWriter::new(file);
    w.add_record(b"before").unwrap();
    w.sync().unwrap();
    fs.add_rule(rule);
    (fs, mem, w)
}

fn assert_poisoned(fs: &FaultFs, w: &mut LogWriter) {
    fs.clear();
    assert!(w.is_poisoned());
    for _ in 0..2 {
        assert!(matches!(w.add_record(b"later"), Err(Error::Background(_))));
        assert!(matches!(w.flush(), Err(Error::Background(_))));
        assert!(matches!(w.sync(), Err(Error::Background(_))));
        assert!(matches!(w.add_record(b""), Err(Error::Background(_))));
    }
}

fn rule(op: FaultOp, kind: FaultKind) -> FaultRule {
    FaultRule { op, kind, nth: 1, persistent: false, path_contains: None }
}

#[test]
fn failed_sync_poisons_the_writer() {
    let (fs, mem, mut w) = fault_setup(rule(FaultOp::Sync, FaultKind::Eio));
    w.add_record(b"unsynced").unwrap();
    let e = w.sync().unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
    assert_poisoned(&fs, &mut w);
    let err = w.sync().unwrap_err().to_string();
    assert!(err.contains("fdatasync"), "the first failure is named: {err}");
    drop(w);
    let data = mem.read_file(Path::new("/db/000007.log")).unwrap();
    let (got, _) = replay(&data, WalRecoveryMode::PointInTime).unwrap();
    assert_eq!(got[0].1, b"before");
}

#[test]
fn failed_append_poisons_the_writer() {
    for kind in [FaultKind::ShortWrite, FaultKind::NoSpace, FaultKind::Eio] {
        // Fail the payload append of a record (its second append).
        let (fs, mem, mut w) = fault_setup(FaultRule {
            op: FaultOp::Append,
            kind,
            nth: 2,
            persistent: false,
            path_contains: None,
        });
        let e = w.add_record(&payload(1000, 1)).unwrap_err();
        assert_eq!(e.is_no_space(), kind == FaultKind::NoSpace);
        assert_poisoned(&fs, &mut w);
        drop(w);
        // What reached the file reads back as the earlier record plus, at most, a torn tail.
        let data = mem.read_file(Path::new("/db/000007.log")).unwrap();
        let (got, _) = replay(&data, WalRecoveryMode::PointInTime).unwrap();
        assert_eq!(records_of(&got), vec![b"before".to_vec()]);
    }
}

#[test]
fn failed_flush_poisons_the_writer() {
    let (fs, _mem, mut w) = fault_setup(rule(FaultOp::Flush, FaultKind::Eio));
    w.add_record(b"x").unwrap();
    assert!(w.flush().is_err());
    assert_poisoned(&fs, &mut w);
}

/// A damage operation for the property test.
#[derive(Clone, Debug)]
enum Damage {
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Zero(prop::sample::Index, usize),
    Garbage(prop::sample::Index, Vec<u8>),
}

fn damage_strategy() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<prop::sample::Index>(), 1usize..5000).prop_map(|(i, n)| Damage::Zero(i, n)),
        (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(i, g)| Damage::Garbage(i, g)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn damaged_logs_never_yield_unwritten_records(
        sizes in prop::collection::vec(prop_oneof![0usize..50, 0usize..3000, 30000usize..70000], 1..12),
        damage in prop::collection::vec(damage_strategy(), 1..4),
    ) {
        let records: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(i, &n)| payload(n, i as u64 * 7919)).collect();
        let log = write_log(&records);
        let mut data = log.bytes.clone();
        for d in &damage {
            if data.is_empty() {
                break;
            }
            match d {
                Damage::Truncate(i) => data.truncate(i.index(data.len())),
                Damage::Flip(i, b) => {
                    let p = i.index(data.len());
                    data[p] ^= 1 << b;
                }
                Damage::Zero(i, n) => {
                    let p = i.index(data.len());
                    let end = (p + n).min(data.len());
                    data[p..end].fill(0);
                }
                Damage::Garbage(i, g) => {
                    let p = i.index(data.len());
                    let end = (p + g.len()).min(data.len());
                    data[p..end].copy_from_slice(&g[..end - p]);
                }
            }
        }
        for mode in MODES {
            match replay(&data, mode) {
                Ok((got, out)) => {
                    let got = records_of(&got);
                    if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
                        prop_assert!(is_subsequence(&got, &records));
                    } else {
                        prop_assert_eq!(&got[..], &records[..got.len()]);
                    }
                    prop_assert!(out.last_valid_end <= data.len() as u64);
                    prop_assert!(out.dropped_bytes <= data.len() as u64);
                }
                Err(e) => prop_assert!(e.is_corruption(), "{}", e),
            }
        }
    }
}

#[test]
fn torn_power_loss_recovers_every_synced_record_as_a_prefix() {
    use crate::env::CrashMode;
    for seed in 0..40u64 {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let path = Path::new("/db/000007.log");
        let mut w = LogWriter::new(fs.create(path).unwrap());
        fs.sync_dir(dir).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut written = Vec::new();
        let mut synced = 0;
        for i in 0..60 {
            let n =
                if rng.gen_bool(0.1) { rng.gen_range(0..80_000) } else { rng.gen_range(0..300) };
            let r = payload(n, seed * 1000 + i);
            w.add_record(&r).unwrap();
            written.push(r);
            if rng.gen_bool(0.2) {
                w.sync().unwrap();
                synced = written.len();
            } else if rng.gen_bool(0.5) {
                w.flush().unwrap();
            }
        }
        fs.crash(CrashMode::TornPowerLoss { seed });
        let data = fs.read_file(path).unwrap();
        let (got, _) = replay(&data, WalRecoveryMode::PointInTime).unwrap();
        let got = records_of(&got);
        assert!(got.len() >= synced, "seed {seed}: lost synced records");
        assert_eq!(&got[..], &written[..got.len()], "seed {seed}");
    }
}

/// A log being written as it is read: the first read of block 0 sees its first record not yet
/// there (zeros), later reads see it written.
struct LandingFile {
    data: Vec<u8>,
    hidden: usize,
    first: std::sync::atomic::AtomicBool,
}

impl RandomAccessFile for LandingFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let start = (offset as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        if offset == 0 && self.first.swap(false, Ordering::SeqCst) {
            buf[..self.hidden.min(n)].fill(0);
        }
        Ok(n)
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn path(&self) -> &Path {
        Path::new("/db/000007.log")
    }
}

/// Regression: a read-only open beside a live writer failed with "zero-filled bytes where a
/// fragment was expected; a valid record follows" when it read a block before the writer's
/// bytes landed. Beside a live writer the block is read again and the log reads whole; a log
/// at rest is judged as before.
#[test]
fn a_block_read_mid_write_is_read_again_beside_a_live_writer() {
    let log = write_log(&[b"first".to_vec(), b"second".to_vec(), b"third".to_vec()]);
    let landing = || -> Arc<dyn RandomAccessFile> {
        Arc::new(LandingFile {
            data: log.bytes.clone(),
            hidden: log.ends[0] as usize,
            first: std::sync::atomic::AtomicBool::new(true),
        })
    };
    let read = |live: bool| {
        let mut got = Vec::new();
        replay_live_wal(&landing(), WalRecoveryMode::PointInTime, 7, live, |_, r| {
            got.push(r.to_vec());
            Ok(())
        })
        .map(|_| got)
    };
    assert_eq!(read(true).unwrap(), log.records);
    let e = read(false).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
}
