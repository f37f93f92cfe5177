//! Snapshots: a read view pinned at a sequence number. The DB keeps the list of live snapshot
//! sequence numbers so flush and compaction keep every version a snapshot can still see.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::types::SeqNo;

/// Live snapshots: sequence number -> how many handles pin it.
#[derive(Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotList {
    /// Every live snapshot sequence number, ascending.
    pub fn sequences(&self) -> Vec<SeqNo> {
        self.live.lock().keys().map(|&s| SeqNo(s)).collect()
    }

    /// Live snapshot handles (two taken at one sequence number count twice).
    pub fn count(&self) -> usize {
        self.live.lock().values().sum()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.live.lock().is_empty()
    }
}

struct Pinned {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let mut live = self.list.live.lock();
        if let Some(n) = live.get_mut(&self.seq.0) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.seq.0);
            }
        }
    }
}

/// A consistent read view of the DB at one moment. Reads through `ReadOptions::snapshot` see
/// exactly the writes made before `Db::snapshot` returned, and so do the snapshot's own reads
/// (`Snapshot::get`, `iterator`, ..., the `rocksdb` crate's `SnapshotWithThreadMode`).
/// Cloning shares the pin; the view is released when the last clone is dropped.
///
/// A snapshot holds its DB weakly: it never keeps a closed DB's files open or locked, and a
/// read through a snapshot whose `Db` was dropped fails with `ShutdownInProgress`.
#[derive(Clone)]
pub struct Snapshot {
    pinned: Arc<Pinned>,
    /// The DB's shared core (downcast by the read methods in `db/`); `None` for a snapshot
    /// made without one (unit tests).
    source: Option<Weak<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("sequence", &self.pinned.seq.0).finish_non_exhaustive()
    }
}

impl Snapshot {
    pub(crate) fn new(list: &Arc<SnapshotList>, seq: SeqNo) -> Snapshot {
        *list.live.lock().entry(seq.0).or_insert(0) += 1;
        Snapshot { pinned: Arc::new(Pinned { seq, list: list.clone() }), source: None }
    }

    /// The snapshot, reading through `source` (held weakly).
    pub(crate) fn with_source(mut self, source: Weak<dyn Any + Send + Sync>) -> Snapshot {
        self.source = Some(source);
        self
    }

    /// The source, if it is still alive.
    pub(crate) fn source(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.source.as_ref().and_then(Weak::upgrade)
    }

    /// The sequence number the snapshot reads at.
    pub fn sequence_number(&self) -> u64 {
        self.pinned.seq.0
    }

    pub(crate) fn seq(&self) -> SeqNo {
        self.pinned.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_until_last_clone_drops() {
        let list = Arc::new(SnapshotList::default());
        let a = Snapshot::new(&list, SeqNo(5));
        let b = a.clone();
        let c = Snapshot::new(&list, SeqNo(5));
        let d = Snapshot::new(&list, SeqNo(9));
        assert_eq!(list.sequences(), vec![SeqNo(5), SeqNo(9)]);
        drop(a);
        drop(b);
        assert_eq!(list.sequences(), vec![SeqNo(5), SeqNo(9)]);
        drop(c);
        assert_eq!(list.sequences(), vec![SeqNo(9)]);
        drop(d);
        assert!(list.is_empty());
    }
}
