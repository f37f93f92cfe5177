//! [`MemTableIterator`]: a cursor over a memtable that keeps it alive.

use std::sync::Arc;

use super::skiplist::{Node, NodePtr};
use super::MemTable;
use crate::error::Result;
use crate::iterator::InternalIterator;

/// Iterates a memtable in internal-key order. Keys and values are borrowed from the arena (no
/// copy). Moving backwards searches for the predecessor from the top (O(log n)), as the list has
/// no back links. `status()` fails only for a memtable whose key order panicked while linking
/// (`MemTable::check_sound`).
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    /// The current node of `mem`'s skiplist, or `None` when not valid.
    cur: Option<NodePtr>,
    /// `mem` is a vector memtable: `next` links what was appended first (positioning calls
    /// do it through `MemTable::skiplist`).
    deferred: bool,
}

// SAFETY: `cur` points into the arena of the skiplist owned by `mem`, which this iterator keeps
// alive; published nodes are immutable except for their atomic links, so reading them from any
// thread is sound (the node's publication was acquired by the thread that found it, and moving
// the iterator to another thread synchronises with that thread).
unsafe impl Send for MemTableIterator {}

impl MemTableIterator {
    pub(crate) fn new(mem: Arc<MemTable>) -> Self {
        let deferred = mem.list.is_deferred();
        MemTableIterator { mem, cur: None, deferred }
    }

    #[inline]
    fn node(&self) -> Node<'_> {
        let Some(p) = self.cur else { panic!("MemTableIterator used while not valid") };
        // SAFETY: `cur` is only set from a `Node` of `self.mem`'s skiplist, which lives as long
        // as `self`; every node has at least one link.
        unsafe { Node::from_raw(p, 1) }
    }

    #[inline]
    fn raw(n: Option<Node<'_>>) -> Option<NodePtr> {
        n.map(Node::as_raw)
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn seek_to_first(&mut self) {
        self.cur = Self::raw(self.mem.skiplist().first());
    }

    fn seek_to_last(&mut self) {
        self.cur = Self::raw(self.mem.skiplist().last());
    }

    fn seek(&mut self, target: &[u8]) {
        self.cur = Self::raw(self.mem.skiplist().seek_ge(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = Self::raw(self.mem.skiplist().seek_le(target));
    }

    fn next(&mut self) {
        if self.deferred {
            // What was appended since the last positioning call gets linked.
            self.mem.skiplist();
        }
        let next = self.node().next(0);
        if let Some(n) = next {
            // Scans that call `next` read (nearly) every entry: fetch the one after ahead.
            n.prefetch_next();
        }
        self.cur = Self::raw(next);
    }

    fn prev(&mut self) {
        self.cur = Self::raw(self.mem.skiplist().seek_lt(self.node().key()));
    }

    fn key(&self) -> &[u8] {
        self.node().key()
    }

    fn value(&self) -> &[u8] {
        self.node().value()
    }

    fn status(&self) -> Result<()> {
        self.mem.check_sound()
    }
}
