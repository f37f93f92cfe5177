//! SLOWLOG's log: the commands whose run took at least `slowlog-log-slower-than`
//! microseconds, newest first, at most `slowlog-max-len` of them, as Redis keeps it.
//!
//! What holds:
//! - A negative threshold logs nothing; 0 logs every command. Both settings change at once
//!   (CONFIG SET); a shorter maximum trims the log at its next entry, as in Redis.
//! - An entry keeps at most [`MAX_ARGS`] arguments (the last one kept then says how many
//!   more there were) and at most [`MAX_ARG_BYTES`] bytes of each (followed by how many more
//!   there were), so a large command does not pin its arguments in memory.
//! - Secrets never reach the log: the passwords of AUTH and HELLO ... AUTH, and the values
//!   CONFIG SET gives `requirepass`, `masterauth` and `masteruser`, are logged as
//!   `(redacted)` ([`redacted`]).
//! - Entry ids grow by one from 0 for the server's life; RESET does not start them again.
//!
//! Which runs are logged (EXEC's own run is not, its commands are; a script's commands are
//! not, its EVAL is; a blocked command when it is served or gives up) is the dispatcher's
//! part (`commands::dispatch_found`, `commands::blocking`).

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Arguments an entry keeps (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
pub const MAX_ARGS: usize = 32;
/// Bytes of each argument an entry keeps (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
pub const MAX_ARG_BYTES: usize = 128;
/// `slowlog-log-slower-than`'s default, in microseconds (Redis's).
pub const DEFAULT_THRESHOLD_US: i64 = 10_000;
/// `slowlog-max-len`'s default (Redis's).
pub const DEFAULT_MAX_LEN: usize = 128;

/// What replaces a secret argument.
const REDACTED: &[u8] = b"(redacted)";

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the server's sequence of entries.
    pub id: u64,
    /// When it was logged, in seconds since the Unix epoch.
    pub time: u64,
    /// How long it ran, in microseconds.
    pub duration_us: u64,
    /// Its arguments as logged (trimmed and redacted).
    pub args: Vec<Vec<u8>>,
    /// The client's address (`ip:port`).
    pub client_addr: String,
    /// The client's name (CLIENT SETNAME), empty if none.
    pub client_name: String,
}

#[derive(Default)]
struct Log {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// The server's slow log (module doc).
pub struct SlowLog {
    threshold_us: AtomicI64,
    max_len: AtomicUsize,
    log: Mutex<Log>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog::new(DEFAULT_THRESHOLD_US, DEFAULT_MAX_LEN)
    }
}

impl SlowLog {
    /// An empty log with these settings.
    pub fn new(threshold_us: i64, max_len: usize) -> SlowLog {
        SlowLog {
            threshold_us: AtomicI64::new(threshold_us),
            max_len: AtomicUsize::new(max_len),
            log: Mutex::new(Log::default()),
        }
    }

    /// Whether a run of `duration_us` is logged under the current threshold. Cheap: the
    /// dispatcher asks after every command.
    #[inline]
    pub fn is_slow(&self, duration_us: u64) -> bool {
        let t = self.threshold_us.load(Ordering::Relaxed);
        t >= 0 && duration_us >= t as u64
    }

    /// Logs the run of `args` by the client at `client_addr` named `client_name`, which took
    /// `duration_us`, if [`Self::is_slow`] (then the log is trimmed to its maximum).
    pub fn push(&self, args: &[Vec<u8>], duration_us: u64, client_addr: &str, client_name: &str) {
        if !self.is_slow(duration_us) {
            return;
        }
        let entry = Entry {
            id: 0,
            time: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            duration_us,
            args: logged_args(args),
            client_addr: client_addr.to_string(),
            client_name: client_name.to_string(),
        };
        let max = self.max_len.load(Ordering::Relaxed);
        let mut log = self.log.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry { id, ..entry });
        log.entries.truncate(max);
    }

    /// The newest `count` entries (all of them when `None`), newest first.
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let log = self.log.lock();
        let n = count.unwrap_or(usize::MAX).min(log.entries.len());
        log.entries.iter().take(n).cloned().collect()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.log.lock().entries.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every entry (ids go on from where they were).
    pub fn reset(&self) {
        self.log.lock().entries.clear();
    }

    /// `slowlog-log-slower-than`, in microseconds (negative: nothing is logged).
    pub fn set_threshold(&self, us: i64) {
        self.threshold_us.store(us, Ordering::Relaxed);
    }

    /// `slowlog-max-len`.
    pub fn set_max_len(&self, n: usize) {
        self.max_len.store(n, Ordering::Relaxed);
    }
}

