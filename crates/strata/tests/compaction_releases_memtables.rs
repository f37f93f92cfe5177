//! Regression: a running compaction held the super version of its start, and with it the
//! memtables of that moment. Those were flushed while it ran but stayed in memory, flushed,
//! until it finished: with long compactions, the process held about twice the memtable
//! budget (seen as peak RSS in `bench/io.sh`'s overwrite step). A compaction now holds the
//! version alone.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use strata::env::MemFs;
use strata::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Db, Decision, Options,
    TableFileCreationReason, WriteBufferManager,
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

const WRITE_BUFFER: usize = 256 << 10;

fn fill(db: &Db, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("k{i:08}"), [i as u8; 400]).unwrap();
    }
}

#[test]
fn a_running_compaction_does_not_keep_flushed_memtables() {
    let gate = Arc::new(Gate::default());
    // The manager only counts memtable memory here: its budget is never reached.
    let wbm = Arc::new(WriteBufferManager::new(1 << 30, None, false));
    let mut opts = Options {
        fs: Arc::new(MemFs::new()),
        write_buffer_size: WRITE_BUFFER,
        level0_file_num_compaction_trigger: 2,
        write_buffer_manager: Some(wbm.clone()),
        ..Options::default()
    };
    opts.set_compaction_filter_factory(Holding(gate.clone()));
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    let _opens = OpenOnDrop(gate.clone());
    // Two overlapping L0 files (no trivial move) start a compaction, held at its first entry;
    // the memtable it saw at its start is the one the second flush left.
    fill(&db, 0, 200);
    db.flush().unwrap();
    fill(&db, 100, 100);
    db.flush().unwrap();
    gate.wait_entered();

    // About eight write buffers: that memtable fills, is switched out and flushed, and so are
    // the ones after it.
    fill(&db, 200, 5000);
    db.flush().unwrap();
    let held = wbm.memory_usage();
    assert!(
        held < WRITE_BUFFER,
        "{held} bytes of memtables in memory after every one was flushed (a full one is at \
         least {WRITE_BUFFER}): the running compaction keeps a flushed memtable"
    );

    gate.open();
    db.wait_for_compact().unwrap();
    for i in [0, 150, 200, 5199] {
        assert_eq!(db.get(format!("k{i:08}")).unwrap().as_deref(), Some(&[i as u8; 400][..]));
    }
}
