//! `Checkpoint::create` (`docs/checkpoint_backup.md`): a checkpoint taken while a writer runs opens
//! as a DB equal to the source at one sequence number; its tables are hard links (or copies where
//! links fail); it is independent of the source afterwards; a target that exists is refused and a
//! leftover temporary directory is cleaned up.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::forward_fs::{ForwardFs, Hooks};
use strata::env::{FileSystem, MemFs};
use strata::{Checkpoint, Db, Error, IteratorMode, Options};

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

/// The DB after the first `n` writes of the writer below.
fn model(n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..n {
        m.insert(format!("key{:03}", i % 97).into_bytes(), format!("value{i}").into_bytes());
    }
    m
}

/// One writer, one put per write (write i has sequence number base + i + 1, `model(i)`), at
/// least 2000 of them, until `stop`.
fn spawn_writer(db: &Arc<Db>, stop: &Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let (db, stop) = (db.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) || i < 2000 {
            db.put(format!("key{:03}", i % 97), format!("value{i}")).unwrap();
            i += 1;
        }
    })
}

#[test]
fn checkpoint_under_writes_is_the_db_at_one_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts =
        Options { create_if_missing: true, write_buffer_size: 16 << 10, ..Options::default() };
    let db = Arc::new(Db::open(&opts, &dir).unwrap());
    let base = db.latest_sequence_number();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&db, &stop);
    let mut seen = Vec::new();
    for round in 0..4 {
        let cp_dir = tmp.path().join(format!("cp{round}"));
        let cp = Checkpoint::create(&db, &cp_dir).unwrap();
        assert!(cp.tables_copied == 0, "same filesystem: links");
        let copy = Db::open(&Options::default(), &cp_dir).unwrap();
        assert_eq!(copy.latest_sequence_number(), cp.sequence);
        assert_eq!(contents(&copy), model(cp.sequence - base), "checkpoint at {}", cp.sequence);
        // The checkpoint is a DB of its own: writing to it leaves the source alone.
        copy.put(b"only-in-checkpoint", b"x").unwrap();
        copy.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        drop(copy);
        assert_eq!(db.get(b"only-in-checkpoint").unwrap(), None);
        seen.push(cp.sequence);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    // The source still opens whole after its tables were linked.
    let n = db.latest_sequence_number() - base;
    drop(db);
    let db = Db::open(&Options::default(), &dir).unwrap();
    assert_eq!(contents(&db), model(n));
}

/// `create_with_log_size` (RocksDB's `log_size_for_flush`): with a budget the WALs fit in,
/// nothing is flushed and the checkpoint replays copied WAL prefixes; it is still the DB at
/// one sequence number while a writer runs (and rolls WALs). With 0, a flush and one empty
/// WAL.
#[test]
fn checkpoints_that_copy_the_wals_are_the_db_at_one_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts =
        Options { create_if_missing: true, write_buffer_size: 16 << 10, ..Options::default() };
    let db = Arc::new(Db::open(&opts, &dir).unwrap());
    let base = db.latest_sequence_number();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&db, &stop);
    let wal_names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    for round in 0..4 {
        let cp_dir = tmp.path().join(format!("wcp{round}"));
        let cp = Checkpoint::create_with_log_size(&db, &cp_dir, u64::MAX).unwrap();
        assert!(!wal_names(&cp_dir).is_empty(), "the WALs are copied");
        let copy = Db::open(&Options::default(), &cp_dir).unwrap();
        assert_eq!(copy.latest_sequence_number(), cp.sequence);
        assert_eq!(contents(&copy), model(cp.sequence - base), "checkpoint at {}", cp.sequence);
    }
    let flushed = tmp.path().join("fcp");
    let cp = Checkpoint::create_with_log_size(&db, &flushed, 0).unwrap();
    let wals = wal_names(&flushed);
    assert_eq!(wals.len(), 1, "{wals:?}");
    assert_eq!(std::fs::metadata(flushed.join(&wals[0])).unwrap().len(), 0);
    let copy = Db::open(&Options::default(), &flushed).unwrap();
    assert_eq!(contents(&copy), model(cp.sequence - base));
    drop(copy);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    // A WAL budget smaller than the WALs flushes instead.
    db.put(b"last", b"x").unwrap();
    let small = tmp.path().join("scp");
    let cp = Checkpoint::create_with_log_size(&db, &small, 1).unwrap();
    assert_eq!(wal_names(&small).len(), 1);
    let copy = Db::open(&Options::default(), &small).unwrap();
    assert_eq!(copy.get(b"last").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(copy.latest_sequence_number(), cp.sequence);
    // The source's file deletions are back on: a compaction removes its inputs.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let tables = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"));
    assert_eq!(tables.count(), db.live_files().unwrap().len());
}

