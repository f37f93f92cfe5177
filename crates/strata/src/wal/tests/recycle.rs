//! Tests of recyclable logs: round trips in recyclable fragments, a reused file read back as
//! exactly the new log's records whatever the old one held, damage before the end still
//! found, and the fragments refused where they do not belong.

use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};

use crate::env::{CrashMode, FileSystem, MemFs, RandomAccessFile};
use crate::error::Result;
use crate::wal::format::{BLOCK_SIZE, RECYCLABLE_HEADER_SIZE};
use crate::wal::reader::LogReader;
use crate::wal::*;

fn records(rng: &mut rand::rngs::StdRng, n: usize, max: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = match i % 4 {
                0 => rng.gen_range(0..16),
                1 => rng.gen_range(0..max),
                // Sizes that end fragments 0..=11 bytes before a block boundary.
                2 => BLOCK_SIZE - 2 * RECYCLABLE_HEADER_SIZE - rng.gen_range(0..12),
                _ => rng.gen_range(BLOCK_SIZE..3 * BLOCK_SIZE),
            };
            (0..len).map(|_| rng.gen::<u8>()).collect()
        })
        .collect()
}

fn read_wal(
    fs: &MemFs,
    path: &Path,
    log: u64,
    mode: WalRecoveryMode,
) -> Result<(Vec<Vec<u8>>, reader::ReplayOutcome)> {
    let file: Arc<dyn RandomAccessFile> = fs.open(path)?;
    let mut out = Vec::new();
    let outcome = replay_wal(&file, mode, log, |_, r| {
        out.push(r.to_vec());
        Ok(())
    })?;
    Ok((out, outcome))
}

fn setup() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    fs
}

/// Writes `recs` as log `log` into a new file, or into the reused file `reuse`; returns the
/// writer's size after each record.
fn write(fs: &MemFs, log: u64, reuse: Option<u64>, recs: &[Vec<u8>], sync: bool) -> Vec<u64> {
    let path = crate::filename::wal_path(Path::new("/db"), crate::types::FileNumber(log));
    let file = match reuse {
        Some(old) => fs
            .reuse_for_write(
                &crate::filename::wal_path(Path::new("/db"), crate::types::FileNumber(old)),
                &path,
            )
            .unwrap(),
        None => fs.create(&path).unwrap(),
    };
    let mut w = LogWriter::recyclable(file, log);
    let mut ends = Vec::new();
    for r in recs {
        w.add_record(r).unwrap();
        ends.push(w.file_size());
    }
    if sync {
        w.sync().unwrap();
    } else {
        w.flush().unwrap();
    }
    fs.sync_dir(Path::new("/db")).unwrap();
    ends
}

#[test]
fn recyclable_round_trip() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for round in 0..20 {
        let fs = setup();
        let recs = records(&mut rng, 1 + round * 3, 3000);
        write(&fs, 7, None, &recs, true);
        let path = Path::new("/db/000007.log");
        for mode in [WalRecoveryMode::PointInTime, WalRecoveryMode::AbsoluteConsistency] {
            let (got, outcome) = read_wal(&fs, path, 7, mode).unwrap();
            assert_eq!(got, recs, "round {round} {mode:?}");
            assert!(!outcome.torn_tail && outcome.recyclable);
        }
        // Another log number reads nothing: the file holds another log's records.
        let (got, _) = read_wal(&fs, path, 8, WalRecoveryMode::PointInTime).unwrap();
        assert!(got.is_empty());
    }
}

#[test]
fn a_reused_file_reads_back_as_exactly_the_new_log() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for round in 0..40 {
        let fs = setup();
        let old = records(&mut rng, 30, 5000);
        write(&fs, 7, None, &old, true);
        let n = rng.gen_range(0..20);
        let new = records(&mut rng, n, 5000);
        write(&fs, 12, Some(7), &new, true);
        let path = Path::new("/db/000012.log");
        assert!(!fs.exists(Path::new("/db/000007.log")));
        for mode in [WalRecoveryMode::PointInTime, WalRecoveryMode::TolerateCorruptedTailRecords] {
            let (got, outcome) = read_wal(&fs, path, 12, mode).unwrap();
            assert_eq!(got, new, "round {round} {mode:?}");
            assert_eq!(outcome.dropped_bytes, 0, "old bytes are not dropped data");
        }
        let (got, _) = read_wal(&fs, path, 12, WalRecoveryMode::SkipAnyCorruptedRecords).unwrap();
        assert_eq!(got, new, "round {round}: salvage finds no more than the new log");
    }
}

