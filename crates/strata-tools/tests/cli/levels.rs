//! The CLI opens a DB whose tables sit deeper than the default 7 levels (a universal or
//! tiered family keeps its runs down to its `num_levels`, often 40).

use crate::{stdout, strata};
use std::path::Path;

use strata::{CompactionStyle, Db, Options};

/// A universal DB of 40 levels compacted into one run at level 39.
fn universal_db(path: &Path) {
    let opts = Options {
        compaction_style: CompactionStyle::Universal,
        num_levels: 40,
        ..Options::default()
    };
    let db = Db::open(&opts, path).unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i:02}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
}

#[test]
fn commands_open_a_db_with_tables_below_the_default_levels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    universal_db(&path);
    let db = path.to_str().unwrap();
    let lsm = stdout(&strata(&["--db", db, "lsm"]));
    assert!(lsm.contains("L39: 1 files"), "{lsm}");
    assert_eq!(stdout(&strata(&["--db", db, "get", "k07"])), "v7\n");
    assert_eq!(stdout(&strata(&["--db", db, "scan", "--from", "k48"])), "k48 => v48\nk49 => v49\n");
    stdout(&strata(&["--db", db, "put", "k50", "v50"]));
    stdout(&strata(&["--db", db, "compact"]));
    assert_eq!(stdout(&strata(&["--db", db, "get", "k50"])), "v50\n");
    let verify = stdout(&strata(&["--db", db, "verify"]));
    assert!(verify.lines().last().is_some_and(|l| l.starts_with("clean:")), "{verify}");
}
