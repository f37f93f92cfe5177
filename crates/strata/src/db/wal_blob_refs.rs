//! Blob files written at commit that kept WALs still refer to.
//!
//! With `write_blobs_at_commit` a WAL record holds blob indexes, not values
//! (`db/blob_log.rs`), and `Db::get_updates_since` reads records back from WALs kept after
//! their writes reached tables: the archive (`db/wal_archive.rs`), and live WALs that another
//! family's unflushed writes keep. So a blob file written at commit stays on disk, after it
//! left every version or after its flush abandoned it, while a kept WAL may refer to it:
//!
//! - When its memtable goes, the file is noted with the WALs that may refer to it: those
//!   current from its first append to its last ([`WalBlobRefs::note`]).
//! - The DB gives the WALs it keeps after each retirement of WALs and at open
//!   ([`WalBlobRefs::set_kept`]): those of the WAL directory from the oldest left on (WALs are
//!   retired in number order), and the archive's span (it loses its oldest; it gains only
//!   retired WALs, while archival is on). A file is needed while one of its WALs is kept.
//! - A file the purge would delete but a kept WAL needs is held here
//!   ([`WalBlobRefs::hold_if_needed`]) and handed back to the purge once none does
//!   ([`WalBlobRefs::released`]).
//! - What a previous process noted and held is not recorded anywhere: at open, every blob
//!   file found is noted as referred to by any WAL before the open, and one that no version
//!   names is held, while such a WAL is kept (`db/obsolete.rs`).
//!
//! Nothing here is durable and nothing is written: a crash leaves the held files on disk and
//! the next open decides again. Lock: a leaf (nothing is taken under it).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use parking_lot::Mutex;

use crate::types::FileNumber;

/// The blob files kept WALs may refer to, and those held for them.
#[derive(Default)]
pub(crate) struct WalBlobRefs {
    state: Mutex<Refs>,
}

#[derive(Default)]
struct Refs {
    /// WALs of the WAL directory numbered below this are never read again.
    oldest_live: FileNumber,
    /// The archived WALs at the last look, oldest to newest. The archive loses its oldest and
    /// gains only WALs retired from at or above `oldest_live`; one left by an earlier setting
    /// (archival now off) stays as it is, so a gap may lie between it and `oldest_live`.
    archived: Option<RangeInclusive<FileNumber>>,
    /// Blob file -> the WALs whose records may refer to it (the first and the last one
    /// current while it was appended to), for files some kept WAL may need.
    wals: BTreeMap<FileNumber, RangeInclusive<FileNumber>>,
    /// Files out of every version (or abandoned) and kept on disk for the WALs.
    held: BTreeSet<FileNumber>,
}

impl Refs {
    /// Whether a WAL of `wals` is kept.
    fn kept(&self, wals: &RangeInclusive<FileNumber>) -> bool {
        *wals.end() >= self.oldest_live
            || self
                .archived
                .as_ref()
                .is_some_and(|a| wals.start() <= a.end() && wals.end() >= a.start())
    }

    fn update(&mut self, oldest_live: FileNumber, archived: Option<RangeInclusive<FileNumber>>) {
        self.oldest_live = self.oldest_live.max(oldest_live);
        self.archived = archived;
        let mut wals = std::mem::take(&mut self.wals);
        wals.retain(|_, w| self.kept(w));
        self.wals = wals;
    }

    fn needed(&self, blob: FileNumber) -> bool {
        self.wals.get(&blob).is_some_and(|w| self.kept(w))
    }
}

impl WalBlobRefs {
    /// Starts with the blob files found at open, `found`, as referred to by any WAL up to
    /// `newest_wal` (the newest before the open), of which `held` are in no version; the
    /// oldest WAL left in the WAL directory and the archived ones.
    pub fn at_open(
        found: &[FileNumber],
        held: &[FileNumber],
        newest_wal: FileNumber,
        oldest_live: FileNumber,
        archived: Option<RangeInclusive<FileNumber>>,
    ) -> Self {
        let mut refs = Refs { oldest_live, archived: archived.clone(), ..Refs::default() };
        let wals = FileNumber(0)..=newest_wal;
        if refs.kept(&wals) {
            refs.wals = found.iter().chain(held).map(|&b| (b, wals.clone())).collect();
            refs.held = held.iter().copied().collect();
        }
        WalBlobRefs { state: Mutex::new(refs) }
    }

    /// The records of `wals` may refer to blob file `blob`.
    pub fn note(&self, blob: FileNumber, wals: RangeInclusive<FileNumber>) {
        let mut st = self.state.lock();
        if st.kept(&wals) {
            st.wals.insert(blob, wals);
        }
    }

    /// No WAL of the WAL directory below `oldest_live` is read again (it only moves up);
    /// `archived` spans the archive's WALs, if any.
    pub fn set_kept(&self, oldest_live: FileNumber, archived: Option<RangeInclusive<FileNumber>>) {
        self.state.lock().update(oldest_live, archived);
    }

    /// The oldest WAL of the WAL directory that may be read: those below it are deleted or
    /// being deleted, and their blob files may be gone.
    pub fn oldest_live(&self) -> FileNumber {
        self.state.lock().oldest_live
    }

