//! WALs zero-filled ahead of their records (`Options::wal_zeros_ahead`): a synced
//! write overwrites zeros instead of growing the file. The zeros after the last record are the
//! WAL's end, not damage: a killed process reopens even under `AbsoluteConsistency`, WALs
//! retired at memtable switches (zeros after their "closed" event) do not read as cut short,
//! and power loss keeps a prefix holding every synced write.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, MemFs, OsFs};
use strata::{Db, Options, WalRecoveryMode, WriteOptions};

fn key(i: u32) -> String {
    format!("key{i:06}")
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("{round}:{i}:{}", "v".repeat((i % 97) as usize)).into_bytes()
}

fn options(fs: Arc<dyn strata::env::FileSystem>, mode: WalRecoveryMode) -> Options {
    Options {
        fs,
        write_buffer_size: 16 << 10,
        max_write_buffer_number: 3,
        wal_recovery_mode: mode,
        ..Options::default()
    }
}

/// The sizes of the WALs in `dir`. A WAL that the DB deletes between the listing and its read
/// (a flush retired it) is left out: the DB may be open, flushing in the background.
fn wal_sizes(mem: &MemFs, dir: &Path) -> Vec<usize> {
    mem.paths()
        .iter()
        .filter(|p| p.parent() == Some(dir) && p.extension().is_some_and(|e| e == "log"))
        .filter_map(|p| mem.read_file(p).map(|b| b.len()))
        .collect()
}

#[test]
fn a_killed_process_reopens_whole_under_absolute_consistency() {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let dir = PathBuf::from("/db");
    let opts = options(Arc::new(fs.clone()), WalRecoveryMode::AbsoluteConsistency);
    let db = Db::open(&opts, &dir).unwrap();
    for i in 0..3_000 {
        let sync = i % 10 == 0;
        db.put_opt(
            key(i),
            value(i, 0),
            &WriteOptions { sync, disable_wal: false, ..WriteOptions::default() },
        )
        .unwrap();
    }
    let sizes = wal_sizes(&mem, &dir);
    assert!(
        !sizes.is_empty() && sizes.iter().all(|&s| s >= 1 << 20),
        "WALs zero-filled: {sizes:?}"
    );
    fs.kill();
    drop(db);
    mem.crash(CrashMode::ProcessKill);
    let db = Db::open(&options(Arc::new(mem.clone()), WalRecoveryMode::AbsoluteConsistency), &dir)
        .unwrap();
    for i in 0..3_000 {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "{}", key(i));
    }
}

#[test]
fn power_loss_keeps_a_prefix_and_every_synced_write() {
    for seed in 0..16u64 {
        let mem = MemFs::new();
        let dir = PathBuf::from("/db");
        let fs = FaultFs::new(Arc::new(mem.clone()), seed);
        let db =
            Db::open(&options(Arc::new(fs.clone()), WalRecoveryMode::PointInTime), &dir).unwrap();
        for i in 0..2_000 {
            db.put(key(i), value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        // Round 1 overwrites keys in order across several memtable switches, with a synced
        // write every so often.
        let mut last_synced = None;
        let stop = 500 + (seed as u32 * 311) % 1_500;
        for i in 0..stop {
            let sync = (i + seed as u32).is_multiple_of(97);
            db.put_opt(
                key(i),
                value(i, 1),
                &WriteOptions { sync, disable_wal: false, ..WriteOptions::default() },
            )
            .unwrap();
            if sync {
                last_synced = Some(i);
            }
        }
        fs.kill();
        drop(db);
        let mode =
            if seed % 2 == 0 { CrashMode::PowerLoss } else { CrashMode::TornPowerLoss { seed } };
        mem.crash(mode);
        let db = Db::open(&options(Arc::new(mem.clone()), WalRecoveryMode::PointInTime), &dir)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let mut n = 0;
        while n < stop && db.get(key(n)).unwrap() == Some(value(n, 1)) {
            n += 1;
        }
        for i in n..2_000 {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "seed {seed}: {}", key(i));
        }
        if let Some(s) = last_synced {
            assert!(n > s, "seed {seed}: synced write {s} lost (prefix {n})");
        }
    }
}

#[test]
fn on_the_os_file_system_the_wal_is_zero_filled_and_reopens() {
    for zeros in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            fs: Arc::new(OsFs),
            wal_zeros_ahead: zeros,
            wal_recovery_mode: WalRecoveryMode::AbsoluteConsistency,
            ..Options::default()
        };
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..100 {
            db.put_opt(
                key(i),
                value(i, 0),
                &WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() },
            )
            .unwrap();
        }
        let wal = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "log"))
            .unwrap();
        let size = std::fs::metadata(&wal).unwrap().len();
        if zeros {
            assert_eq!(size, 1 << 20, "one chunk of zeros ahead");
        } else {
            assert!(size < 64 << 10, "no zeros ahead: {size} bytes");
        }
        // A clean close drops the zeros: the WAL ends at its close marker.
        drop(db);
        let closed = std::fs::metadata(&wal).unwrap().len();
        assert!(closed < 64 << 10, "closed WAL of {closed} bytes");
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..100 {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "{}", key(i));
        }
    }
}

/// The size of the newest WAL in `dir`.
fn newest_wal_size(dir: &Path) -> u64 {
    let newest = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    std::fs::metadata(newest).unwrap().len()
}

/// On the OS's file system a WAL whose last appends were large (tens of kilobytes per write,
/// `env/os.rs`) passes that on: the next WAL starts without zeros ahead; one whose appends
/// turned small again gives the next WAL its zeros back. Every write reads back after a
/// reopen.
#[test]
fn large_writes_start_the_next_wal_without_zeros_and_small_ones_bring_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        fs: Arc::new(OsFs),
        write_buffer_size: 4 << 20,
        wal_recovery_mode: WalRecoveryMode::AbsoluteConsistency,
        ..Options::default()
    };
    let big = |i: u32| format!("{i}:").into_bytes().repeat(20_000);
    let db = Db::open(&opts, dir.path()).unwrap();
    assert_eq!(newest_wal_size(dir.path()), 1 << 20, "a new DB's WAL starts with zeros");
    for i in 0..8 {
        db.put(key(i), big(i)).unwrap();
    }
    db.flush().unwrap();
    let size = newest_wal_size(dir.path());
    assert!(size < 64 << 10, "after large writes the next WAL has no zeros: {size} bytes");
    for i in 8..100 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(newest_wal_size(dir.path()), 1 << 20, "after small writes the zeros are back");
    for i in 100..104 {
        db.put(key(i), big(i)).unwrap();
    }
    drop(db);
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..104 {
        let want = if (8..100).contains(&i) { value(i, 0) } else { big(i) };
        assert_eq!(db.get(key(i)).unwrap(), Some(want), "{}", key(i));
    }
}
