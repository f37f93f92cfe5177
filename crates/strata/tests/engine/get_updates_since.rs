//! `Db::get_updates_since`, the WAL iterator: which batches it yields (the `rocksdb` crate's
//! cases), across WAL switches with and without the archive, across a reopen and a crash
//! (compared with a model of what was written), a damaged record, and the archive's purge by
//! size and by age.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{CrashMode, FaultFs, FileSystem, MemFs};
use strata::{Db, Error, ErrorKind, Options, WriteBatch, WriteOptions};

/// One write: its key updates (None = delete).
type Step = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn mem_options(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

fn archiving(mut o: Options) -> Options {
    o.set_wal_size_limit_mb(64);
    o
}

fn batch_of(step: &Step) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in step {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
    }
    b
}

/// A batch's records as encoded, without the sequence number its header starts with.
fn body(b: &WriteBatch) -> Vec<u8> {
    b.data()[8..].to_vec()
}

/// Every item of `get_updates_since(seq)`, unwrapped.
fn updates(db: &Db, seq: u64) -> Vec<(u64, Vec<u8>)> {
    db.get_updates_since(seq)
        .unwrap()
        .map(|item| {
            let (s, b) = item.unwrap();
            (s, body(&b))
        })
        .collect()
}

fn put_step(i: u64) -> Step {
    vec![(format!("k{i:05}").into_bytes(), Some(format!("v{i}").into_bytes()))]
}

/// `steps` as the iterator should give them when the first took sequence `first`.
fn expected(first: u64, steps: &[Step]) -> Vec<(u64, Vec<u8>)> {
    let mut seq = first;
    steps
        .iter()
        .map(|s| {
            let at = seq;
            seq += s.len() as u64;
            (at, body(&batch_of(s)))
        })
        .collect()
}

fn archive_names(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut v = fs.list(&dir.join("archive")).unwrap_or_default();
    v.sort();
    v
}

/// The archive's names once `done` says they are as expected: a flush's waiter wakes when
/// its table is installed, and the WALs it made obsolete are archived right after.
fn archive_once(fs: &dyn FileSystem, dir: &Path, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let names = archive_names(fs, dir);
        if done(&names) || std::time::Instant::now() > deadline {
            return names;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn an_empty_db_has_no_updates() {
    let fs = MemFs::new();
    let db = Db::open(&mem_options(&fs), "/db").unwrap();
    let mut it = db.get_updates_since(0).unwrap();
    assert!(!it.valid());
    assert!(it.next().is_none());
    assert!(it.status().is_ok());
    let Err(e) = db.get_updates_since(1) else { panic!("sequence 1 is not written yet") };
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("not yet written"), "{e}");
}

#[test]
fn the_rocksdb_crate_cases() {
    let fs = MemFs::new();
    let db = Db::open(&mem_options(&fs), "/db").unwrap();
    db.put(b"key1", b"value1").unwrap();
    // A batch of two at 2..=3, then one of two at 4..=5.
    let mut b = WriteBatch::default();
    b.put(b"key2", b"value2");
    b.delete(b"key1");
    db.write(b).unwrap();
    let mut b = WriteBatch::default();
    b.put(b"key3", b"v");
    b.put(b"key4", b"v");
    db.write(b).unwrap();
    assert_eq!(db.latest_sequence_number(), 5);
    let firsts = |seq| updates(&db, seq).into_iter().map(|(s, _)| s).collect::<Vec<_>>();
    assert_eq!(firsts(0), [1, 2, 4]);
    assert_eq!(firsts(1), [2, 4], "the batch after sequence 1 starts at 2");
    assert_eq!(firsts(3), [4], "the batch ending at 3 is not repeated");
    assert_eq!(firsts(5), Vec::<u64>::new(), "nothing since the last write");
    // Inside a batch: the batch holding it is skipped whole, as the rocksdb crate does.
    assert_eq!(firsts(2), [4]);
    let (seq, batch) = db.get_updates_since(1).unwrap().next().unwrap().unwrap();
    assert_eq!(seq, 2);
    let step = vec![(b"key2".to_vec(), Some(b"value2".to_vec())), (b"key1".to_vec(), None)];
    assert_eq!(body(&batch), body(&batch_of(&step)));
    let Err(e) = db.get_updates_since(1000) else { panic!("out of range") };
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn valid_and_status_follow_the_items() {
    let fs = MemFs::new();
    let db = Db::open(&mem_options(&fs), "/db").unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    let mut it = db.get_updates_since(0).unwrap();
    assert!(it.valid());
    assert_eq!(it.next().unwrap().unwrap().0, 1);
    assert!(it.valid());
    assert_eq!(it.next().unwrap().unwrap().0, 2);
    assert!(!it.valid());
    assert!(it.next().is_none());
    assert!(it.status().is_ok());
    // The iterator is a prefix: writes after its creation are not in it.
    let it = db.get_updates_since(0).unwrap();
    db.put(b"c", b"3").unwrap();
    assert_eq!(it.count(), 2);
}

/// Writes `n` single puts numbered from `from`, flushing every `flush_every` (each flush
/// switches to a new WAL).
fn write_puts(db: &Db, from: u64, n: u64, flush_every: u64) -> Vec<Step> {
    let mut steps = Vec::new();
    for i in from..from + n {
        let s = put_step(i);
        db.write(batch_of(&s)).unwrap();
        steps.push(s);
        if (i + 1) % flush_every == 0 {
            db.flush().unwrap();
        }
    }
    steps
}

#[test]
fn batches_across_wal_switches_come_from_the_archive() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let db = Db::open(&archiving(mem_options(&fs)), &dir).unwrap();
    let steps = write_puts(&db, 0, 100, 7);
    assert!(archive_names(&fs, &dir).len() >= 10, "{:?}", archive_names(&fs, &dir));
    assert_eq!(updates(&db, 0), expected(1, &steps));
    assert_eq!(updates(&db, 50), expected(51, &steps[50..]));
    assert_eq!(updates(&db, 99), expected(100, &steps[99..]));
    assert_eq!(updates(&db, 100), vec![]);
}

#[test]
fn without_the_archive_only_the_live_wals_are_read() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let db = Db::open(&mem_options(&fs), &dir).unwrap();
    write_puts(&db, 0, 30, 10);
    db.put(b"x", b"y").unwrap(); // sequence 31, in the live WAL
    assert!(archive_names(&fs, &dir).is_empty());
    // A flush wakes its waiters before it deletes the WALs it made obsolete: wait for that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let e = loop {
        match db.get_updates_since(0) {
            Err(e) if e.to_string().contains("starts at 31") => break e,
            _ if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => panic!("flushed WALs are deleted: {:?}", other.map(|_| ())),
        }
    };
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("oldest batch the WAL files hold starts at 31"), "{e}");
    assert_eq!(updates(&db, 30), expected(31, &[vec![(b"x".to_vec(), Some(b"y".to_vec()))]]));
}