#[test]
fn power_loss_in_a_reused_file_keeps_a_prefix() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for seed in 0..60u64 {
        let fs = setup();
        let old = records(&mut rng, 25, 4000);
        write(&fs, 3, None, &old, true);
        let n = rng.gen_range(0..6);
        let synced = records(&mut rng, n, 4000);
        let n = rng.gen_range(1..8);
        let unsynced = records(&mut rng, n, 4000);
        let mut all = synced.clone();
        all.extend(unsynced.iter().cloned());
        // The synced part, then more records flushed but not synced, in one writer.
        let path = Path::new("/db/000009.log");
        let file = fs.reuse_for_write(Path::new("/db/000003.log"), path).unwrap();
        let mut w = LogWriter::recyclable(file, 9);
        for r in &synced {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        for r in &unsynced {
            w.add_record(r).unwrap();
        }
        w.flush().unwrap();
        fs.crash(CrashMode::TornPowerLoss { seed });
        let (got, _) = read_wal(&fs, path, 9, WalRecoveryMode::PointInTime).unwrap();
        assert!(got.len() >= synced.len(), "seed {seed}: lost synced records");
        assert_eq!(got[..], all[..got.len()], "seed {seed}: not a prefix");
    }
}

#[test]
fn damage_before_a_later_record_of_the_new_log_is_found() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let fs = setup();
    write(&fs, 4, None, &records(&mut rng, 20, 2000), true);
    let new: Vec<Vec<u8>> = (0..10).map(|i| vec![i as u8; 300]).collect();
    let ends = write(&fs, 6, Some(4), &new, true);
    let path = Path::new("/db/000006.log");
    let mut bytes = fs.read_file(path).unwrap();
    // A bit flip inside the third record's payload: later records of log 6 follow.
    let at = ends[1] as usize + RECYCLABLE_HEADER_SIZE + 10;
    bytes[at] ^= 1;
    fs.write_file(path, &bytes);
    let e = read_wal(&fs, path, 6, WalRecoveryMode::PointInTime).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains(&ends[1].to_string()), "names the offset: {e}");
    let (got, outcome) = read_wal(&fs, path, 6, WalRecoveryMode::SkipAnyCorruptedRecords).unwrap();
    assert_eq!(got.len(), 9);
    assert!(outcome.dropped_records_or_fragments >= 1);
}

#[test]
fn recyclable_fragments_are_refused_outside_a_wal_and_mixed_kinds_are_damage() {
    let fs = setup();
    write(&fs, 4, None, &[b"one".to_vec(), b"two".to_vec()], true);
    let path = Path::new("/db/000004.log");
    let file: Arc<dyn RandomAccessFile> = fs.open(path).unwrap();
    // The MANIFEST's reader (no log number).
    let mut r = LogReader::new(file.clone(), WalRecoveryMode::AbsoluteConsistency);
    let e = r.read_record().unwrap_err().to_string();
    assert!(e.contains("recyclable fragment"), "{e}");
    // A legacy fragment appended to a recyclable log.
    let mut bytes = fs.read_file(path).unwrap();
    bytes.extend_from_slice(&format::encode_header(format::FragmentType::Full, b"x"));
    bytes.push(b'x');
    fs.write_file(path, &bytes);
    let e = read_wal(&fs, path, 4, WalRecoveryMode::AbsoluteConsistency).unwrap_err();
    assert!(e.to_string().contains("written in recyclable fragments"), "{e}");
}

#[test]
fn a_reused_file_whose_first_write_was_torn_reads_as_empty() {
    // Regression (power-loss loop, seed 1): power loss kept part of the new WAL header over
    // the old log's first fragment; the reader took the file for a damaged legacy log.
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for cut in [1usize, 5, 8, 10, 14, 25] {
        let fs = setup();
        write(&fs, 3, None, &records(&mut rng, 8, 3000), true);
        let new = write(&fs, 9, Some(3), &[b"header record of log 9".to_vec()], false);
        let path = Path::new("/db/000009.log");
        let fresh = fs.read_file(path).unwrap();
        fs.crash(CrashMode::PowerLoss);
        let mut bytes = fs.read_file(path).unwrap();
        bytes[..cut].copy_from_slice(&fresh[..cut]);
        assert!(cut < new[0] as usize);
        fs.write_file(path, &bytes);
        let (got, outcome) = read_wal(&fs, path, 9, WalRecoveryMode::PointInTime).unwrap();
        assert!(got.is_empty(), "cut {cut}");
        assert!(outcome.recyclable && outcome.torn_tail && outcome.dropped_bytes == 0, "cut {cut}");
    }
}
