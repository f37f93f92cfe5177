//! The replication backlog: the stream of writes a master sends its replicas after their
//! dataset (Redis's replication stream, `sync_source`), and how the writers append to it in
//! an order consistent with the dataset a replica was sent.
//!
//! ```text
//! the stream:  one RESP array of bulk strings per command, as a client sends it
//!              *<argc>\r\n  then per argument  $<len>\r\n<bytes>\r\n
//!              *2\r\n$6\r\nSELECT\r\n$<n>\r\n<db>\r\n  before a command whose database is
//!              not the one the stream last selected (and before the first after a
//!              dataset was taken: `forget_selected`)
//! offsets:     bytes of the stream since the server started (Redis's
//!              `master_repl_offset`); a replica sent the dataset of offset N reads the
//!              stream from byte N on, and later asks PSYNC <replid> <N+1>
//! ```
//!
//! The stream exists once a replica first asked for it ([`Backlog::activate`]); before,
//! writers pay one check. From then on every write command holds its keys' locks until
//! its stream entry is appended (`commands::propagation`), and a dataset is taken under
//! every lock with the stream's end offset: each write is then in the dataset or after
//! its offset, never both nor neither. Activation waits for the writes that began before
//! it and found it off ([`Backlog::enter`]) to end, so none of them straddles it. A master
//! that had no replica for `repl-backlog-ttl` seconds turns the stream off again, under a
//! new id ([`Backlog::free_unless`]), as redis-server frees its backlog.
//!
//! Histories (Redis's PSYNC2): the stream is named by a replication id. A replica's backlog
//! holds its master's stream as the master sent it, at the master's offsets and under the
//! master's id ([`Backlog::adopt`] after a full sync, then [`Backlog::append_bytes`] with each
//! command it applied, whole transactions at their EXEC), so its own replicas, and the
//! master's other replicas once it is promoted, read the very bytes they would have read
//! from the master. When a replica becomes a master (REPLICAOF NO ONE), or its master's id
//! changes under a resumed link, the stream goes on under a new id and the old one is kept
//! as the second id up to the offset where it ended ([`Backlog::shift_id`]): a PSYNC naming
//! the old id resumes when it asks for no byte past that offset. That is what lets the
//! other replicas, and the old master, follow a promoted replica without a full sync.
//!
//! ```text
//! ids:   replid   the stream's id now (40 hex digits)
//!        replid2  the id it had before its last shift, and `second`: the first offset
//!                 that history does not share with this one (Redis's second_repl_offset);
//!                 PSYNC <replid2> <n> resumes when n <= second
//! ```
//!
//! Memory: the last `repl-backlog-size` bytes are kept for partial resyncs (PSYNC), and
//! more while a connected replica still has to read them, up to a hard limit behind the
//! end ([`Backlog::set_limits`]; Redis's `client-output-buffer-limit replica`, 256 MB): a
//! replica that far behind is dropped ([`Reader::dropped`]) and resyncs in full.

use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// In-flight counters of writes that found the stream off, spread over cache lines by
/// thread.
const SLOTS: usize = 16;

#[repr(align(64))]
#[derive(Default)]
struct Slot(AtomicU32);

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

fn thread_slot() -> usize {
    SLOT.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS);
        }
        s.get()
    })
}

/// The backlog of one server.
pub struct Backlog {
    active: AtomicBool,
    activating: Mutex<()>,
    slots: [Slot; SLOTS],
    inner: Mutex<Inner>,
    /// The stream's end offset (`first` + the bytes held), read without the lock.
    end: AtomicU64,
    /// The ids (module doc): drawn at start, again when the dataset is replaced
    /// ([`Backlog::reset`]); the master's after a full sync ([`Backlog::adopt`]).
    ids: Mutex<Ids>,
    /// Held by a replica's link while it applies one of its master's commands and appends
    /// the command's bytes, and by a dataset taken for a replica of this one: a command is
    /// then in the dataset or after its offset, never both nor neither ([`Backlog::gate`]).
    gate: Mutex<()>,
}

/// The stream's id and the one before its last shift (module doc).
#[derive(Debug, Clone, Default)]
struct Ids {
    replid: String,
    /// The id before the last shift and the first offset it does not share; `None` before
    /// any shift and after a reset or an adoption.
    replid2: Option<(String, u64)>,
}

