//! The CLI on a DB whose values were written to a blob file at commit and not flushed yet:
//! `dump-blob` reads the file without its footer and `verify` checks it as the WALs' file.

use crate::{stdout, strata};

use strata::{BlobOptions, Db, Options};

#[test]
fn dump_blob_and_verify_read_a_file_written_at_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let opts = Options {
        blob: BlobOptions {
            enable_blob_files: true,
            min_blob_size: 64,
            write_blobs_at_commit: true,
            ..BlobOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(&opts, &path).unwrap();
    for i in 0..5u32 {
        db.put(format!("k{i}"), format!("value {i} ").repeat(10)).unwrap();
    }
    // Closed without a flush: the file keeps no footer, and the WAL points into it.
    drop(db);
    let blob: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "blob"))
        .collect();
    assert_eq!(blob.len(), 1, "{blob:?}");
    let dump = stdout(&strata(&["dump-blob", blob[0].to_str().unwrap()]));
    assert!(dump.contains("'k3' => 'value 3 value 3"), "{dump}");
    assert!(dump.contains("records: 5,") && dump.contains("no footer yet"), "{dump}");
    let verify = stdout(&strata(&["--db", path.to_str().unwrap(), "verify"]));
    let name = blob[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        verify.lines().any(|l| l.starts_with(&format!("OK {name}")) && l.contains("no footer")),
        "{verify}"
    );
    assert!(verify.lines().last().is_some_and(|l| l.starts_with("clean:")), "{verify}");
}
