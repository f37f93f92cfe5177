//! ACL LOG: the newest refusals (a command, key or channel a user may not use, a failed
//! AUTH), newest first, at most `acllog-max-len` of them. A refusal like one of the ten
//! newest entries (same reason, context, object and user, within a minute of it) counts on
//! that entry and moves it to the front instead of adding one, as Redis groups them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// How far apart in time two refusals may be and still share an entry.
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries a refusal is compared with.
const GROUPING_SCAN: usize = 10;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    /// ACL LOG's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in, or run by, a transaction.
    Multi,
    /// Called by a script.
    Lua,
}

impl Context {
    /// ACL LOG's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Refusals it stands for.
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command's full name, the key, the channel, or AUTH's command name.
    pub object: Vec<u8>,
    /// The user refused (for AUTH, the user named).
    pub username: Vec<u8>,
    /// When the latest refusal it counts happened (ms since the epoch).
    pub at_ms: u64,
    /// CLIENT INFO's line of the latest refused client.
    pub client_info: String,
}

/// The log (module doc).
pub struct AclLog {
    entries: Mutex<VecDeque<Entry>>,
    /// `acllog-max-len`.
    max_len: AtomicUsize,
}

impl Default for AclLog {
    fn default() -> Self {
        AclLog { entries: Mutex::default(), max_len: AtomicUsize::new(128) }
    }
}

impl AclLog {
    /// Records a refusal: `entry` with a count of one, or counted on an alike entry.
    pub fn add(&self, entry: Entry) {
        let mut entries = self.entries.lock();
        let similar = entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.at_ms.abs_diff(entry.at_ms) <= GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        match similar.and_then(|i| entries.remove(i)) {
            Some(mut e) => {
                e.count += 1;
                e.at_ms = entry.at_ms;
                e.client_info = entry.client_info;
                entries.push_front(e);
            }
            None => {
                entries.push_front(Entry { count: 1, ..entry });
                entries.truncate(self.max_len.load(Ordering::Relaxed));
            }
        }
    }

    /// Sets `acllog-max-len`, dropping the oldest entries past it.
    pub fn set_max_len(&self, max_len: usize) {
        let mut entries = self.entries.lock();
        self.max_len.store(max_len, Ordering::Relaxed);
        entries.truncate(max_len);
    }

    /// The newest `n` entries, newest first.
    pub fn newest(&self, n: usize) -> Vec<Entry> {
        self.entries.lock().iter().take(n).cloned().collect()
    }

    /// ACL LOG RESET.
    pub fn clear(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, at_ms: u64) -> Entry {
        Entry {
            count: 0,
            reason: Reason::Command,
            context: Context::Toplevel,
            object: object.as_bytes().to_vec(),
            username: b"u".to_vec(),
            at_ms,
            client_info: format!("at {at_ms}"),
        }
    }

    /// Alike refusals share an entry (its count, time and client moving on, the entry to
    /// the front), but not past a minute or past the ten newest; the length is bounded.
    #[test]
    fn alike_refusals_share_an_entry_and_the_log_is_bounded() {
        let log = AclLog::default();
        log.add(entry("get", 1_000));
        log.add(entry("set", 2_000));
        log.add(entry("get", 3_000));
        let e = log.newest(10);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].object.as_slice(), e[0].count, e[0].at_ms), (&b"get"[..], 2, 3_000));
        assert_eq!(e[0].client_info, "at 3000");
        log.add(entry("get", 3_000 + GROUPING_MS + 1));
        assert_eq!(log.newest(10).len(), 3, "a minute later: an entry of its own");
        log.add(entry("s", 65_000));
        for i in 0..10 {
            log.add(entry(&format!("c{i}"), 70_000));
        }
        log.add(entry("s", 70_000));
        assert_eq!(log.newest(100).len(), 15, "past the ten newest: not compared");
        log.set_max_len(4);
        assert_eq!(log.newest(100).len(), 4, "lowered: the oldest dropped");
        log.add(entry("x", 70_000));
        let e = log.newest(100);
        assert_eq!((e.len(), e[0].object.as_slice()), (4, &b"x"[..]));
        log.clear();
        assert!(log.newest(10).is_empty());
    }
}
