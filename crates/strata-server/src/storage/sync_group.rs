//! Group commit for `appendfsync always` across keys and connections.
//!
//! A command writes its batch without a sync while it holds its keys' locks, so writers of
//! one hot key do not wait for each other's fdatasync one by one; the reply is held until a
//! WAL sync that *began after* the write has finished, and one sync serves every write made
//! before it began. This is how Redis's `appendfsync always` answers too: commands run, one
//! fsync, then the replies.
//!
//! The syncer itself ([`SyncGroup`]) lives in `strata-replication`, where the Raft log of every
//! group on a node shares it the same way; this module keeps what is the server's own: a
//! write that owes a sync marks this thread (`owe_sync`), and the connection loop takes the
//! mark (`take_owed_sync`) right after the commands it ran, before it awaits anything.

use std::cell::Cell;

pub use strata_replication::sync_group::{SyncError, SyncGroup};

thread_local! {
    static OWED: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as holding a write that must be durable before it is acknowledged.
pub fn owe_sync() {
    OWED.with(|o| o.set(true));
}

/// Whether this thread owed a sync (clearing the mark).
pub fn take_owed_sync() -> bool {
    OWED.with(|o| o.replace(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owed_mark_is_per_thread_and_taken_once() {
        assert!(!take_owed_sync());
        owe_sync();
        assert!(std::thread::spawn(take_owed_sync).join().map(|b| !b).unwrap());
        assert!(take_owed_sync());
        assert!(!take_owed_sync());
    }
}