/// The arguments of a command line as an entry keeps them (module doc).
pub fn logged_args(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let secret = redacted(args);
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, a) in args.iter().enumerate().take(kept) {
        if kept < args.len() && i == kept - 1 {
            out.push(format!("... ({} more arguments)", args.len() - kept + 1).into_bytes());
        } else if secret.contains(&i) {
            out.push(REDACTED.to_vec());
        } else if a.len() > MAX_ARG_BYTES {
            let mut s = a[..MAX_ARG_BYTES].to_vec();
            s.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes());
            out.push(s);
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The positions of the secrets in a command line (module doc): what SLOWLOG and MONITOR
/// show as `(redacted)`.
pub fn redacted(args: &[Vec<u8>]) -> Vec<usize> {
    let is =
        |i: usize, word: &str| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()));
    if is(0, "auth") {
        return (1..args.len()).collect();
    }
    if is(0, "hello") {
        // HELLO [protover [AUTH username password] [SETNAME clientname]]
        let mut secret = Vec::new();
        let mut j = 2;
        while j < args.len() {
            if is(j, "auth") && j + 2 < args.len() {
                secret.extend([j + 1, j + 2]);
                j += 3;
            } else if is(j, "setname") {
                j += 2;
            } else {
                j += 1;
            }
        }
        return secret;
    }
    if is(0, "migrate") {
        // AUTH password, AUTH2 username password: before KEYS, from the options on.
        let mut secret = Vec::new();
        let mut j = 6;
        while j < args.len() && !is(j, "keys") {
            let n = if is(j, "auth") {
                1
            } else if is(j, "auth2") {
                2
            } else {
                0
            };
            secret.extend((j + 1..=j + n).filter(|&i| i < args.len()));
            j += n + 1;
        }
        return secret;
    }
    if is(0, "acl") && is(1, "setuser") {
        // Every rule may hold a password (`>pass`, `<pass`, in a selector...).
        return (2..args.len()).collect();
    }
    if is(0, "config") && is(1, "set") {
        const SENSITIVE: [&str; 3] = ["requirepass", "masterauth", "masteruser"];
        return (2..args.len())
            .step_by(2)
            .filter(|&k| k + 1 < args.len() && SENSITIVE.iter().any(|s| is(k, s)))
            .map(|k| k + 1)
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn text(args: &[Vec<u8>]) -> String {
        args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn logs_at_or_over_the_threshold_newest_first_within_the_maximum() {
        let log = SlowLog::new(100, 3);
        log.push(&line(&["ping"]), 99, "a:1", "");
        assert!(log.is_empty(), "under the threshold");
        for i in 0..5 {
            log.push(&line(&["get", &format!("k{i}")]), 100 + i, "a:1", "n");
        }
        let got = log.newest(None);
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), [4, 3, 2]);
        assert_eq!(text(&got[0].args), "get k4");
        assert_eq!((got[0].duration_us, got[0].client_addr.as_str()), (104, "a:1"));
        assert_eq!(got[0].client_name, "n");
        assert_eq!(log.newest(Some(1)).len(), 1);
        assert_eq!(log.newest(Some(0)).len(), 0);
        log.reset();
        assert_eq!(log.len(), 0);
        log.push(&line(&["ping"]), 200, "a:1", "");
        assert_eq!(log.newest(None)[0].id, 5, "ids go on after a reset");
    }

    #[test]
    fn a_negative_threshold_logs_nothing_and_zero_logs_everything() {
        let log = SlowLog::new(-1, 10);
        log.push(&line(&["ping"]), u64::MAX, "a:1", "");
        assert!(log.is_empty());
        log.set_threshold(0);
        log.push(&line(&["ping"]), 0, "a:1", "");
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn a_shorter_maximum_trims_at_the_next_entry() {
        let log = SlowLog::new(0, 10);
        for _ in 0..5 {
            log.push(&line(&["ping"]), 1, "a:1", "");
        }
        log.set_max_len(2);
        assert_eq!(log.len(), 5);
        log.push(&line(&["ping"]), 1, "a:1", "");
        assert_eq!(log.len(), 2);
        log.set_max_len(0);
        log.push(&line(&["ping"]), 1, "a:1", "");
        assert!(log.is_empty());
    }

    #[test]
    fn long_lines_and_long_arguments_are_trimmed() {
        let mut words = vec!["sadd".to_string(), "set".to_string()];
        words.extend((3..=33).map(|i| i.to_string()));
        let args = line(&words.iter().map(String::as_str).collect::<Vec<_>>());
        let got = logged_args(&args);
        assert_eq!(got.len(), MAX_ARGS);
        assert_eq!(got[30], b"31");
        assert_eq!(got[31], b"... (2 more arguments)");
        let long = "A".repeat(129);
        let got = logged_args(&line(&["sadd", "set", "foo", &long]));
        assert_eq!(got[3], format!("{}... (1 more bytes)", "A".repeat(128)).into_bytes());
        let exact = "A".repeat(128);
        assert_eq!(logged_args(&line(&["set", "k", &exact]))[2], exact.as_bytes());
    }

    #[test]
    fn secrets_are_redacted() {
        let r = |w: &[&str]| text(&logged_args(&line(w)));
        assert_eq!(r(&["AUTH", "pw"]), "AUTH (redacted)");
        assert_eq!(r(&["acl", "SETUSER", "u", ">pw"]), "acl SETUSER (redacted) (redacted)");
        assert_eq!(r(&["auth", "user", "pw"]), "auth (redacted) (redacted)");
        assert_eq!(
            r(&["hello", "3", "setname", "auth", "AUTH", "u", "p"]),
            "hello 3 setname auth AUTH (redacted) (redacted)"
        );
        assert_eq!(r(&["hello", "3", "auth", "u"]), "hello 3 auth u", "no password given");
        assert_eq!(
            r(&["config", "set", "masterauth", "x", "hz", "10", "REQUIREPASS", "y"]),
            "config set masterauth (redacted) hz 10 REQUIREPASS (redacted)"
        );
        assert_eq!(r(&["config", "set", "masteruser"]), "config set masteruser");
        assert_eq!(r(&["config", "get", "requirepass"]), "config get requirepass");
        assert_eq!(
            r(&["MIGRATE", "h", "1", "", "0", "9", "COPY", "AUTH2", "u", "p", "KEYS", "auth"]),
            "MIGRATE h 1  0 9 COPY AUTH2 (redacted) (redacted) KEYS auth"
        );
    }
}