#[test]
fn a_reopen_keeps_the_run_whole() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let mut all = Vec::new();
    for round in 0..3 {
        let db = Db::open(&archiving(mem_options(&fs)), &dir).unwrap();
        all.extend(write_puts(&db, round * 20, 20, 8));
        assert_eq!(updates(&db, 0), expected(1, &all), "round {round}");
    }
    let db = Db::open(&archiving(mem_options(&fs)), &dir).unwrap();
    assert_eq!(updates(&db, 0), expected(1, &all));
    assert_eq!(updates(&db, 45), expected(46, &all[45..]));
    // The archive is not replayed: the DB holds what was written, once.
    assert_eq!(db.get(b"k00059").unwrap().as_deref(), Some(&b"v59"[..]));
    drop(db);
    Db::destroy(&archiving(mem_options(&fs)), &dir).unwrap();
    assert!(!fs.exists(&dir.join("archive")), "destroy removes the archive");
}

/// Process kills and power losses (clean and torn) with frequent memtable switches, so WALs
/// are cut while later ones survive: after each reopen the run from sequence 0 is exactly the
/// writes that survived, in order, from the archive and the live WAL. Archived WALs that a
/// killed process never synced must survive a later power loss too.
#[test]
fn after_crashes_the_run_is_exactly_the_batches_that_survived() {
    for seed in 0..25u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mem = MemFs::new();
        let dir = PathBuf::from("/db");
        // Every write that survived, in order, each with the sequence it took.
        let mut survived: Vec<Step> = Vec::new();
        let mut counter = 0u64;
        for cycle in 0..4 {
            let view = FaultFs::new(Arc::new(mem.clone()), seed);
            let mut o = archiving(Options { fs: Arc::new(view.clone()), ..Options::default() });
            o.write_buffer_size = 4 << 10;
            let db = Db::open(&o, &dir).unwrap();
            assert_eq!(updates(&db, 0), expected(1, &survived), "seed {seed} cycle {cycle}");
            let mut steps = Vec::new();
            for _ in 0..rng.gen_range(1..120) {
                let n = rng.gen_range(1..4);
                let step: Step = (0..n)
                    .map(|_| {
                        counter += 1;
                        let k = format!("k{}", rng.gen_range(0..40)).into_bytes();
                        let v = rng.gen_bool(0.8).then(|| vec![b'v'; rng.gen_range(0..300)]);
                        (k, v)
                    })
                    .collect();
                let sync = rng.gen_bool(0.05);
                db.write_opt(
                    batch_of(&step),
                    &WriteOptions { sync, disable_wal: false, ..WriteOptions::default() },
                )
                .unwrap();
                steps.push(step);
            }
            let mode = match rng.gen_range(0..3) {
                0 => CrashMode::ProcessKill,
                1 => CrashMode::PowerLoss,
                _ => CrashMode::TornPowerLoss { seed: rng.gen() },
            };
            view.kill();
            mem.crash(mode);
            drop(db);
            let o = archiving(Options { fs: Arc::new(mem.clone()), ..Options::default() });
            let db = Db::open(&o, &dir).unwrap();
            // The survivors are a prefix of this cycle's steps: the last sequence says which.
            let before: u64 = survived.iter().map(|s| s.len() as u64).sum();
            let mut seq = before;
            let mut kept = 0;
            while kept < steps.len() && seq < db.latest_sequence_number() {
                seq += steps[kept].len() as u64;
                kept += 1;
            }
            assert_eq!(seq, db.latest_sequence_number(), "seed {seed} cycle {cycle} {mode:?}");
            survived.extend(steps.into_iter().take(kept));
            assert_eq!(
                updates(&db, 0),
                expected(1, &survived),
                "seed {seed} cycle {cycle} {mode:?}"
            );
            assert_eq!(
                updates(&db, before),
                expected(before + 1, &survived[survived.len() - kept..]),
                "seed {seed} cycle {cycle}"
            );
        }
    }
}

