//! Contract rule 6: after a failed WAL write or sync, that write and every later one fail, and
//! reopening replays only what was durable. Contract rule 5: a full disk loses nothing
//! acknowledged.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Error, Options, WriteOptions};

fn opts(fs: &FaultFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

fn sync() -> WriteOptions {
    WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() }
}

#[test]
fn failed_sync_poisons_the_db() {
    for kind in [FaultKind::Eio, FaultKind::NoSpace] {
        let mem = MemFs::new();
        let path = PathBuf::from("/db");
        let fs = FaultFs::new(Arc::new(mem.clone()), 1);
        let db = Db::open(&opts(&fs), &path).unwrap();
        db.put_opt(b"before", b"1", &sync()).unwrap();
        fs.add_rule(FaultRule {
            op: FaultOp::Sync,
            kind,
            nth: 1,
            persistent: false,
            path_contains: Some(".log".into()),
        });
        let err = db.put_opt(b"failed", b"2", &sync()).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        if kind == FaultKind::NoSpace {
            assert!(err.is_no_space());
        }
        // The fault was a single one, yet the DB must not re-sync and acknowledge.
        let later = db.put_opt(b"after", b"3", &sync()).unwrap_err();
        assert!(matches!(later, Error::Background(_)), "{later}");
        assert!(db.put(b"after2", b"4").is_err());
        assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]), "reads still work");
        assert_eq!(db.property_int_value("strata.background-errors").unwrap(), Some(1));
        fs.kill();
        mem.crash(CrashMode::PowerLoss);
        drop(db);

        let fs2 = FaultFs::new(Arc::new(mem.clone()), 2);
        let db = Db::open(&opts(&fs2), &path).unwrap();
        assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(db.get(b"after").unwrap(), None);
        assert_eq!(db.get(b"after2").unwrap(), None);
        db.put_opt(b"resumed", b"5", &sync()).unwrap();
    }
}

#[test]
fn failed_append_poisons_and_reopen_recovers() {
    let mem = MemFs::new();
    let path = PathBuf::from("/db");
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let db = Db::open(&opts(&fs), &path).unwrap();
    for i in 0..100 {
        db.put(format!("k{i}"), b"v").unwrap();
    }
    fs.add_rule(FaultRule {
        op: FaultOp::Append,
        kind: FaultKind::ShortWrite,
        nth: 1,
        persistent: false,
        path_contains: Some(".log".into()),
    });
    assert!(db.put(b"torn", vec![b'x'; 1000]).is_err());
    assert!(db.put(b"next", b"v").is_err());
    drop(db);
    // A process exit (no power loss): everything acknowledged is there, the torn write is not.
    let db = Db::open(&opts(&FaultFs::new(Arc::new(mem.clone()), 3)), &path).unwrap();
    for i in 0..100 {
        assert!(db.get(format!("k{i}")).unwrap().is_some(), "k{i}");
    }
    assert_eq!(db.get(b"torn").unwrap(), None);
    assert_eq!(db.get(b"next").unwrap(), None);
}

#[test]
fn flush_failure_on_full_disk_loses_nothing() {
    let mem = MemFs::new();
    let path = PathBuf::from("/db");
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let db = Db::open(&opts(&fs), &path).unwrap();
    for i in 0..50 {
        db.put_opt(format!("k{i}"), b"v", &sync()).unwrap();
    }
    fs.add_rule(FaultRule {
        op: FaultOp::Append,
        kind: FaultKind::NoSpace,
        nth: 1,
        persistent: true,
        path_contains: Some(".sst".into()),
    });
    let err = db.flush().unwrap_err();
    assert!(err.to_string().contains("No space") || err.is_no_space(), "{err}");
    assert!(db.put(b"x", b"y").is_err(), "writes stop after a background error");
    fs.clear();
    drop(db);
    // Space is back: reopen replays the WAL, nothing acknowledged is lost.
    let db = Db::open(&opts(&FaultFs::new(Arc::new(mem.clone()), 4)), &path).unwrap();
    for i in 0..50 {
        assert!(db.get(format!("k{i}")).unwrap().is_some(), "k{i}");
    }
    db.put(b"x", b"y").unwrap();
    db.flush().unwrap();
}
