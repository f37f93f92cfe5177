//! Regression: a file ingested while a compaction runs must not land at that compaction's
//! output level inside the key range of its inputs, even where no input file overlaps the
//! ingested file. The compaction's output files span the whole range, so installing them
//! next to the ingested file made two files overlap in one level: the edit was refused and
//! the DB went read-only with a background error.

use std::path::Path;
use std::sync::Arc;

use crate::compaction_gate::{Gate, Holding, OpenOnDrop};
use strata::env::{FileSystem, MemFs};
use strata::{Db, Options, SstFileWriter};

#[test]
fn ingestion_avoids_the_output_range_of_a_running_compaction() {
    let fs = MemFs::new();
    let gate = Arc::new(Gate::default());
    let mut opts = Options {
        fs: Arc::new(fs.clone()),
        num_levels: 4,
        level0_file_num_compaction_trigger: 3,
        ..Options::default()
    };
    opts.set_compaction_filter_factory(Holding(gate.clone()));
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    let _opens = OpenOnDrop(gate.clone());
    // Three L0 files, two of them overlapping (no trivial move): their compaction into the
    // last level (an empty DB's base level) writes one file spanning "a".."z".
    for keys in [["a", "b"], ["a", "b"], ["y", "z"]] {
        for k in keys {
            db.put(k, format!("old-{k}")).unwrap();
        }
        db.flush().unwrap();
    }
    gate.wait_entered();

    // "m" overlaps no file, no memtable and no input of the running compaction: before the
    // fix it went to the last level at sequence number 0.
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut w = SstFileWriter::create(&opts);
    w.open("/ext/m.sst").unwrap();
    w.put("m", "ingested").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(["/ext/m.sst"]).unwrap();
    let files = db.live_files_metadata();
    let m = files
        .iter()
        .find(|f| f.smallest_key == b"m")
        .unwrap_or_else(|| panic!("the ingested file is live: {files:?}"))
        .clone();

    gate.open();
    db.wait_for_compact(&strata::WaitForCompactOptions::default())
        .expect("no background error once the compaction installs");
    db.put("after", "writable").unwrap();
    assert!(m.level < 3, "not at the running compaction's output level: {files:?}");
    assert!(m.smallest_seqno > 0, "a global sequence number, as it is above the last level");
    for (k, v) in [("a", "old-a"), ("b", "old-b"), ("m", "ingested"), ("y", "old-y")] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
    drop(db);
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    assert_eq!(db.get("m").unwrap().as_deref(), Some(&b"ingested"[..]));
    assert_eq!(db.get("z").unwrap().as_deref(), Some(&b"old-z"[..]));
}
