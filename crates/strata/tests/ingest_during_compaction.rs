//! Regression: a file ingested while a compaction runs must not land at that compaction's
//! output level inside the key range of its inputs, even where no input file overlaps the
//! ingested file. The compaction's output files span the whole range, so installing them
//! next to the ingested file made two files overlap in one level: the edit was refused and
//! the DB went read-only with a background error.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use strata::env::{FileSystem, MemFs};
use strata::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Db, Decision, Options,
    SstFileWriter, TableFileCreationReason,
};

/// Open (true) once the test lets compactions go on; `entered` once one has started.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, bool)>, // (entered, open)
    cv: Condvar,
}

impl Gate {
    fn enter_and_wait(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 = true;
        self.cv.notify_all();
        while !s.1 {
            s = self.cv.wait(s).unwrap();
        }
    }

    fn wait_entered(&self) {
        let mut s = self.state.lock().unwrap();
        while !s.0 {
            s = self.cv.wait(s).unwrap();
        }
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// Holds every compaction at its first entry until the gate opens.
/// Opens the gate when dropped, so that a failing test does not leave the compaction
/// thread (which closing the DB joins) waiting forever.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

struct HoldingFilter(Arc<Gate>, bool);

impl CompactionFilter for HoldingFilter {
    fn filter(&mut self, _level: u32, _key: &[u8], _value: &[u8]) -> Decision {
        if !self.1 {
            self.1 = true;
            self.0.enter_and_wait();
        }
        Decision::Keep
    }

    fn name(&self) -> &str {
        "holding"
    }
}

struct Holding(Arc<Gate>);

impl CompactionFilterFactory for Holding {
    fn create(&self, _ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
        Box::new(HoldingFilter(self.0.clone(), false))
    }

    fn name(&self) -> &str {
        "holding"
    }

    fn should_filter_table_file_creation(&self, reason: TableFileCreationReason) -> bool {
        reason == TableFileCreationReason::Compaction
    }
}

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
    db.wait_for_compact().expect("no background error once the compaction installs");
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