struct Inner {
    buf: VecDeque<u8>,
    /// Offset of `buf[0]`.
    first: u64,
    /// The database the stream last selected (`None`: the next entry selects).
    selected: Option<usize>,
    /// `repl-backlog-size`.
    size: usize,
    /// How far behind the end a reader may fall before it is dropped.
    hard_limit: u64,
    readers: Vec<Arc<Reader>>,
    /// Readers registered since the start (the backlog's time to live counts from the last
    /// replica: [`Backlog::readers_seen`]).
    registered: u64,
}

/// A replica reading the stream: where it has read to, kept by its sender.
#[derive(Debug)]
pub struct Reader {
    at: AtomicU64,
    dropped: AtomicBool,
    /// Its sender waits for more ([`Reader::more`]): the next append wakes it. Only a
    /// waiting reader is woken, so an append with every reader busy sending wakes nobody.
    waiting: AtomicBool,
    wake: tokio::sync::Notify,
}

impl Reader {
    /// Where it has read to.
    pub fn at(&self) -> u64 {
        self.at.load(Ordering::Acquire)
    }

    /// Whether it fell so far behind that its bytes were let go: its replica must resync.
    pub fn dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Waits until the stream has bytes past where this reader is, or it was dropped
    /// (returns at once if so already). A wake-up may come without them: read, then ask
    /// again.
    pub async fn more(&self, backlog: &Backlog) {
        // Marked before the look: an append after the look finds the mark and wakes it
        // (`notify_one` keeps the wake-up for a waiter not yet waiting).
        self.waiting.store(true, Ordering::SeqCst);
        if backlog.end.load(Ordering::SeqCst) > self.at() || self.dropped() {
            self.waiting.store(false, Ordering::Relaxed);
            return;
        }
        self.wake.notified().await;
    }

    /// Wakes its sender if it waits.
    fn poke(&self) {
        if self.waiting.swap(false, Ordering::SeqCst) {
            self.wake.notify_one();
        }
    }
}

/// Why bytes could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// They were let go (the reader fell behind the backlog's start).
    Trimmed,
}

/// A write under way ([`Backlog::enter`]): whether it appends to the stream.
pub struct Entered<'a> {
    slot: Option<&'a AtomicU32>,
    active: bool,
}

