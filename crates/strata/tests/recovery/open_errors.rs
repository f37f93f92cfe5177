//! Opening with bad paths and mismatched options gives clear errors and touches nothing: an
//! empty path, a regular file, `num_levels` below the deepest populated level, and a MANIFEST
//! without CURRENT that is not an interrupted creation's. And the directory lock: no other
//! process can open a DB this process holds (`docs/contract.md` rule 10).

use std::path::Path;

use strata::{Db, Error, Options};

fn invalid_argument(r: strata::Result<Db>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("expected InvalidArgument, the open succeeded"),
    }
}

#[test]
fn an_empty_path_is_refused_and_leaves_no_lock_file() {
    let cwd_lock = Path::new("LOCK");
    let existed = cwd_lock.exists();
    let msg = invalid_argument(Db::open(&Options::default(), ""));
    assert!(msg.contains("empty"), "{msg}");
    assert_eq!(cwd_lock.exists(), existed, "a stray LOCK was left in the current directory");
}

#[test]
fn a_regular_file_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"data").unwrap();
    let msg = invalid_argument(Db::open(&Options::default(), &file));
    assert!(msg.contains("is not a directory"), "{msg}");
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
}

#[test]
fn too_few_levels_is_an_invalid_argument_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(&Options::default(), dir.path()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i}"), b"v").unwrap();
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_eq!(db.property_int_value("rocksdb.num-files-at-level6").unwrap(), Some(1));
    }
    let opts = Options { num_levels: 3, ..Options::default() };
    let msg = invalid_argument(Db::open(&opts, dir.path()));
    assert!(msg.contains("num_levels") && msg.contains("at least 7"), "{msg}");
    // Nothing was damaged: the right option opens it.
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get(b"k7").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_lone_garbage_manifest_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("MANIFEST-000001");
    let garbage = b"this is not a MANIFEST the engine wrote".to_vec();
    std::fs::write(&manifest, &garbage).unwrap();
    match Db::open(&Options::default(), dir.path()) {
        Err(e) if e.is_corruption() => {
            assert!(e.to_string().contains("MANIFEST-000001"), "{e}");
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(_) => panic!("opened over a foreign MANIFEST"),
    }
    assert_eq!(std::fs::read(&manifest).unwrap(), garbage, "the file was changed or deleted");
}

#[test]
fn a_manifest_of_an_interrupted_creation_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // Make a real creation's MANIFEST, then take CURRENT away as a crash before it would.
    drop(Db::open(&Options::default(), dir.path()).unwrap());
    let first = std::fs::read(dir.path().join("MANIFEST-000001")).unwrap();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    // Creation writes one record: a 7-byte header (checksum, little-endian u16 length, type)
    // and the snapshot edit. What follows it came from the open after CURRENT was installed.
    let record = 7 + usize::from(u16::from_le_bytes([first[4], first[5]]));
    for cut in [record, record / 2, 3, 0] {
        std::fs::write(dir.path().join("MANIFEST-000001"), &first[..cut]).unwrap();
        let db = Db::open(&Options::default(), dir.path())
            .unwrap_or_else(|e| panic!("creation cut at {cut} bytes: {e}"));
        db.put(b"k", b"v").unwrap();
        drop(db);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }
}

/// Run by [`another_process_can_open`] in a child process (the env variable names the DB):
/// tries a read-write open and prints what happened. Does nothing when run as a test.
#[test]
fn lock_probe_child() {
    let Ok(dir) = std::env::var("STRATA_LOCK_PROBE_DIR") else { return };
    let outcome = match Db::open(&Options::default(), &dir) {
        Ok(_) => "opened".to_string(),
        Err(Error::Locked(_)) => "locked".to_string(),
        Err(e) => format!("error {e}"),
    };
    println!("PROBE-OUTCOME {outcome}");
}

/// [`lock_probe_child`]'s name as the test harness spells it: this module's path in the test
/// binary (the crate's own name dropped), so the name follows the file if it moves.
fn lock_probe_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_crate, module)) => format!("{module}::lock_probe_child"),
        None => "lock_probe_child".to_string(),
    }
}

/// Whether a second process can open `dir` read-write now (this test binary, re-run with
/// only [`lock_probe_child`]).
fn another_process_can_open(dir: &Path) -> bool {
    let exe = std::env::current_exe().unwrap();
    let name = lock_probe_test_name();
    let out = std::process::Command::new(exe)
        .args(["--exact", name.as_str(), "--nocapture", "--test-threads=1"])
        .env("STRATA_LOCK_PROBE_DIR", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("PROBE-OUTCOME ").map(|(_, o)| o.trim()))
        .unwrap_or_else(|| {
            panic!(
                "the probe printed no outcome: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    match line {
        "opened" => true,
        "locked" => false,
        other => panic!("the probe's open failed otherwise: {other}"),
    }
}

/// Closing any descriptor of `LOCK` drops the POSIX record lock the process holds on it, so
/// nothing this process does to an open DB (another open refused, a read-only open, a
/// checkpoint, a backup, a refused destroy or repair) may open `LOCK` a second time.
#[cfg(unix)]
#[test]
fn nothing_done_in_the_process_lets_another_process_open_a_db_it_holds() {
    use strata::{BackupEngine, Checkpoint, DbWithTtl};
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let opts = Options::default();
    let db = Db::open(&opts, &db_dir).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert!(!another_process_can_open(&db_dir), "the open DB itself");

    assert!(matches!(Db::open(&opts, &db_dir), Err(Error::Locked(_))));
    assert!(matches!(Db::open(&opts, db_dir.join(".")), Err(Error::Locked(_))));
    assert!(!another_process_can_open(&db_dir), "after refused opens in this process");

    let ttl = DbWithTtl::open(&opts, &db_dir, std::time::Duration::from_secs(60));
    assert!(matches!(ttl, Err(Error::Locked(_))));
    assert!(matches!(Db::destroy(&opts, &db_dir), Err(Error::Locked(_))));
    assert!(matches!(Db::repair(&opts, &db_dir), Err(Error::Locked(_))));
    assert!(!another_process_can_open(&db_dir), "after a refused TTL open, destroy and repair");

    let ro = Db::open_read_only(&opts, &db_dir).unwrap();
    assert_eq!(ro.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(ro);
    assert!(!another_process_can_open(&db_dir), "after a read-only open and close");

    Checkpoint::create(&db, dir.path().join("cp")).unwrap();
    let backups = BackupEngine::open(&opts, dir.path().join("backups")).unwrap();
    backups.create_new_backup(&db).unwrap();
    assert!(!another_process_can_open(&db_dir), "after a checkpoint and a backup");

    db.put(b"k2", b"v2").unwrap();
    drop(db);
    assert!(another_process_can_open(&db_dir), "the lock goes with the Db");
}
