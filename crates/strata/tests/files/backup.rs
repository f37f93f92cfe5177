//! `BackupEngine` (`docs/checkpoint_backup.md`): a backup restored equals its source at the
//! backup's sequence number; later backups share unchanged tables; checksums are verified on
//! restore and by `verify_backup`; `purge_old_backups` keeps the newest and frees unshared tables.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{BackupEngine, Db, Error, IteratorMode, Options};

fn opts(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), create_if_missing: true, ..Options::default() }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

fn shared(fs: &MemFs) -> Vec<String> {
    fs.list(Path::new("/backups/shared")).unwrap()
}

#[test]
fn backups_restore_to_their_source_and_share_tables() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..500 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    let engine = BackupEngine::open(&opts(&fs), "/backups").unwrap();
    let first = engine.create_new_backup(&db).unwrap();
    let at_first = contents(&db);
    assert_eq!(first.id, 1);
    assert_eq!(first.sequence, db.latest_sequence_number());
    let tables_after_first = shared(&fs).len();

    for i in (0..500).step_by(2) {
        db.put(format!("k{i:04}"), b"changed").unwrap();
    }
    db.delete(b"k0001").unwrap();
    let second = engine.create_new_backup(&db).unwrap();
    let at_second = contents(&db);
    assert_eq!(second.id, 2);
    // The first backup's table is still live in the DB: the second shares it.
    assert_eq!(shared(&fs).len(), tables_after_first + 1, "{:?}", shared(&fs));
    assert_eq!(engine.backups().unwrap().iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2]);
    engine.verify_backup(1).unwrap();
    engine.verify_backup(2).unwrap();

    engine.restore_from_backup(1, "/r1").unwrap();
    let r1 = Db::open(&opts(&fs), "/r1").unwrap();
    assert_eq!(contents(&r1), at_first);
    assert_eq!(r1.latest_sequence_number(), first.sequence);
    let info = engine.restore_from_latest_backup("/r2").unwrap();
    assert_eq!(info.id, 2);
    let r2 = Db::open(&opts(&fs), "/r2").unwrap();
    assert_eq!(contents(&r2), at_second);
    drop((r1, r2));

    // A restore never overwrites a DB.
    let e = engine.restore_from_latest_backup("/db").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");

    engine.purge_old_backups(1).unwrap();
    assert_eq!(engine.backups().unwrap().iter().map(|b| b.id).collect::<Vec<_>>(), [2]);
    assert!(engine.verify_backup(1).is_err(), "purged");
    engine.verify_backup(2).unwrap();
    engine.restore_from_backup(2, "/r3").unwrap();
    assert_eq!(contents(&Db::open(&opts(&fs), "/r3").unwrap()), at_second);
    // Reopening the engine finds the same backups.
    drop(engine);
    let engine = BackupEngine::open(&opts(&fs), "/backups").unwrap();
    assert_eq!(engine.backups().unwrap().len(), 1);
}

#[test]
fn a_damaged_backup_file_is_found_and_never_restored() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..100 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    let engine = BackupEngine::open(&opts(&fs), "/backups").unwrap();
    engine.create_new_backup(&db).unwrap();
    let table = Path::new("/backups/shared").join(&shared(&fs)[0]);
    let mut bytes = fs.read_file(&table).unwrap();
    bytes[3] ^= 1;
    fs.write_file(&table, &bytes);
    let e = engine.verify_backup(1).unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
    let e = engine.restore_from_latest_backup("/restored").unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(!fs.exists(Path::new("/restored")), "no half-restored DB");
    // A damaged meta file names itself.
    fs.write_file(Path::new("/backups/meta/1"), b"strata-backup 1\ntimestamp 1\n");
    let e = engine.verify_backup(1).unwrap_err();
    assert!(e.to_string().contains("meta") && e.to_string().contains("cut short"), "{e}");
}
