//! The CLI on a DB holding wide-column entities: `dump-wal` and `dump-sst` show each entity's
//! columns, `get` its default column, and `verify` reads it clean.

use crate::{stdout, strata};

use strata::{Db, Options};

fn files_ending(dir: &std::path::Path, ext: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| p.to_str().unwrap().to_string())
        .collect()
}

#[test]
fn dumps_show_an_entitys_columns_and_get_its_default_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let opts = Options { create_if_missing: true, ..Options::default() };
    let db = Db::open(&opts, &path).unwrap();
    db.put_entity("user", &[("name", "Alice"), ("", "row")]).unwrap();
    drop(db);
    let wal = files_ending(&path, "log");
    assert_eq!(wal.len(), 1, "{wal:?}");
    let dump = stdout(&strata(&["dump-wal", &wal[0]]));
    assert!(dump.contains("'user' @ 1 : ENTITY => {'': 'row', 'name': 'Alice'}"), "{dump}");
    let db = Db::open(&opts, &path).unwrap();
    db.flush().unwrap();
    drop(db);
    let sst = files_ending(&path, "sst");
    assert_eq!(sst.len(), 1, "{sst:?}");
    let dump = stdout(&strata(&["dump-sst", &sst[0], "--verify"]));
    assert!(dump.contains(": ENTITY => {'': 'row', 'name': 'Alice'}"), "{dump}");
    let db_arg = path.to_str().unwrap();
    let got = stdout(&strata(&["--db", db_arg, "get", "user"]));
    assert_eq!(got.trim(), "row");
    let verify = stdout(&strata(&["--db", db_arg, "verify"]));
    assert!(verify.lines().last().is_some_and(|l| l.starts_with("clean:")), "{verify}");
}
