//! `wait_for_compact` returns only once the finished compactions' obsolete tables are gone
//! from disk. The file system here takes 200 ms to remove a table file, so a compaction that
//! stopped counting as running before its inputs were deleted lets the waiter see them.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::forward_fs::{ForwardFs, Hooks};
use strata::env::{FileSystem, MemFs};
use strata::{Db, Options, Result};

/// Table removals take 200 ms.
struct SlowTableRemoval;

impl Hooks for SlowTableRemoval {
    fn remove(&self, fs: &MemFs, path: &Path) -> Result<()> {
        if path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(Duration::from_millis(200));
        }
        fs.remove(path)
    }
}

fn tables_on_disk(mem: &MemFs) -> BTreeSet<String> {
    mem.list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "sst"))
        .collect()
}

#[test]
fn no_obsolete_table_is_left_when_the_wait_returns() {
    let mem = MemFs::new();
    let opts = Options {
        fs: Arc::new(ForwardFs(mem.clone(), SlowTableRemoval)),
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    for round in 0..3 {
        // Two flushed L0 tables trigger a compaction in the background; the wait must cover
        // the deletion of its inputs.
        for t in 0..2 {
            for k in 0..50 {
                db.put(format!("k{k:03}"), format!("v{round}-{t}")).unwrap();
            }
            db.flush().unwrap();
        }
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        let live: BTreeSet<String> = db
            .live_files_metadata()
            .into_iter()
            .map(|f| f.name.trim_start_matches('/').to_string())
            .collect();
        assert_eq!(tables_on_disk(&mem), live, "round {round}: tables on disk are the live ones");
        assert_eq!(db.get("k007").unwrap(), Some(format!("v{round}-1").into_bytes()));
    }
}