#[test]
fn a_damaged_record_is_an_error_naming_file_and_offset() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let db = Db::open(&archiving(mem_options(&fs)), &dir).unwrap();
    for i in 0..3u64 {
        db.put(format!("key{i}"), vec![b'x'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.put(b"after", b"flush").unwrap();
    let names = archive_once(&fs, &dir, |n| n.len() == 1);
    assert_eq!(names.len(), 1, "{names:?}");
    let path = dir.join("archive").join(&names[0]);
    let mut bytes = fs.read_file(&path).unwrap();
    // The second batch's value: the 100 x's after the first occurrence's end.
    let first = bytes.windows(100).position(|w| w == [b'x'; 100]).unwrap();
    let second =
        first + 100 + bytes[first + 100..].windows(100).position(|w| w == [b'x'; 100]).unwrap();
    bytes[second + 50] ^= 0xff;
    fs.write_file(&path, &bytes);

    let mut it = db.get_updates_since(0).unwrap();
    assert_eq!(it.next().unwrap().unwrap().0, 1);
    let Some(Err(e)) = it.next() else { panic!("the damaged batch must be an error") };
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    let Error::Corruption { file, offset, .. } = &e else { unreachable!() };
    assert_eq!(file, &path);
    assert!(*offset > 0 && (*offset as usize) < second, "{e}");
    assert!(it.next().is_none(), "an error ends the run");
    assert!(!it.valid());
    assert!(it.status().is_err());
    // From after the damage, the run is whole.
    assert_eq!(updates(&db, 3), expected(4, &[vec![(b"after".to_vec(), Some(b"flush".to_vec()))]]));
}

#[test]
fn a_write_without_the_wal_is_a_gap() {
    let fs = MemFs::new();
    let db = Db::open(&mem_options(&fs), "/db").unwrap();
    db.put(b"a", b"1").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"b", b"2");
    db.write_opt(b, &WriteOptions { sync: false, disable_wal: true, ..WriteOptions::default() })
        .unwrap();
    db.put(b"c", b"3").unwrap();
    let mut it = db.get_updates_since(0).unwrap();
    assert_eq!(it.next().unwrap().unwrap().0, 1);
    let Some(Err(e)) = it.next() else { panic!("sequence 2 is in no WAL") };
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("gap"), "{e}");
    assert!(it.next().is_none());
    assert_eq!(updates(&db, 2).len(), 1, "after the gap the run is whole");
}

#[test]
fn the_archive_is_purged_to_its_size_limit() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let mut o = mem_options(&fs);
    o.set_wal_size_limit_mb(1);
    // File sizes are what the limit counts: without zeros ahead, a WAL's is its records'.
    o.wal_zeros_ahead = false;
    let db = Db::open(&o, &dir).unwrap();
    let value = vec![b'v'; 100 << 10];
    for i in 0..40u64 {
        db.put(format!("k{i}"), &value).unwrap();
        if i % 2 == 1 {
            db.flush().unwrap();
        }
    }
    let size = |names: &[String]| -> u64 {
        names.iter().map(|n| fs.file_size(&dir.join("archive").join(n)).unwrap_or(0)).sum()
    };
    // The purge runs right after the archiving, after the flush has returned: wait for both.
    let names =
        archive_once(&fs, &dir, |n| n.iter().any(|n| n.as_str() > "000030") && size(n) <= 1 << 20);
    let total = size(&names);
    assert!(total <= 1 << 20, "archive holds {total} bytes in {names:?}");
    assert!(names.len() >= 4, "{names:?}");
    // The oldest were deleted: the start of the run is gone, its end is whole.
    let Err(e) = db.get_updates_since(0) else { panic!("purged") };
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let got = updates(&db, 32);
    assert_eq!(got.iter().map(|(s, _)| *s).collect::<Vec<_>>(), (33..=40).collect::<Vec<_>>());
}

#[test]
fn the_archive_is_purged_by_age() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut o = Options { create_if_missing: true, ..Options::default() };
    o.set_wal_ttl_seconds(1);
    let db = Db::open(&o, &dir).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    let fs = strata::env::OsFs;
    let first = archive_once(&fs, &dir, |n| n.len() == 1);
    assert_eq!(first.len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap(); // archives the second WAL, and purges the first
    let now = archive_once(&fs, &dir, |n| n.len() == 1 && n != first.as_slice());
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, first);
}