    /// The WALs below `log_number` are obsolete and deleted next, not archived. Told as a
    /// flush installs, before its memtables go, so that their files are not held for WALs
    /// about to be deleted.
    pub fn deleting_below(&self, log_number: FileNumber) {
        let mut st = self.state.lock();
        let archived = st.archived.clone();
        st.update(log_number, archived);
    }

    /// Holds `blob`, which is to be deleted, if a kept WAL may refer to it; returns whether
    /// it did.
    pub fn hold_if_needed(&self, blob: FileNumber) -> bool {
        let mut st = self.state.lock();
        if !st.needed(blob) {
            return false;
        }
        st.held.insert(blob);
        true
    }

    /// The files held.
    pub fn held(&self) -> Vec<FileNumber> {
        self.state.lock().held.iter().copied().collect()
    }

    /// Whether any file is held (a cheap check before [`Self::released`]).
    pub fn holds_any(&self) -> bool {
        !self.state.lock().held.is_empty()
    }

    /// Whether a held file is no longer needed (a cheap check before a purge).
    pub fn any_released(&self) -> bool {
        let st = self.state.lock();
        st.held.iter().any(|&b| !st.needed(b))
    }

    /// The held files no kept WAL refers to any more, no longer held: the caller deletes them.
    pub fn released(&self) -> Vec<FileNumber> {
        let mut st = self.state.lock();
        let gone: Vec<FileNumber> = st.held.iter().copied().filter(|&b| !st.needed(b)).collect();
        for b in &gone {
            st.held.remove(b);
            st.wals.remove(b);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: u64) -> FileNumber {
        FileNumber(v)
    }

    #[test]
    fn a_file_is_held_while_its_newest_wal_is_kept() {
        let r = WalBlobRefs::default();
        r.set_kept(n(5), None);
        r.note(n(7), n(6)..=n(9)); // appended to while WALs 6 to 9 were current
        r.note(n(8), n(3)..=n(4)); // below the oldest kept: never needed
        assert!(!r.hold_if_needed(n(8)));
        assert!(!r.hold_if_needed(n(100)), "never noted");
        assert!(r.hold_if_needed(n(7)));
        assert!(r.holds_any());
        r.set_kept(n(9), None);
        assert!(!r.any_released());
        assert!(r.released().is_empty(), "WAL 9 still refers to it");
        r.set_kept(n(3), None); // never back
        assert!(r.released().is_empty());
        r.set_kept(n(10), None);
        assert!(r.any_released());
        assert_eq!(r.released(), vec![n(7)]);
        assert!(!r.holds_any());
        assert!(r.released().is_empty());
    }

    #[test]
    fn archived_wals_keep_the_files_they_refer_to() {
        let r = WalBlobRefs::default();
        r.set_kept(n(2), None);
        r.note(n(7), n(3)..=n(4));
        r.set_kept(n(6), Some(n(2)..=n(5))); // WALs 2 to 5 archived
        assert!(r.hold_if_needed(n(7)));
        r.set_kept(n(6), Some(n(4)..=n(5)));
        assert!(r.released().is_empty(), "archived WAL 4 refers to it");
        r.set_kept(n(6), Some(n(5)..=n(5)));
        assert_eq!(r.released(), vec![n(7)]);
    }

    #[test]
    fn an_archive_left_by_another_setting_keeps_only_its_own_wals_files() {
        // Archival off: WALs 20 to 29 were deleted, not archived.
        let r = WalBlobRefs::at_open(&[], &[n(3)], n(12), n(30), Some(n(5)..=n(10)));
        r.note(n(40), n(20)..=n(25));
        assert!(!r.hold_if_needed(n(40)), "its WALs are gone");
        r.deleting_below(n(31));
        assert!(r.released().is_empty(), "found at open: any WAL before it may refer to it");
        r.set_kept(n(31), None); // the archive removed
        assert_eq!(r.released(), vec![n(3)]);
    }

    #[test]
    fn files_found_at_open_are_held_until_the_wals_before_the_open_go() {
        let r = WalBlobRefs::at_open(&[n(4)], &[n(3), n(12)], n(20), n(15), None);
        assert!(r.holds_any());
        assert!(r.hold_if_needed(n(4)), "in a version at open, dropped from it after");
        r.set_kept(n(20), None);
        assert!(r.released().is_empty());
        r.set_kept(n(21), None);
        assert_eq!(r.released(), vec![n(3), n(4), n(12)]);
        // With no WAL from before the open kept, nothing is held.
        let r = WalBlobRefs::at_open(&[n(4)], &[n(3)], n(20), n(21), None);
        assert!(!r.holds_any());
        assert!(!r.hold_if_needed(n(4)));
    }

    #[test]
    fn wals_deleted_at_a_flush_stop_holding_unless_the_archive_has_them() {
        let r = WalBlobRefs::default();
        r.set_kept(n(2), None);
        r.note(n(7), n(3)..=n(3));
        r.deleting_below(n(4));
        assert!(!r.hold_if_needed(n(7)), "WAL 3 is being deleted");
        let r = WalBlobRefs::default();
        r.set_kept(n(3), Some(n(1)..=n(2)));
        r.note(n(7), n(2)..=n(3));
        r.deleting_below(n(4));
        assert!(r.hold_if_needed(n(7)), "archived WAL 2 is read");
    }
}
