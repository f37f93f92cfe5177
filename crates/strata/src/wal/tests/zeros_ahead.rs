//! Tests of WALs written with zeros ahead (`writer.rs`): the file stays zero-filled ahead of
//! its records; readers take the zeros as the log's end in every mode (even
//! `AbsoluteConsistency`), but only from a fragment boundary to the end of the file and only
//! when the header says so; power loss keeps a prefix with nothing reported dropped.

use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};

use crate::env::{CrashMode, FileSystem, MemFs, RandomAccessFile};
use crate::error::Result;
use crate::types::FileNumber;
use crate::wal::format::BLOCK_SIZE;
use crate::wal::reader::ReplayOutcome;
use crate::wal::writer::ZEROS_AHEAD_CHUNK;
use crate::wal::*;

const LOG: u64 = 9;
const ALL_MODES: [WalRecoveryMode; 4] = [
    WalRecoveryMode::TolerateCorruptedTailRecords,
    WalRecoveryMode::AbsoluteConsistency,
    WalRecoveryMode::PointInTime,
    WalRecoveryMode::SkipAnyCorruptedRecords,
];

fn path() -> &'static Path {
    Path::new("/db/000009.log")
}

fn setup() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    fs
}

/// Records of mixed sizes: small ones, block-sized ones and ones spanning blocks.
fn records(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let len = match i % 5 {
                0 => rng.gen_range(0..16),
                1 | 2 => rng.gen_range(16..2000),
                3 => BLOCK_SIZE - rng.gen_range(0..40),
                _ => rng.gen_range(BLOCK_SIZE..3 * BLOCK_SIZE),
            };
            (0..len).map(|_| rng.gen_range(1..=255u8)).collect()
        })
        .collect()
}

/// Opens a writer for a new WAL with zeros ahead (or not) and writes its header.
fn new_writer(fs: &MemFs, recyclable: bool, zeros: bool) -> LogWriter {
    let file = fs.create(path()).unwrap();
    let mut w = if recyclable { LogWriter::recyclable(file, LOG) } else { LogWriter::new(file) };
    if zeros {
        assert!(w.write_zeros_ahead(), "MemFs writes zeros ahead");
    }
    assert_eq!(w.zeros_ahead(), zeros);
    w.add_record(&encode_wal_header(FileNumber(3), recyclable, zeros)).unwrap();
    w
}

fn read(fs: &MemFs, mode: WalRecoveryMode) -> Result<(Vec<Vec<u8>>, ReplayOutcome)> {
    let file: Arc<dyn RandomAccessFile> = fs.open(path())?;
    let mut out = Vec::new();
    let outcome = replay_wal(&file, mode, LOG, |_, r| {
        out.push(r.to_vec());
        Ok(())
    })?;
    Ok((out, outcome))
}

/// Every mode reads exactly `want` (after the header) and calls the log whole.
fn assert_reads_whole(fs: &MemFs, want: &[Vec<u8>]) {
    for mode in ALL_MODES {
        let (got, outcome) = read(fs, mode).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(got.len(), want.len() + 1, "{mode:?}");
        assert!(got[1..] == *want, "{mode:?}: records differ");
        assert!(!outcome.torn_tail, "{mode:?}: zeros ahead read as a torn tail");
        assert_eq!(outcome.dropped_bytes, 0, "{mode:?}");
    }
}

#[test]
fn zeros_stay_ahead_and_read_as_the_end_in_every_mode() {
    for recyclable in [false, true] {
        let fs = setup();
        let mut w = new_writer(&fs, recyclable, true);
        let recs = records(1, 150);
        for (i, r) in recs.iter().enumerate() {
            w.add_record(r).unwrap();
            w.flush().unwrap();
            let len = fs.read_file(path()).unwrap().len() as u64;
            // The file is a whole number of chunks, at least half a chunk past the records.
            assert_eq!(len % ZEROS_AHEAD_CHUNK, 0);
            assert!(len >= w.file_size() + ZEROS_AHEAD_CHUNK / 2, "record {i}");
            if i % 37 == 0 {
                assert_reads_whole(&fs, &recs[..=i]);
            }
        }
        assert!(w.file_size() > 2 * ZEROS_AHEAD_CHUNK, "the test crosses chunk boundaries");
        w.sync().unwrap();
        drop(w);
        assert_reads_whole(&fs, &recs);
    }
}

