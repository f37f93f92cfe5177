//! Iterators over internal keys.

#[cfg(test)]
pub(crate) mod conformance;
pub(crate) mod db_iter;
pub(crate) mod merging;

use crate::error::Result;

/// Reads values kept in blob files (`crate::blob`) for the layers below the one that knows
/// them: the DB iterator, point reads and compactions get one to resolve entries of type
/// `BlobIndex`.
pub(crate) trait BlobFetch: Send + Sync {
    /// The value of the entry of `user_key` whose stored value is the blob index `index`.
    /// Damage (a bad index, a missing file, a record that fails its checks) is an error
    /// naming the file and offset.
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>>;
}

/// The error for a blob index met by a reader given no [`BlobFetch`] (none is given where
/// the sources cannot hold one: a memtable's flush, a test's iterator).
pub(crate) fn no_blob_source(user_key: &[u8]) -> crate::error::Error {
    crate::error::Error::corruption(
        "",
        0,
        format!(
            "blob index of key {:?} where no blob file can be read",
            String::from_utf8_lossy(user_key)
        ),
    )
}

/// A positioned cursor over entries sorted by [`crate::key::compare_internal`].
///
/// Contract: after any positioning call the iterator is either valid (pointing at an entry) or
/// not; `key`/`value` may only be called while valid. An I/O or corruption error makes it
/// invalid and is reported by `status` (and stays there until the next seek). `key` and `value`
/// stay readable until the next call that moves the iterator.
pub trait InternalIterator: Send {
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry with key >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry with key <= `target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry; requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry; requires `valid()`.
    fn prev(&mut self);
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
    /// For a composite iterator: the index of the child the current entry comes from; 0 for
    /// a simple one. Requires `valid()`.
    fn current_child(&self) -> usize {
        0
    }
    /// For a composite iterator: moves only the child of the current entry, with
    /// `seek(target)` when `forward` (the iterator must be moving forward and `target` after
    /// the current key) or `seek_for_prev(target)` otherwise (moving backward, `target` before
    /// the current key), and restores the merged order. The entries of that child in between
    /// are skipped. Returns false, doing nothing, when unsupported or moving the other way.
    fn seek_current_child(&mut self, _target: &[u8], _forward: bool) -> bool {
        false
    }
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first();
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        (**self).seek_for_prev(target);
    }
    fn next(&mut self) {
        (**self).next();
    }
    fn prev(&mut self) {
        (**self).prev();
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn current_child(&self) -> usize {
        (**self).current_child()
    }
    fn seek_current_child(&mut self, target: &[u8], forward: bool) -> bool {
        (**self).seek_current_child(target, forward)
    }
}

/// An iterator that is empty and reports an error: what a composite iterator becomes when one
/// of its sources cannot be opened.
pub(crate) struct ErrorIterator {
    error: crate::error::Error,
}

impl ErrorIterator {
    pub fn new(error: crate::error::Error) -> Self {
        ErrorIterator { error }
    }
}

impl InternalIterator for ErrorIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn seek_for_prev(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        Err(self.error.duplicate())
    }
}