#[test]
fn existing_target_is_refused_and_leftovers_are_removed() {
    let fs = MemFs::new();
    let opts = Options { fs: Arc::new(fs.clone()), create_if_missing: true, ..Options::default() };
    let db = Db::open(&opts, "/db").unwrap();
    db.put(b"a", b"1").unwrap();
    fs.create_dir_all(Path::new("/taken")).unwrap();
    let e = Checkpoint::create(&db, "/taken").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("/taken"), "{e}");
    // What an interrupted checkpoint leaves: a temporary directory, never the target.
    fs.create_dir_all(Path::new("/cp.checkpoint-tmp")).unwrap();
    fs.write_file(Path::new("/cp.checkpoint-tmp/000005.sst"), b"half");
    let cp = Checkpoint::create(&db, "/cp").unwrap();
    assert!(!fs.exists(Path::new("/cp.checkpoint-tmp")));
    assert_eq!(cp.tables_linked, 1);
    let copy = Db::open(&opts, "/cp").unwrap();
    assert_eq!(copy.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    // A read-only DB cannot flush, so it makes no checkpoint.
    drop(copy);
    let ro = Db::open_read_only(&opts, "/cp").unwrap();
    assert!(matches!(Checkpoint::create(&ro, "/cp2"), Err(Error::NotSupported(_))));
}

/// MemFs without hard links (`ForwardFs` keeps `FileSystem::link`'s refusal), as a
/// filesystem boundary between source and target makes it.
struct NoLinks;

impl Hooks for NoLinks {}