#[test]
fn without_the_header_flag_zeros_are_a_torn_tail() {
    // A version-2 WAL whose file ends in zeros (written by something else): as before.
    let fs = setup();
    let mut w = new_writer(&fs, false, false);
    w.add_record(b"one").unwrap();
    w.flush().unwrap();
    drop(w);
    let mut data = fs.read_file(path()).unwrap();
    data.resize(data.len() + 3 * BLOCK_SIZE, 0);
    fs.write_file(path(), &data);
    let (got, outcome) = read(&fs, WalRecoveryMode::PointInTime).unwrap();
    assert_eq!(got.len(), 2);
    assert!(outcome.torn_tail);
    assert!(read(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap_err().is_corruption());
}

/// A legacy-fragment WAL with zeros ahead holding `n` records drawn from `seed`: the file
/// system, the records, and the log's size after each record.
fn written_log(seed: u64, n: usize) -> (MemFs, Vec<Vec<u8>>, Vec<u64>) {
    let fs = setup();
    let mut w = new_writer(&fs, false, true);
    let recs = records(seed, n);
    let mut ends = Vec::new();
    for r in &recs {
        w.add_record(r).unwrap();
        ends.push(w.file_size());
    }
    w.flush().unwrap();
    drop(w);
    (fs, recs, ends)
}

#[test]
fn zeros_followed_by_data_are_damage_not_the_end() {
    // A hole: zeros where records were, then a valid record (power loss that kept a later
    // page of unsynced writes). The zeros are not taken as the end: the record after them
    // is found, as in a log without zeros ahead.
    let (fs, recs, ends) = written_log(2, 6);
    let mut data = fs.read_file(path()).unwrap();
    // Zero records 2 and 3.
    data[ends[1] as usize..ends[3] as usize].fill(0);
    fs.write_file(path(), &data);
    assert!(read(&fs, WalRecoveryMode::PointInTime).unwrap_err().is_corruption());
    assert!(read(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap_err().is_corruption());
    let (got, outcome) = read(&fs, WalRecoveryMode::SkipAnyCorruptedRecords).unwrap();
    assert!(outcome.dropped_bytes > 0);
    assert_eq!(got.len(), 1 + recs.len() - 2);
}

#[test]
fn a_torn_last_record_before_the_zeros_is_still_a_torn_tail() {
    let (fs, recs, ends) = written_log(3, 5);
    let mut data = fs.read_file(path()).unwrap();
    // The last record's second half never reached the disk.
    let (start, end) = (ends[3] as usize, ends[4] as usize);
    data[usize::midpoint(start, end)..end].fill(0);
    fs.write_file(path(), &data);
    let (got, outcome) = read(&fs, WalRecoveryMode::PointInTime).unwrap();
    assert!(got[1..] == recs[..4]);
    assert!(outcome.torn_tail);
    assert!(read(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap_err().is_corruption());
}

/// Appends `recs` to `w`, syncing after record `i` where `i % every == at` and flushing
/// after the others, then loses power (whole or torn, by `seed`) and checks that the log
/// reads back a prefix of `recs` holding every synced record. Returns the crash and how many
/// records were synced.
fn write_then_lose_power(
    fs: &MemFs,
    w: &mut LogWriter,
    recs: &[Vec<u8>],
    (every, at): (usize, usize),
    seed: u64,
) -> (CrashMode, usize) {
    let mut synced = 0;
    for (i, r) in recs.iter().enumerate() {
        w.add_record(r).unwrap();
        if i % every == at {
            w.sync().unwrap();
            synced = i + 1;
        } else {
            w.flush().unwrap();
        }
    }
    let mode = if seed.is_multiple_of(3) {
        CrashMode::PowerLoss
    } else {
        CrashMode::TornPowerLoss { seed }
    };
    fs.crash(mode);
    let (got, _) =
        read(fs, WalRecoveryMode::PointInTime).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let got = &got[1..];
    assert!(got.len() >= synced, "seed {seed}: {} of {synced} synced records", got.len());
    assert!(got == &recs[..got.len()], "seed {seed}: not a prefix");
    (mode, synced)
}

#[test]
fn power_loss_keeps_a_prefix_holding_every_synced_record() {
    for seed in 0..40u64 {
        let fs = setup();
        let mut w = new_writer(&fs, seed % 2 == 1, true);
        fs.sync_dir(Path::new("/db")).unwrap();
        let recs = records(100 + seed, 60);
        let (mode, synced) = write_then_lose_power(&fs, &mut w, &recs, (7, 3), seed);
        if mode == CrashMode::PowerLoss {
            // Exactly the synced records, ending in zeros: a clean end.
            let (all, outcome) = read(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap();
            assert_eq!(all.len(), synced + 1, "seed {seed}");
            assert!(!outcome.torn_tail);
        }
    }
}

/// A file that declines zeros ahead once it is `after` bytes long, as the OS's files do
/// once their hand-offs are large (`env/os.rs`).
struct DeclinesZeros {
    inner: Box<dyn crate::env::WritableFile>,
    after: u64,
}

impl crate::env::WritableFile for DeclinesZeros {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        if self.inner.len() >= self.after {
            return Ok(false);
        }
        self.inner.write_zeros_ahead(to)
    }
    fn truncate_to_len(&mut self) -> Result<()> {
        self.inner.truncate_to_len()
    }
}

/// Power loss on a log whose zeros ahead stopped partway (its file declined more), the
/// records after it extending the file past the zeros written: recovery keeps a prefix
/// holding every synced record, whether the loss comes before, at or after the zeros' end.
#[test]
fn power_loss_after_the_zeros_stop_keeps_a_prefix_holding_every_synced_record() {
    for seed in 0..40u64 {
        let fs = setup();
        let after = [1, 40_000, 300_000, 900_000][seed as usize % 4];
        let file = DeclinesZeros { inner: fs.create(path()).unwrap(), after };
        let mut w = LogWriter::new(Box::new(file));
        assert!(w.write_zeros_ahead());
        w.add_record(&encode_wal_header(FileNumber(3), false, true)).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        let mut recs = records(200 + seed, 80);
        // Large records among them, so the log runs past the zeros written.
        for r in recs.iter_mut().skip(seed as usize % 3).step_by(3) {
            r.resize(30_000 + r.len() * 7, (seed as u8) | 1);
        }
        let stop = 20 + seed as usize % 60;
        write_then_lose_power(&fs, &mut w, &recs[..stop], (5, 2), seed);
    }
}

/// A new log at `p` on the OS's file system, its zeros ahead mapped, holding a WAL header
/// that says so (unflushed).
#[cfg(target_os = "linux")]
fn mapped_log(p: &Path) -> LogWriter {
    let mut w = LogWriter::new(crate::env::OsFs.create(p).unwrap());
    assert!(w.write_zeros_ahead());
    assert!(w.map_zeros_ahead(), "the OS's file system maps the zeros ahead");
    w.add_record(&encode_wal_header(FileNumber(3), false, true)).unwrap();
    w
}

/// Every record of the log at `p` (header first), read through a new handle.
#[cfg(target_os = "linux")]
fn replay_os_log(p: &Path) -> Vec<Vec<u8>> {
    let file: Arc<dyn RandomAccessFile> = crate::env::OsFs.open(p).unwrap();
    let mut out = Vec::new();
    replay_wal(&file, WalRecoveryMode::AbsoluteConsistency, LOG, |_, r| {
        out.push(r.to_vec());
        Ok(())
    })
    .unwrap();
    out
}

/// On the OS's file system the zeros ahead are mapped and the records copied into them
/// (`env/mapped.rs`): every flushed record reads back through another handle before any
/// sync, across chunk boundaries (a new window each chunk), and a trim leaves the file ending at
/// the last record, with later appends still landing at their offsets.
#[cfg(target_os = "linux")]
#[test]
fn mapped_zeros_ahead_read_back_before_any_sync_and_after_a_trim() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("000009.log");
    let mut w = mapped_log(&p);
    let recs = records(7, 400);
    let read_back = || replay_os_log(&p);
    for (i, r) in recs.iter().enumerate() {
        w.add_record(r).unwrap();
        w.flush().unwrap();
        if i % 97 == 0 {
            let got = read_back();
            assert_eq!(got.len(), i + 2, "record {i} flushed, not read back");
            assert!(got[1..] == recs[..=i]);
        }
    }
    assert!(w.file_size() > 2 * ZEROS_AHEAD_CHUNK, "the records crossed chunk boundaries");
    w.trim_zeros_ahead().unwrap();
    let trimmed = std::fs::metadata(&p).unwrap().len();
    assert_eq!(trimmed, w.file_size(), "the trim cut the zeros ahead");
    w.add_record(b"after the trim").unwrap();
    w.sync().unwrap();
    let got = read_back();
    assert_eq!(got.len(), recs.len() + 2);
    assert_eq!(got.last().unwrap(), b"after the trim");
}

/// A log of large records on the OS's file system stops its zeros ahead after a few of them
/// (`env/os.rs`, large hand-offs) and goes on extending the file past the zeros written:
/// every record reads back, small ones before and after included, both as a killed process
/// leaves the file (zeros ahead of the first records, none at the end) and after a trim.
#[cfg(target_os = "linux")]
#[test]
fn large_records_stop_the_zeros_ahead_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("000009.log");
    let mut w = mapped_log(&p);
    let mut recs = records(11, 50);
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    recs.extend((0..60).map(|i| {
        let len = rng.gen_range(40_000..140_000);
        (0..len).map(|j| (i * 7 + j % 251) as u8).collect::<Vec<u8>>()
    }));
    recs.extend(records(13, 50));
    for r in &recs {
        w.add_record(r).unwrap();
        w.flush().unwrap();
    }
    assert!(!w.map_zeros_ahead(), "the large records ended the mapping");
    let on_disk = std::fs::metadata(&p).unwrap().len();
    assert_eq!(on_disk, w.file_size(), "the file ends at its last record: no zeros ahead");
    let got = replay_os_log(&p);
    assert!(got[1..] == recs[..], "every record reads back, as a kill leaves the file");
    w.trim_zeros_ahead().unwrap();
    w.add_record(b"after the trim").unwrap();
    w.sync().unwrap();
    let got = replay_os_log(&p);
    assert_eq!(got.len(), recs.len() + 2);
    assert_eq!(got.last().unwrap(), b"after the trim");
}