impl Entered<'_> {
    /// Whether the stream is on for this write: it holds its keys' locks until its entry is
    /// appended.
    pub fn active(&self) -> bool {
        self.active
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.slot {
            s.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// One command of the stream: its database and the command, encoded ([`encode`]) when it
/// was gathered, so its arguments are not copied one by one and the encoding is done
/// outside the backlog's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub db: usize,
    pub resp: Vec<u8>,
}

impl Item {
    /// The command `argv` of database `db`.
    pub fn new<A: AsRef<[u8]>>(db: usize, argv: &[A]) -> Item {
        let size: usize = argv.iter().map(|a| a.as_ref().len() + 16).sum();
        let mut resp = Vec::with_capacity(size + 16);
        encode(&mut resp, argv);
        Item { db, resp }
    }
}

impl Default for Backlog {
    fn default() -> Self {
        let replid = new_replid();
        Backlog {
            active: AtomicBool::new(false),
            activating: Mutex::new(()),
            slots: Default::default(),
            inner: Mutex::new(Inner {
                buf: VecDeque::new(),
                first: 0,
                selected: None,
                size: 1 << 20,
                hard_limit: 256 << 20,
                readers: Vec::new(),
                registered: 0,
            }),
            end: AtomicU64::new(0),
            ids: Mutex::new(Ids { replid, replid2: None }),
            gate: Mutex::new(()),
        }
    }
}

impl Backlog {
    /// Redis's `master_replid`.
    pub fn replid(&self) -> String {
        self.ids.lock().replid.clone()
    }

    /// Redis's `master_replid2` and `second_repl_offset`: the id before the last shift and
    /// the first offset it does not share with this stream (module doc).
    pub fn replid2(&self) -> Option<(String, u64)> {
        self.ids.lock().replid2.clone()
    }

    /// The dataset was replaced other than by commands (a full sync from this server's own
    /// master): a new id, nothing held, and every reader dropped (its replica syncs in full).
    pub fn reset(&self) {
        let mut g = self.inner.lock();
        *self.ids.lock() = Ids { replid: new_replid(), replid2: None };
        Self::drop_all(&mut g);
    }

    /// Lets every reader go: each one's replica is told (its sender wakes to see it was
    /// dropped) and asks again.
    fn let_readers_go(g: &mut Inner) {
        for r in g.readers.drain(..) {
            r.dropped.store(true, Ordering::Release);
            r.poke();
        }
    }

    /// Drops every reader and every byte held; the end stays.
    fn drop_all(g: &mut Inner) {
        Self::let_readers_go(g);
        g.first += g.buf.len() as u64;
        g.buf.clear();
        g.selected = None;
    }

    /// A full sync from this server's master loaded the master's dataset of `offset` in
    /// stream `replid`: this stream becomes the master's from there (module doc), with
    /// `selected` the database the master's stream has selected there (the RDB's
    /// `repl-stream-db`), `None` when its next command selects one. Every reader is dropped.
    pub fn adopt(&self, replid: &str, offset: u64, selected: Option<usize>) {
        let mut g = self.inner.lock();
        *self.ids.lock() = Ids { replid: replid.to_string(), replid2: None };
        Self::drop_all(&mut g);
        g.first = offset;
        g.selected = selected;
        self.end.store(offset, Ordering::SeqCst);
    }

    /// The stream goes on under `replid` (a new random one when `None`): the current id is
    /// kept as the second one, sharing the offsets up to this end (module doc). Every reader
    /// is let go, the bytes kept, as redis-server disconnects its replicas then: each asks
    /// again at once, within the shared offsets, and resumes under the new id (one that read
    /// on would be past them, under an id it could no longer resume). Nothing is done when
    /// `replid` is the current id.
    pub fn shift_id(&self, replid: Option<String>) {
        let mut g = self.inner.lock();
        let mut ids = self.ids.lock();
        let next = replid.unwrap_or_else(new_replid);
        if next == ids.replid {
            return;
        }
        let end = g.first + g.buf.len() as u64;
        let old = std::mem::replace(&mut ids.replid, next);
        ids.replid2 = Some((old, end + 1));
        Self::let_readers_go(&mut g);
    }

    /// What a replica's link holds while it applies one of its master's commands and appends
    /// its bytes ([`Backlog::append_bytes`]), and what a dataset taken for a replica holds
    /// (module doc). Taken before any key lock.
    pub fn gate(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.gate.lock()
    }

    /// The database the stream selected last, `None` when its next entry selects one.
    pub fn selected(&self) -> Option<usize> {
        self.inner.lock().selected
    }

    /// Whether the stream exists (a replica asked for it since the start).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Begins a write: whether it appends to the stream. While the stream is off, the
    /// write is counted until the returned value drops, so that [`Backlog::activate`] waits
    /// for it.
    pub fn enter(&self) -> Entered<'_> {
        if self.active.load(Ordering::Acquire) {
            return Entered { slot: None, active: true };
        }
        let s = &self.slots[thread_slot()].0;
        s.fetch_add(1, Ordering::SeqCst);
        if self.active.load(Ordering::SeqCst) {
            s.fetch_sub(1, Ordering::SeqCst);
            return Entered { slot: None, active: true };
        }
        Entered { slot: Some(s), active: false }
    }

    /// Turns the stream on (later calls return at once while it is on) and returns when
    /// every write that began while it was off has ended. Blocking: call it off the async
    /// workers, holding no key lock. The gate may be held (no such write takes it): a dataset
    /// taken for a replica activates under it, so that no freeing comes in between
    /// ([`Backlog::free_unless`]).
    pub fn activate(&self) {
        let _one = self.activating.lock();
        if self.active.swap(true, Ordering::SeqCst) {
            return;
        }
        for s in &self.slots {
            while s.0.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// Sets `repl-backlog-size` and the replicas' limit behind the end (0: none).
    pub fn set_limits(&self, size: usize, hard_limit: u64) {
        let mut g = self.inner.lock();
        g.size = size.max(16 * 1024);
        g.hard_limit = if hard_limit == 0 { u64::MAX } else { hard_limit };
    }

    /// The stream's end offset (bytes appended since the start).
    pub fn offset(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// The first offset still held and how many bytes are held.
    pub fn held(&self) -> (u64, u64) {
        let g = self.inner.lock();
        (g.first, g.buf.len() as u64)
    }

    /// Appends `items` (each after a SELECT of its database when the stream last selected
    /// another), wrapped in MULTI/EXEC when `transaction` and there are several. The caller
    /// holds the locks of the keys they wrote.
    pub fn append(&self, items: &[Item], transaction: bool) {
        if items.is_empty() {
            return;
        }
        let wrap = transaction && items.len() > 1;
        let mut g = self.inner.lock();
        let select = |g: &mut Inner, db: usize| {
            if g.selected != Some(db) {
                let mut bytes = Vec::new();
                encode(&mut bytes, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
                g.buf.extend(&bytes);
                g.selected = Some(db);
            }
        };
        if wrap {
            select(&mut g, items[0].db);
            g.buf.extend(b"*1\r\n$5\r\nMULTI\r\n");
        }
        for it in items {
            select(&mut g, it.db);
            g.buf.extend(&it.resp);
        }
        if wrap {
            g.buf.extend(b"*1\r\n$4\r\nEXEC\r\n");
        }
        self.appended(&mut g);
    }

    /// Appends `bytes` of this server's master's stream as they came (a replica's backlog,
    /// module doc), after which the master's stream has database `selected` selected. The
    /// caller holds [`Backlog::gate`].
    pub fn append_bytes(&self, bytes: &[u8], selected: usize) {
        if bytes.is_empty() {
            return;
        }
        let mut g = self.inner.lock();
        g.buf.extend(bytes);
        g.selected = Some(selected);
        self.appended(&mut g);
    }

    /// Appends a command of no database (PING, REPLCONF GETACK).
    pub fn append_raw(&self, argv: &[&[u8]]) {
        let mut bytes = Vec::new();
        encode(&mut bytes, argv);
        let mut g = self.inner.lock();
        g.buf.extend(&bytes);
        self.appended(&mut g);
    }

    /// After bytes were added to `g.buf`: drops the readers too far behind, wakes the
    /// waiting ones, trims what no one needs and publishes the new end.
    fn appended(&self, g: &mut Inner) {
        let end = g.first + g.buf.len() as u64;
        // Readers too far behind are dropped; the rest hold their unread bytes.
        let limit = g.hard_limit;
        g.readers.retain(|r| {
            let keep = end - r.at().min(end) <= limit;
            if !keep {
                r.dropped.store(true, Ordering::Release);
            }
            r.poke();
            keep
        });
        let slowest = g.readers.iter().map(|r| r.at()).min().unwrap_or(end);
        let keep_from = end.saturating_sub(g.size as u64).min(slowest).max(g.first);
        let drop = (keep_from - g.first) as usize;
        if drop > 0 {
            g.buf.drain(..drop);
            g.first = keep_from;
        }
        self.end.store(end, Ordering::SeqCst);
    }

    /// The next entry selects its database: the stream of a dataset taken now starts
    /// without one selected. Call it under every key lock, with the dataset.
    pub fn forget_selected(&self) {
        self.inner.lock().selected = None;
    }

    /// Registers a reader from offset `at` (at least the first held byte, at most the end),
    /// or `Gone` when those bytes were let go.
    pub fn reader(&self, at: u64) -> Result<Arc<Reader>, Gone> {
        let mut g = self.inner.lock();
        Self::register(&mut g, at)
    }

    fn register(g: &mut Inner, at: u64) -> Result<Arc<Reader>, Gone> {
        let end = g.first + g.buf.len() as u64;
        if at < g.first || at > end {
            return Err(Gone::Trimmed);
        }
        let r = Arc::new(Reader {
            at: AtomicU64::new(at),
            dropped: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
        });
        g.readers.push(r.clone());
        g.registered += 1;
        Ok(r)
    }

    /// Registers a reader from offset `at` of the history `replid` names (PSYNC's partial
    /// resync: this stream's id, or its second id while `at` is within what the two share),
    /// or `Gone` when this is another history (a reset came) or those bytes were let go.
    pub fn resume(&self, replid: &[u8], at: u64) -> Result<Arc<Reader>, Gone> {
        let mut g = self.inner.lock();
        // A freed stream ([`Backlog::free_unless`]) is appended to by no write: nothing
        // to resume, whatever the id.
        if !self.active.load(Ordering::Acquire) {
            return Err(Gone::Trimmed);
        }
        let shared = {
            let ids = self.ids.lock();
            ids.replid.as_bytes() == replid
                || ids
                    .replid2
                    .as_ref()
                    .is_some_and(|(id, second)| id.as_bytes() == replid && at < *second)
        };
        if !shared {
            return Err(Gone::Trimmed);
        }
        Self::register(&mut g, at)
    }

    /// Readers reading now, and readers registered since the start.
    pub fn readers_seen(&self) -> (usize, u64) {
        let g = self.inner.lock();
        (g.readers.len(), g.registered)
    }

    /// Frees the stream (Redis's `repl-backlog-ttl`, on a master that had no replica for
    /// that long): the stream is off again, as before its first replica, every byte held is
    /// let go, and it goes on under a new id with no second one, as redis-server does then,
    /// since writes from here on are in no stream while its end stays: a PSYNC naming
    /// either id syncs in full. Nothing is done, and false returned, when the stream is off,
    /// a reader reads it, or `keep` says so (it runs under the gate and before any
    /// activation may start: the caller's check that the server follows no master).
    ///
    /// Holds the gate, then the activation's lock: a dataset taken for a replica activates
    /// the stream under the gate ([`Backlog::activate`]'s callers), so no dataset is taken
    /// between its activation and its reader's registration with the stream freed.
    pub fn free_unless(&self, keep: impl FnOnce() -> bool) -> bool {
        let _gate = self.gate.lock();
        let _one = self.activating.lock();
        let mut g = self.inner.lock();
        if !self.active.load(Ordering::Acquire) || !g.readers.is_empty() || keep() {
            return false;
        }
        self.active.store(false, Ordering::SeqCst);
        *self.ids.lock() = Ids { replid: new_replid(), replid2: None };
        Self::drop_all(&mut g);
        true
    }

    /// Unregisters `r`.
    pub fn forget_reader(&self, r: &Arc<Reader>) {
        self.inner.lock().readers.retain(|x| !Arc::ptr_eq(x, r));
    }

    /// Up to `max` bytes from where `r` has read to, and moves it past them; empty at the
    /// end.
    pub fn read(&self, r: &Reader, max: usize) -> Result<Vec<u8>, Gone> {
        let g = self.inner.lock();
        let at = r.at();
        if r.dropped() || at < g.first {
            return Err(Gone::Trimmed);
        }
        let from = (at - g.first) as usize;
        let n = g.buf.len().saturating_sub(from).min(max);
        let bytes: Vec<u8> = g.buf.range(from..from + n).copied().collect();
        r.at.store(at + n as u64, Ordering::Release);
        Ok(bytes)
    }
}

/// 40 random hex digits.
fn new_replid() -> String {
    (0..40).map(|_| char::from(b"0123456789abcdef"[rand::random::<u8>() as usize % 16])).collect()
}

/// Appends `argv` as a RESP array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    use std::io::Write;
    // Lengths are written in place (no `String` each); writing to a `Vec` cannot fail.
    let _ = write!(out, "*{}\r\n", argv.len());
    for a in argv {
        let a = a.as_ref();
        let _ = write!(out, "${}\r\n", a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(db: usize, args: &[&str]) -> Item {
        Item::new(db, args)
    }

    #[test]
    fn entries_select_their_database_and_transactions_are_wrapped() {
        let b = Backlog::default();
        b.append(&[item(0, &["SET", "a", "1"])], false);
        b.append(&[item(0, &["INCR", "a"]), item(2, &["DEL", "b"])], true);
        let r = b.reader(0).unwrap();
        let got = b.read(&r, 1 << 20).unwrap();
        let want = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n\
                    *1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n\
                    *2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n*1\r\n$4\r\nEXEC\r\n";
        assert_eq!(String::from_utf8_lossy(&got), want);
        assert_eq!(b.offset(), want.len() as u64);
        assert_eq!(b.read(&r, 10).unwrap(), b"");
        b.forget_selected();
        b.append(&[item(2, &["PING"])], false);
        assert!(String::from_utf8_lossy(&b.read(&r, 1 << 20).unwrap())
            .starts_with("*2\r\n$6\r\nSELECT"));
    }

    #[test]
    fn old_bytes_go_unless_a_reader_needs_them_and_a_reader_too_far_behind_is_dropped() {
        let b = Backlog::default();
        b.set_limits(16 * 1024, 64 * 1024);
        let big = "x".repeat(1000);
        let slow = b.reader(0).unwrap();
        for _ in 0..40 {
            b.append(&[item(0, &["SET", "k", &big])], false);
        }
        // The slow reader holds everything (40 KB < 64 KB).
        assert_eq!(b.held().0, 0);
        assert!(b.read(&slow, 100).is_ok());
        for _ in 0..40 {
            b.append(&[item(0, &["SET", "k", &big])], false);
        }
        assert!(slow.dropped());
        assert_eq!(b.read(&slow, 100), Err(Gone::Trimmed));
        let (first, len) = b.held();
        assert!(len <= 17 * 1024 && first > 0, "{first} {len}");
        assert!(b.reader(0).is_err() && b.reader(b.offset()).is_ok());
        assert_eq!(b.reader(0).err(), Some(Gone::Trimmed));
    }

    #[test]
    fn an_adopted_stream_takes_the_masters_id_and_offsets() {
        let b = Backlog::default();
        b.activate();
        let r = b.reader(0).unwrap();
        b.append(&[item(0, &["SET", "a", "1"])], false);
        b.adopt("m", 1000, Some(3));
        assert!(r.dropped(), "its replicas sync again");
        assert_eq!((b.replid(), b.offset(), b.selected()), ("m".to_string(), 1000, Some(3)));
        assert!(b.reader(999).is_err() && b.reader(1000).is_ok());
        let frame = b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n";
        b.append_bytes(frame, 5);
        assert_eq!((b.offset(), b.selected()), (1000 + frame.len() as u64, Some(5)));
        let r = b.resume(b"m", 1000).unwrap();
        assert_eq!(b.read(&r, 1 << 20).unwrap(), frame, "the master's bytes as they came");
    }

    #[test]
    fn a_shifted_id_resumes_the_old_history_up_to_where_it_ended() {
        let b = Backlog::default();
        b.activate();
        b.adopt("old", 100, None);
        b.append_bytes(b"*1\r\n$4\r\nPING\r\n", 0);
        let end = b.offset();
        let reading = b.resume(b"old", 100).unwrap();
        b.shift_id(None);
        let new = b.replid();
        assert_ne!(new, "old");
        assert_eq!(b.replid2(), Some(("old".to_string(), end + 1)));
        // PSYNC old <n>: resumed for every n up to end + 1 (nothing past the old history).
        assert!(b.resume(b"old", 100).is_ok() && b.resume(b"old", end).is_ok());
        b.append(&[item(0, &["SET", "a", "1"])], false);
        assert_eq!(b.resume(b"old", end + 1).err(), Some(Gone::Trimmed));
        assert!(b.resume(new.as_bytes(), end + 1).is_ok());
        assert!(reading.dropped(), "its replica asks again, under the new id");
        // The master's new id under a resumed link; the same id again changes nothing.
        b.shift_id(Some("next".into()));
        assert_eq!(b.replid2().map(|(id, _)| id), Some(new.clone()));
        b.shift_id(Some("next".into()));
        assert_eq!(b.replid2().map(|(id, _)| id), Some(new));
        // A reset forgets both.
        b.reset();
        assert_eq!(b.replid2(), None);
        assert_eq!(b.resume(b"next", b.offset()).err(), Some(Gone::Trimmed));
    }

    #[test]
    fn a_reset_drops_the_readers_and_takes_a_new_id() {
        let b = Backlog::default();
        b.activate();
        let r = b.reader(0).unwrap();
        b.append(&[item(0, &["SET", "a", "1"])], false);
        let (id, end) = (b.replid(), b.offset());
        assert!(b.resume(id.as_bytes(), end).is_ok());
        b.reset();
        assert!(r.dropped());
        // The old history's offsets name nothing of the new one.
        assert_eq!(b.resume(id.as_bytes(), end).err(), Some(Gone::Trimmed));
        assert!(b.resume(b.replid().as_bytes(), end).is_ok());
        assert_ne!(b.replid(), id);
        assert_eq!(b.offset(), end);
        assert!(b.reader(0).is_err() && b.reader(end).is_ok());
        b.append(&[item(0, &["SET", "a", "2"])], false);
        let fresh = b.reader(end).unwrap();
        let bytes = b.read(&fresh, 100).unwrap();
        assert!(String::from_utf8_lossy(&bytes).starts_with("*2\r\n$6\r\nSELECT"));
    }

    /// A waiting reader is woken by each append from another thread, however the two
    /// interleave (a wake-up lost between its look and its wait would stall a replica
    /// until the next write), and by a reset that drops it.
    #[test]
    fn a_waiting_reader_is_woken_by_appends_and_by_its_drop() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let b = Arc::new(Backlog::default());
        let r = b.reader(0).unwrap();
        let writer = {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    b.append(&[item(0, &["SET", "k", &i.to_string()])], false);
                    if i % 7 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let end = rt.block_on(async {
            let mut got = 0u64;
            loop {
                let n = b.read(&r, 1 << 20).unwrap().len() as u64;
                got += n;
                if n == 0 && writer.is_finished() && got == b.offset() {
                    return got;
                }
                if n == 0 {
                    let waited = tokio::time::timeout(Duration::from_secs(10), r.more(&b)).await;
                    assert!(waited.is_ok() || got == b.offset(), "a wake-up was lost at {got}");
                }
            }
        });
        assert_eq!(end, b.offset());
        let waiter = {
            let (b, r) = (b.clone(), r.clone());
            std::thread::spawn(move || rt.block_on(r.more(&b)))
        };
        std::thread::sleep(Duration::from_millis(20));
        b.reset();
        waiter.join().unwrap();
        assert!(r.dropped());
    }

    #[test]
    fn activation_waits_for_the_writes_that_found_the_stream_off() {
        let b = Arc::new(Backlog::default());
        let e = b.enter();
        assert!(!e.active());
        let done = Arc::new(AtomicBool::new(false));
        let t = {
            let (b, done) = (b.clone(), done.clone());
            std::thread::spawn(move || {
                b.activate();
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst));
        drop(e);
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        assert!(b.enter().active());
    }

    #[test]
    fn a_freed_stream_is_off_under_a_new_id_and_resumes_nothing() {
        let b = Backlog::default();
        assert!(!b.free_unless(|| false), "off already");
        b.activate();
        b.append(&[item(0, &["SET", "a", "1"])], false);
        let r = b.reader(0).unwrap();
        assert_eq!(b.readers_seen(), (1, 1));
        assert!(!b.free_unless(|| false), "a replica reads it");
        b.forget_reader(&r);
        assert!(!b.free_unless(|| true), "the caller keeps it");
        b.shift_id(Some("before".into()));
        let (old, end) = (b.replid(), b.offset());
        assert!(b.free_unless(|| false));
        assert!(!b.is_active() && !b.enter().active(), "writes append nothing");
        assert!(b.replid() != old && b.replid2().is_none());
        assert_eq!((b.offset(), b.held(), b.selected()), (end, (end, 0), None));
        assert!(b.resume(old.as_bytes(), end).is_err() && b.resume(b"before", 1).is_err());
        let now = b.replid();
        assert!(b.resume(now.as_bytes(), end).is_err(), "not even under the new id");
        // A replica later: the stream goes on from its end.
        b.activate();
        let r = b.reader(end).unwrap();
        b.append(&[item(1, &["DEL", "x"])], false);
        assert!(String::from_utf8_lossy(&b.read(&r, 1 << 20).unwrap()).starts_with("*2\r\n$6"));
        assert_eq!(b.readers_seen(), (1, 2));
    }
}
