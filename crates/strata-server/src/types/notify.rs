//! Keyspace notifications (Redis's `notify-keyspace-events`): which classes of events are
//! enabled ([`Notifier`]), and the events a command's writes raised, gathered on the thread
//! that runs it until they can be published.
//!
//! An operation raises an event (through `Keyspace::notify`) after its write succeeded, in
//! the order Redis raises them for the same command. The event waits in this thread's queue:
//! the command layer publishes the queue once the writes it names are visible to others
//! (after the command; after EXEC's or a script's one batch; in cluster mode after the
//! write's Raft entry is applied), or drops it when that write failed. While a client
//! tracks keys (CLIENT TRACKING), every change is queued, for its invalidations, whether or
//! not its class is enabled. With no class enabled and no client tracking (the default)
//! raising an event is two atomic loads and a thread-local mark that a change went unqueued.
//!
//! That mark closes a race of client-side caching: a client may turn tracking on while a
//! write that found it off is under way, read the key before that write is visible and put
//! it in the table after the write's look at the flag; the change would then never be told.
//! So a write that left a change unqueued asks again once visible whether a client tracks
//! (`Tracking::active_after_write`), and if one does by then, every tracking client is told
//! that everything may have changed (`commands::pubsub::publish_events`): rare, and a
//! message too many only costs caches.
//!
//! Inside a transaction the order of a tracking client's own reads and writes of a key
//! matters: Redis tells each write of a tracked key at once (the writer too, without NOLOOP)
//! and a read then tracks the key again, so a transaction that writes a key and then reads
//! it leaves the key tracked, with no message for a reader that did not track it before.
//! Here the writes are told after EXEC, and a read is put in the table before it reads; so
//! each key an EXEC's command reads is noted ([`note_read`]) with what the order gives
//! ([`OwnRead`]), and the publication follows it for the reader.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// `K`: events go to `__keyspace@<db>__:<key>` channels.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: events go to `__keyevent@<db>__:<event>` channels.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, COPY...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: a key removed because its time was up.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key evicted for memory (never raised here: nothing is evicted).
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: a read of a missing key (never raised here).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (never raised here: there are no modules).
pub const MODULE: u32 = 1 << 13;
/// `n`: a key created.
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`, as in Redis.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The classes of a flag string (`notify-keyspace-events`'s value); `None` when a character
/// names no class.
pub fn parse_classes(s: &[u8]) -> Option<u32> {
    s.iter().try_fold(0, |flags, c| {
        let f = match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
        Some(flags | f)
    })
}

/// The flag string CONFIG GET shows for `flags`, in redis-server's order: `A` for the whole
/// of [`ALL`] (then, as redis-server does, `n` is not shown even when set) or each class of
/// it and `n`, then `K`, `E` and `m`.
pub fn render_classes(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// The enabled classes of one server, and how many changes its commands have made and how
/// many keys expired.
#[derive(Debug, Default)]
pub struct Notifier {
    flags: AtomicU32,
    /// Events raised since the start, enabled or not, `new` left out: the changes counted for
    /// INFO's `rdb_changes_since_last_save` (Redis's dirty counter). One per key a command
    /// changed, as Redis raises its events, where Redis counts some commands per element
    /// (SADD of three new members: one here, three there).
    changes: AtomicU64,
    /// Some client tracks keys for client-side caching: every change is queued (as an event
    /// for no channel when its class is not enabled), for its invalidations.
    tracking: AtomicBool,
    /// Keys deleted because their time was up, by the expiry task or by a command that met
    /// them: INFO's `expired_keys`.
    expired: AtomicU64,
}

/// An event raised and not yet published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Whether it goes to the key's `__keyspace` channel.
    pub keyspace: bool,
    /// Whether it goes to the event's `__keyevent` channel.
    pub keyevent: bool,
    /// The event's name (`set`, `lpush`, `expired`...).
    pub event: &'static str,
    /// The key's database.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
}

/// What a command's writes raised on its thread: the events queued, whether a change went
/// unqueued (no class wanted it and no client tracked: module doc), and the keys a
/// transaction's commands read, for the reader's tracking.
#[derive(Debug, Default)]
pub struct Raised {
    pub events: Vec<Event>,
    pub unnoted: bool,
    pub own_reads: Vec<OwnRead>,
}

/// A key a transaction read, as Redis's order of its reads and writes leaves the reader's
/// tracking of it once the transaction's writes are told (module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnRead {
    pub key: Vec<u8>,
    /// The reader is told of the key's change: it tracked the key before the transaction,
    /// or read it before one of the transaction's writes of it.
    pub told: bool,
    /// The reader tracks the key after: the last of the transaction's reads and writes of
    /// it was a read.
    pub kept: bool,
}

impl Raised {
    /// Nothing raised.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && !self.unnoted
    }
}

thread_local! {
    static RAISED: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
    static UNNOTED: Cell<bool> = const { Cell::new(false) };
    /// The keys the running transaction read ([`note_read`]); `told` holds "tracked before
    /// or read before a write", `kept` "last touched by a read".
    static READS: RefCell<Vec<OwnRead>> = const { RefCell::new(Vec::new()) };
}

/// A transaction's command read `key` for a tracking client, which tracked it before the
/// transaction if `tracked_before` (for a key read before in it: whatever is passed).
pub fn note_read(key: &[u8], tracked_before: bool) {
    READS.with(|r| {
        let mut r = r.borrow_mut();
        match r.iter_mut().find(|e| e.key == key) {
            Some(e) => e.kept = true,
            None => r.push(OwnRead { key: key.to_vec(), told: tracked_before, kept: true }),
        }
    });
}

impl Notifier {
    /// A notifier with `flags` enabled.
    pub const fn new(flags: u32) -> Notifier {
        Notifier {
            flags: AtomicU32::new(flags),
            changes: AtomicU64::new(0),
            tracking: AtomicBool::new(false),
            expired: AtomicU64::new(0),
        }
    }

    /// The changes counted since the start (see the field).
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Counts a key deleted because its time was up.
    pub fn count_expired(&self) {
        self.expired.fetch_add(1, Ordering::Relaxed);
    }

    /// The keys deleted because their time was up, since the start or the last reset.
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT: the expired keys' count back to zero.
    pub fn reset_expired(&self) {
        self.expired.store(0, Ordering::Relaxed);
    }

    /// Counts `n` changes that raise no event (FLUSHALL, FLUSHDB).
    pub fn count_changes(&self, n: u64) {
        self.changes.fetch_add(n, Ordering::Relaxed);
    }

    /// The enabled classes.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Enables exactly `flags`.
    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Whether every change is queued for client-side caching's invalidations.
    pub fn set_tracking(&self, on: bool) {
        self.tracking.store(on, Ordering::Release);
    }

    /// Whether every change is queued for client-side caching ([`Notifier::set_tracking`]).
    #[inline]
    pub fn tracking(&self) -> bool {
        self.tracking.load(Ordering::Acquire)
    }

    /// Whether an event of `class` would be raised now.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let f = self.flags();
        f & class != 0 && f & (KEYSPACE | KEYEVENT) != 0
    }

    /// Raises `event` of `class` on `key` of database `db` (queued on this thread: [`take`])
    /// if the class is enabled, and the keyspace or keyevent channels are.
    #[inline]
    pub fn raise(&self, db: usize, class: u32, event: &'static str, key: &[u8]) {
        if class != NEW {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
        let f = self.flags();
        let wanted = f & class != 0 && f & (KEYSPACE | KEYEVENT) != 0;
        if wanted || (class != NEW && self.tracking.load(Ordering::Acquire)) {
            queue(if wanted { f } else { 0 }, db, event, key);
        } else if class != NEW {
            UNNOTED.set(true);
        }
    }
}

#[cold]
fn queue(flags: u32, db: usize, event: &'static str, key: &[u8]) {
    // With no channel flag the event is there for client-side caching alone.
    let e = Event {
        keyspace: flags & KEYSPACE != 0,
        keyevent: flags & KEYEVENT != 0,
        event,
        db,
        key: key.to_vec(),
    };
    READS.with(|r| {
        if let Some(read) = r.borrow_mut().iter_mut().find(|r| r.key == e.key) {
            // A write after a read: the reader is told, and no longer tracks the key.
            read.told |= read.kept;
            read.kept = false;
        }
    });
    RAISED.with(|r| r.borrow_mut().push(e));
}

/// Whether this thread raised events, made unqueued changes or noted a transaction's reads,
/// not taken yet (so the command's end takes the notes of a transaction that wrote nothing,
/// and no later command on the thread finds them).
pub fn raised() -> bool {
    UNNOTED.get()
        || RAISED.with(|r| !r.borrow().is_empty())
        || READS.with(|r| !r.borrow().is_empty())
}

/// Takes what this thread raised since the last take, the events in the order raised.
pub fn take() -> Raised {
    Raised {
        events: RAISED.with(|r| std::mem::take(&mut *r.borrow_mut())),
        unnoted: UNNOTED.take(),
        own_reads: READS.with(|r| std::mem::take(&mut *r.borrow_mut())),
    }
}

/// Drops what this thread raised (its writes failed).
pub fn discard() {
    RAISED.with(|r| r.borrow_mut().clear());
    UNNOTED.set(false);
    READS.with(|r| r.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_strings_parse_and_render_in_redis_order() {
        assert_eq!(parse_classes(b""), Some(0));
        assert_eq!(parse_classes(b"KA"), Some(KEYSPACE | ALL));
        assert_eq!(parse_classes(b"Kq"), None);
        for (given, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("Ex", "xE"),
            ("nE", "nE"),
            ("mK", "Km"),
            ("AnK", "AK"),
            ("tdxg", "gxtd"),
            ("", ""),
        ] {
            let f = parse_classes(given.as_bytes()).unwrap();
            assert_eq!(render_classes(f), shown, "{given}");
        }
    }

    /// A transaction's reads of keys it writes, in Redis's order (module doc).
    #[test]
    fn a_transactions_reads_say_whether_its_reader_is_told_and_keeps_the_key() {
        discard();
        let n = Notifier::default();
        n.set_tracking(true);
        // Written, then read, by a reader that did not track it: untold, kept.
        n.raise(0, STRING, "set", b"w-r");
        note_read(b"w-r", false);
        // Read, then written: told, not kept.
        note_read(b"r-w", false);
        n.raise(0, STRING, "set", b"r-w");
        // Read, written, read again: told, kept.
        note_read(b"r-w-r", false);
        n.raise(0, STRING, "set", b"r-w-r");
        note_read(b"r-w-r", false);
        // Tracked before, written, then read: told, kept.
        n.raise(0, STRING, "set", b"t-w-r");
        note_read(b"t-w-r", true);
        // Read only.
        note_read(b"r", false);
        let own = |key: &str, told, kept| OwnRead { key: key.into(), told, kept };
        assert_eq!(
            take().own_reads,
            vec![
                own("w-r", false, true),
                own("r-w", true, false),
                own("r-w-r", true, true),
                own("t-w-r", true, true),
                own("r", false, true),
            ]
        );
        note_read(b"x", false);
        assert!(raised(), "a transaction's notes are taken at its end");
        discard();
        assert!(!raised());
        assert!(take().own_reads.is_empty());
    }

    #[test]
    fn events_are_queued_only_for_enabled_classes_with_a_channel_kind() {
        discard();
        let n = Notifier::default();
        n.raise(0, STRING, "set", b"k");
        n.set_flags(STRING);
        n.raise(0, STRING, "set", b"k");
        let none = take();
        assert!(none.events.is_empty(), "no K nor E: nothing to publish to");
        assert!(none.unnoted, "changes went unqueued");
        n.set_flags(STRING | KEYEVENT);
        n.raise(0, NEW, "new", b"k");
        assert!(take().is_empty(), "a new key alone is no change");
        n.raise(0, LIST, "lpush", b"l");
        n.raise(0, STRING, "set", b"k");
        let Raised { events: e, unnoted, .. } = take();
        assert!(unnoted, "the list's change");
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].keyspace, e[0].keyevent, e[0].event), (false, true, "set"));
        assert_eq!(e[0].key, b"k");
        n.raise(0, STRING, "set", b"k");
        discard();
        assert!(take().is_empty());
    }
}
