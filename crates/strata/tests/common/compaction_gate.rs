//! A compaction filter that holds every compaction at its first entry until the test opens a
//! gate: for tests of what happens while a compaction runs.

use std::sync::{Arc, Condvar, Mutex};

use strata::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Decision,
    TableFileCreationReason,
};

/// Open (true) once the test lets compactions go on; `entered` once one has started.
#[derive(Default)]
pub struct Gate {
    state: Mutex<(bool, bool)>, // (entered, open)
    cv: Condvar,
}

impl Gate {
    pub fn enter_and_wait(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 = true;
        self.cv.notify_all();
        while !s.1 {
            s = self.cv.wait(s).unwrap();
        }
    }

    pub fn wait_entered(&self) {
        let mut s = self.state.lock().unwrap();
        while !s.0 {
            s = self.cv.wait(s).unwrap();
        }
    }

    pub fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// Holds every compaction at its first entry until the gate opens.
/// Opens the gate when dropped, so that a failing test does not leave the compaction
/// thread (which closing the DB joins) waiting forever.
pub struct OpenOnDrop(pub Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

pub struct HoldingFilter(Arc<Gate>, bool);

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

pub struct Holding(pub Arc<Gate>);

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
