//! The newest entries of a group's log, kept in memory as they were written ([`LogTail`]).
//!
//! A leader reads every entry back soon after appending it (to send it to each follower, and
//! to apply it), and a follower reads it back to apply it. Served from the tail, those reads
//! take no engine iterator and no hop to the blocking pool. The tail mirrors the log's end:
//! when it holds entries, they are consecutive and the last is the log's last entry; appends,
//! truncations and purges change it as they change the log (after the engine accepted them).
//! It holds at most [`MAX_ENTRIES`] entries and [`MAX_BYTES`] payload bytes, dropping the
//! oldest first; a read that starts before it goes to the engine.

use std::collections::VecDeque;

use crate::types::{Entry, LogId, Payload};

/// Entries kept at most.
pub const MAX_ENTRIES: usize = 1024;
/// Payload bytes kept at most.
pub const MAX_BYTES: usize = 2 << 20;

/// Bytes an entry counts for, in the tail's budget and in a limited read's.
pub fn entry_bytes(e: &Entry) -> usize {
    match &e.payload {
        Payload::Normal(data) => data.len() + 32,
        Payload::Blank | Payload::Membership(_) => 32,
    }
}

/// The newest consecutive entries of one log.
#[derive(Default)]
pub struct LogTail {
    entries: VecDeque<Entry>,
    bytes: usize,
}

impl LogTail {
    fn first_index(&self) -> Option<u64> {
        self.entries.front().map(|e| e.log_id.index)
    }

    fn last_index(&self) -> Option<u64> {
        self.entries.back().map(|e| e.log_id.index)
    }

    fn pop_back(&mut self) {
        if let Some(e) = self.entries.pop_back() {
            self.bytes -= entry_bytes(&e);
        }
    }

    fn pop_front(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            self.bytes -= entry_bytes(&e);
        }
    }

    /// `entries` (consecutive) were written to the log, replacing any from their first index
    /// on.
    pub fn appended(&mut self, entries: &[Entry]) {
        let Some(first) = entries.first().map(|e| e.log_id.index) else { return };
        while self.last_index().is_some_and(|last| last >= first) {
            self.pop_back();
        }
        if self.last_index().is_some_and(|last| last + 1 != first) {
            self.clear();
        }
        for e in entries {
            self.bytes += entry_bytes(e);
            self.entries.push_back(e.clone());
        }
        while self.entries.len() > MAX_ENTRIES || (self.bytes > MAX_BYTES && self.entries.len() > 1)
        {
            self.pop_front();
        }
    }

    /// The log lost every entry after `after` (all of them for `None`).
    pub fn truncated_after(&mut self, after: Option<LogId>) {
        let keep = after.map(|a| a.index);
        while self.last_index().is_some_and(|last| Some(last) > keep) {
            self.pop_back();
        }
    }

    /// The log lost every entry up to `upto`.
    pub fn purged(&mut self, upto: LogId) {
        while self.first_index().is_some_and(|first| first <= upto.index) {
            self.pop_front();
        }
    }

    /// Forgets every entry (the log is read from the engine until the next append).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// The entries in `[start, end)` that the log holds, as [`crate::log_store::GroupLog::read`]
    /// returns them (with `max_bytes`, up to the entry that reaches it, at least one), when the
    /// tail can answer: `None` when the log may hold entries from `start` that the tail has
    /// dropped, or when the tail is empty.
    pub fn read(&self, start: u64, end: u64, max_bytes: Option<usize>) -> Option<Vec<Entry>> {
        let (first, last) = (self.first_index()?, self.last_index()?);
        if start < first {
            return None;
        }
        let mut out = Vec::new();
        if start > last || start >= end {
            return Some(out);
        }
        let mut bytes = 0;
        let from = usize::try_from(start - first).ok()?;
        for e in self.entries.iter().skip(from) {
            if e.log_id.index >= end {
                break;
            }
            bytes += entry_bytes(e);
            out.push(e.clone());
            if max_bytes.is_some_and(|m| bytes >= m) {
                break;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId { term, leader: 1, index },
            payload: Payload::Normal(vec![index as u8; 10]),
        }
    }

    fn indexes(v: &[Entry]) -> Vec<(u64, u64)> {
        v.iter().map(|e| (e.log_id.term, e.log_id.index)).collect()
    }

    #[test]
    fn reads_follow_appends_truncations_and_purges() {
        let mut t = LogTail::default();
        assert!(t.read(1, 10, None).is_none(), "an empty tail answers nothing");
        t.appended(&(1..=5).map(|i| entry(1, i)).collect::<Vec<_>>());
        assert_eq!(indexes(&t.read(2, 4, None).unwrap()), vec![(1, 2), (1, 3)]);
        assert_eq!(t.read(6, 10, None).unwrap(), vec![], "nothing after the last entry");
        // A new leader's entries replace the tail from index 4.
        t.appended(&[entry(2, 4), entry(2, 5), entry(2, 6)]);
        assert_eq!(indexes(&t.read(3, 100, None).unwrap()), vec![(1, 3), (2, 4), (2, 5), (2, 6)]);
        t.truncated_after(Some(LogId { term: 2, leader: 1, index: 4 }));
        assert_eq!(indexes(&t.read(1, 100, None).unwrap()).last(), Some(&(2, 4)));
        t.purged(LogId { term: 1, leader: 1, index: 2 });
        assert!(t.read(2, 100, None).is_none(), "purged entries are not answered");
        assert_eq!(indexes(&t.read(3, 100, None).unwrap()), vec![(1, 3), (2, 4)]);
        t.truncated_after(None);
        assert!(t.read(3, 100, None).is_none());
    }

    #[test]
    fn a_gap_restarts_the_tail_and_limits_hold() {
        let mut t = LogTail::default();
        t.appended(&[entry(1, 1), entry(1, 2)]);
        t.appended(&[entry(1, 10)]);
        assert!(t.read(2, 11, None).is_none());
        assert_eq!(indexes(&t.read(10, 11, None).unwrap()), vec![(1, 10)]);
        let many: Vec<_> = (11..11 + MAX_ENTRIES as u64).map(|i| entry(1, i)).collect();
        t.appended(&many);
        assert_eq!(t.entries.len(), MAX_ENTRIES);
        assert!(t.read(10, 20, None).is_none(), "the oldest entry was dropped");
        // A limited read stops at the entry that reaches the budget.
        let got = t.read(11, 100, Some(2 * entry_bytes(&entry(1, 11)))).unwrap();
        assert_eq!(got.len(), 2);
    }
}