#[test]
fn tables_are_copied_where_links_fail() {
    let mem = MemFs::new();
    let opts = Options {
        fs: Arc::new(ForwardFs(mem.clone(), NoLinks)),
        create_if_missing: true,
        // Four L0 tables would start a compaction merging them.
        disable_auto_compactions: true,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    for i in 0..100 {
        db.put(format!("k{i}"), b"v").unwrap();
        if i % 40 == 0 {
            db.flush().unwrap();
        }
    }
    let cp = Checkpoint::create(&db, "/cp").unwrap();
    assert_eq!((cp.tables_linked, cp.tables_copied), (0, 4));
    let copy = Db::open(&opts, "/cp").unwrap();
    assert_eq!(contents(&copy), contents(&db));
}

/// Families `a` and `b` beside `default`, with small write buffers (one of them universal) so
/// that their memtables fill and flush at different moments.
fn three_family_descriptors() -> Vec<strata::ColumnFamilyDescriptor> {
    use strata::{ColumnFamilyDescriptor, CompactionStyle};
    let family = |buffer: usize, style: CompactionStyle| Options {
        write_buffer_size: buffer,
        compaction_style: style,
        ..Options::default()
    };
    vec![
        ColumnFamilyDescriptor::new("default", family(64 << 10, CompactionStyle::Level)),
        ColumnFamilyDescriptor::new("a", family(256 << 10, CompactionStyle::Level)),
        ColumnFamilyDescriptor::new("b", family(64 << 10, CompactionStyle::Universal)),
    ]
}

/// Every family's contents, in the order of [`three_family_descriptors`].
fn family_contents(db: &Db) -> Vec<BTreeMap<Vec<u8>, Vec<u8>>> {
    ["default", "a", "b"]
        .iter()
        .map(|name| {
            let cf = db.cf_handle(name).unwrap();
            db.iterator_cf(&cf, IteratorMode::Start)
                .map(|r| r.unwrap())
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect()
        })
        .collect()
}

/// Writers each put one key and value into all three families in one batch. `copy` makes a
/// copy of the DB (a checkpoint, or a backup restored) and returns its directory and the
/// sequence number it claims; every copy must hold the same data in every family, and with
/// one writer exactly the batches up to that sequence number.
fn copies_under_atomic_cross_family_writes(
    writers: u64,
    copy: &dyn Fn(&Db, &Path, usize) -> (std::path::PathBuf, u64),
) {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    let db = Arc::new(
        Db::open_cf_descriptors(&opts, tmp.path().join("db"), three_family_descriptors()).unwrap(),
    );
    let base = db.latest_sequence_number();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let cfs: Vec<_> =
                    ["default", "a", "b"].iter().map(|n| db.cf_handle(n).unwrap()).collect();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) || i < 500 {
                    let mut batch = strata::WriteBatch::new();
                    let (key, value) = (
                        format!("key{:03}", (i * 7 + w) % 211),
                        format!("w{w}-{i}-{}", "x".repeat(40)),
                    );
                    for cf in &cfs {
                        batch.put_cf(cf, &key, &value);
                    }
                    db.write(batch).unwrap();
                    i += 1;
                }
                i
            })
        })
        .collect();
    for round in 0..8 {
        std::thread::sleep(std::time::Duration::from_millis(15));
        let (dir, sequence) = copy(&db, tmp.path(), round);
        let copy = Db::open_cf_descriptors(&opts, &dir, three_family_descriptors()).unwrap();
        assert_eq!(copy.latest_sequence_number(), sequence);
        let fams = family_contents(&copy);
        assert_eq!(fams[0], fams[1], "copy {round} at {sequence}: default and a differ");
        assert_eq!(fams[0], fams[2], "copy {round} at {sequence}: default and b differ");
        if writers == 1 {
            // Batch i has sequence numbers base + 3i + 1 ..= base + 3i + 3.
            let batches = sequence - base;
            assert_eq!(batches % 3, 0, "copy {round}: {sequence} is inside a batch");
            let mut want = BTreeMap::new();
            for i in 0..batches / 3 {
                let (k, v) =
                    (format!("key{:03}", (i * 7) % 211), format!("w0-{i}-{}", "x".repeat(40)));
                want.insert(k.into_bytes(), v.into_bytes());
            }
            assert_eq!(fams[0], want, "copy {round}: not the DB at {sequence}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
}

/// A checkpoint is one sequence number across families: a batch written to three families is
/// in all of the checkpoint's families or in none, and `sequence` is exactly where it is.
#[test]
fn checkpoints_hold_atomic_cross_family_batches_whole() {
    let checkpoint = |db: &Db, tmp: &Path, round: usize| {
        let dir = tmp.join(format!("cp{round}"));
        let cp = Checkpoint::create(db, &dir).unwrap();
        (dir, cp.sequence)
    };
    copies_under_atomic_cross_family_writes(2, &checkpoint);
    copies_under_atomic_cross_family_writes(1, &checkpoint);
}

/// Backups capture as checkpoints do: a restored backup holds whole batches only.
#[test]
fn backups_hold_atomic_cross_family_batches_whole() {
    let backup = |db: &Db, tmp: &Path, round: usize| {
        let engine = strata::BackupEngine::open(&Options::default(), tmp.join("backups")).unwrap();
        let info = engine.create_new_backup(db).unwrap();
        let dir = tmp.join(format!("restored{round}"));
        engine.restore_from_backup(info.id, &dir).unwrap();
        (dir, info.sequence)
    };
    copies_under_atomic_cross_family_writes(2, &backup);
    copies_under_atomic_cross_family_writes(1, &backup);
}
