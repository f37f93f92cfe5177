//! What the running command puts in the replication stream (`backlog`), gathered on its
//! thread until it appends them under its keys' locks (`commands::propagation`).
//!
//! A command that writes goes to the stream as it was sent, unless its handler
//! [`replace`]s it with the commands of its effect (an EXPIRE as the PEXPIREAT of the time it
//! set, an SPOP as the SREM of what it popped, a blocking pop as the pop it made); the keys
//! whose time was up and that it deleted on its way go before it as DELs ([`expired`]). The
//! commands an EXEC or a script runs gather here one after the other, and go out as one
//! MULTI/EXEC. Whether a command changed anything is whether it wrote a batch ([`wrote`]),
//! as Redis propagates a command that made its `dirty` counter move.

use std::cell::{Cell, RefCell};

use super::backlog::{Backlog, Item};

thread_local! {
    /// The items of the running top-level command, when it appends to the stream.
    static ITEMS: RefCell<Option<Vec<Item>>> = const { RefCell::new(None) };
    /// The running command replaced itself.
    static REPLACED: Cell<bool> = const { Cell::new(false) };
    /// Batches written on this thread, expiry deletions left out.
    static WRITES: Cell<u64> = const { Cell::new(0) };
}

/// Opens this thread's gathering for a top-level command whose stream is on; false (and
/// nothing opened) when one is open already.
pub fn open() -> bool {
    ITEMS.with(|i| {
        let mut i = i.borrow_mut();
        if i.is_some() {
            return false;
        }
        *i = Some(Vec::new());
        true
    })
}

/// Whether a gathering is open on this thread.
pub fn is_open() -> bool {
    ITEMS.with(|i| i.borrow().is_some())
}

/// Closes the gathering: what it gathered.
pub fn close() -> Vec<Item> {
    ITEMS.with(|i| i.borrow_mut().take()).unwrap_or_default()
}

/// A command begins (at any depth): its state, for [`end_command`].
pub fn begin_command() -> (bool, u64) {
    (REPLACED.with(|r| r.replace(false)), WRITES.with(Cell::get))
}

/// The command begun with `begun` ends: whether it replaced itself, and whether it wrote.
pub fn end_command(begun: (bool, u64)) -> (bool, bool) {
    let replaced = REPLACED.with(|r| r.replace(begun.0));
    (replaced, WRITES.with(Cell::get) != begun.1)
}

/// Adds `argv` (of database `db`) to the gathering, if one is open.
pub fn push<A: AsRef<[u8]>>(db: usize, argv: &[A]) {
    ITEMS.with(|i| {
        if let Some(items) = i.borrow_mut().as_mut() {
            items.push(Item::new(db, argv));
        }
    });
}

/// The running command goes to the stream as `argv` (of database `db`; several calls: each
/// in turn) instead of as it was sent. Nothing when no gathering is open.
pub fn replace<A: AsRef<[u8]>>(db: usize, argv: &[A]) {
    if is_open() {
        REPLACED.with(|r| r.set(true));
        push(db, argv);
    }
}

/// The running command goes to the stream as nothing (its effect needs none), unless
/// [`replace`] adds to it. Nothing when no gathering is open.
pub fn replace_with_nothing() {
    if is_open() {
        REPLACED.with(|r| r.set(true));
    }
}

/// `DEL key`, as the stream carries a deletion.
pub fn del(k: &[u8]) -> Vec<Vec<u8>> {
    vec![b"DEL".to_vec(), k.to_vec()]
}

/// A batch was written on this thread.
pub fn wrote() {
    WRITES.with(|w| w.set(w.get() + 1));
}

/// Runs `f`, a deletion of expired keys, as no write of the running command's own.
pub fn as_expiry<R>(f: impl FnOnce() -> R) -> R {
    let before = WRITES.with(Cell::get);
    let r = f();
    WRITES.with(|w| w.set(before));
    r
}

/// Keys of database `db` whose time was up were deleted (the caller holds their locks and
/// entered the write in `backlog`): DELs go to the running command's gathering, or straight
/// to the stream when no command gathers (the expiry task, a reader's deletion).
pub fn expired(backlog: &Backlog, db: usize, keys: &[&[u8]]) {
    let dels = keys.iter().map(|k| del(k));
    if is_open() {
        for argv in dels {
            push(db, &argv);
        }
    } else {
        let items: Vec<Item> = dels.map(|argv| Item::new(db, &argv)).collect();
        backlog.append(&items, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_replaced_inside_another_leaves_the_outer_ones_flag() {
        assert!(open());
        assert!(!open());
        let outer = begin_command();
        replace(0, &[b"A"]);
        let inner = begin_command();
        wrote();
        assert_eq!(end_command(inner), (false, true));
        assert_eq!(end_command(outer), (true, true));
        let items = close();
        assert_eq!(items.len(), 1);
        assert!(!is_open());
        // Closed: replacements go nowhere.
        replace(0, &[b"B"]);
        assert!(close().is_empty());
    }

    #[test]
    fn expiry_deletions_are_not_the_commands_writes() {
        let begun = begin_command();
        as_expiry(wrote);
        assert_eq!(end_command(begun), (false, false));
    }
}
