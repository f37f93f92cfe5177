//! `Db::flush_wal(true)` syncs the retired WALs (a memtable's worth of unsynced bytes each,
//! when flushes are merged) without holding the WAL lock: writers go on meanwhile. A server's
//! once-a-second sync held every writer for that fsync after each memtable switch.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::forward_fs::{ForwardFs, Hooks};
use parking_lot::{Condvar, Mutex};
use strata::env::{FileSystem, MemFs, WritableFile};
use strata::{Db, Options, Result};

/// Holds the next `sync` of a WAL file once armed, until released.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, bool, bool)>, // (armed, entered, released)
    cv: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut s = self.state.lock();
        if !s.0 {
            return;
        }
        s.0 = false;
        s.1 = true;
        self.cv.notify_all();
        while !s.2 {
            self.cv.wait(&mut s);
        }
    }

    fn wait_entered(&self) -> bool {
        let mut s = self.state.lock();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !s.1 {
            if self.cv.wait_until(&mut s, deadline).timed_out() {
                return false;
            }
        }
        true
    }

    fn release(&self) {
        self.state.lock().2 = true;
        self.cv.notify_all();
    }
}

struct GatedFile(Box<dyn WritableFile>, Arc<Gate>);

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.0.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.1.pass();
        self.0.sync()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn syncer(&mut self) -> Option<Box<dyn strata::env::FileSyncer>> {
        self.0.syncer()
    }
}

/// WAL files whose `sync` passes through the gate.
struct GatedWalSync(Arc<Gate>);

impl Hooks for GatedWalSync {
    fn create(&self, fs: &MemFs, path: &Path) -> Result<Box<dyn WritableFile>> {
        let f = fs.create(path)?;
        if path.extension().is_some_and(|e| e == "log") {
            return Ok(Box::new(GatedFile(f, self.0.clone())));
        }
        Ok(f)
    }
}

#[test]
fn writers_go_on_while_flush_wal_syncs_a_retired_wal() {
    let gate = Arc::new(Gate::default());
    let opts = Options {
        fs: Arc::new(ForwardFs(MemFs::new(), GatedWalSync(gate.clone()))),
        write_buffer_size: 64 << 10,
        // Flushes wait for two memtables: the first switch leaves a retired, unsynced WAL.
        min_write_buffer_number_to_merge: 2,
        max_write_buffer_number: 4,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&opts, "/db").unwrap());
    let mut i = 0u32;
    while db.property_int_value("strata.num-immutable-mem-table").unwrap() != Some(1) {
        db.put(format!("k{i:05}"), [7u8; 256]).unwrap();
        i += 1;
        assert!(i < 10_000, "no memtable switch");
    }
    gate.state.lock().0 = true;
    let syncing = {
        let db = db.clone();
        std::thread::spawn(move || db.flush_wal(true))
    };
    assert!(gate.wait_entered(), "flush_wal did not sync the retired WAL");
    // The retired WAL's sync is held: a write must still go through.
    let (done, written) = mpsc::channel();
    {
        let db = db.clone();
        std::thread::spawn(move || {
            let _ = done.send(db.put("during", "the sync"));
        });
    }
    let during = written.recv_timeout(Duration::from_secs(20));
    gate.release();
    syncing.join().unwrap().unwrap();
    let during = during.expect("a write waited for flush_wal's sync of a retired WAL");
    during.unwrap();
    assert_eq!(db.get("during").unwrap().as_deref(), Some(&b"the sync"[..]));
}
