//! Snapshots: a read view pinned at a sequence number. The DB keeps the list of live snapshot
//! sequence numbers so flush and compaction keep every version a snapshot can still see.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
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
/// (`get`, `iterator`, ...). Users hold it as a [`SnapshotWithThreadMode`] (`strata::Snapshot`),
/// which dereferences to this handle.
/// Cloning shares the pin; the view is released when the last clone is dropped.
///
/// A snapshot holds its DB weakly: it never keeps a closed DB's files open or locked, and a
/// read through a snapshot whose `Db` was dropped fails with `ShutdownInProgress`.
#[derive(Clone)]
pub struct SnapshotHandle {
    pinned: Arc<Pinned>,
    /// The DB's shared core (downcast by the read methods in `db/`); `None` for a snapshot
    /// made without one (unit tests).
    source: Option<Weak<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for SnapshotHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotHandle")
            .field("sequence", &self.pinned.seq.0)
            .finish_non_exhaustive()
    }
}

impl SnapshotHandle {
    pub(crate) fn new(list: &Arc<SnapshotList>, seq: SeqNo) -> SnapshotHandle {
        *list.live.lock().entry(seq.0).or_insert(0) += 1;
        SnapshotHandle { pinned: Arc::new(Pinned { seq, list: list.clone() }), source: None }
    }

    /// The snapshot, reading through `source` (held weakly).
    pub(crate) fn with_source(mut self, source: Weak<dyn Any + Send + Sync>) -> SnapshotHandle {
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

/// The `rocksdb` crate's snapshot type: a [`SnapshotHandle`] with the crate's lifetime and
/// DB-type parameters, which carry no data. `strata::Snapshot<'a>` is
/// `SnapshotWithThreadMode<'a, Db>`; `Db::snapshot` returns one with the `'static` lifetime,
/// because a Strata snapshot holds its DB weakly and may outlive it (reads then fail with
/// `ShutdownInProgress`), where the crate's borrows the DB.
pub struct SnapshotWithThreadMode<'a, D> {
    handle: SnapshotHandle,
    // `fn() -> &D`: covariant in `'a`, and `Send + Sync` whatever `D` is.
    db: PhantomData<fn() -> &'a D>,
}

impl<D> SnapshotWithThreadMode<'_, D> {
    /// The handle as the snapshot of a DB of type `D`.
    pub fn from_handle(handle: SnapshotHandle) -> Self {
        SnapshotWithThreadMode { handle, db: PhantomData }
    }

    /// The shared handle.
    pub fn handle(&self) -> &SnapshotHandle {
        &self.handle
    }

    /// The handle, released from the DB type.
    pub fn into_handle(self) -> SnapshotHandle {
        self.handle
    }
}

impl<D> Clone for SnapshotWithThreadMode<'_, D> {
    fn clone(&self) -> Self {
        Self::from_handle(self.handle.clone())
    }
}

impl<D> std::ops::Deref for SnapshotWithThreadMode<'_, D> {
    type Target = SnapshotHandle;
    fn deref(&self) -> &SnapshotHandle {
        &self.handle
    }
}

impl<D> std::fmt::Debug for SnapshotWithThreadMode<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.handle.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_until_last_clone_drops() {
        let list = Arc::new(SnapshotList::default());
        let a = SnapshotHandle::new(&list, SeqNo(5));
        let b = a.clone();
        let c = SnapshotHandle::new(&list, SeqNo(5));
        let d = SnapshotHandle::new(&list, SeqNo(9));
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
