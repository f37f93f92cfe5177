//! The server's half of client-side caching (Redis 6's CLIENT TRACKING): which clients track,
//! the keys each default-mode client read, the prefixes of the broadcasting (BCAST) ones, and
//! the invalidation messages a change of a key sends them.
//!
//! As Redis 7.0 has it (`tracking.c`):
//! - **Default mode**: a read-only command of a tracking client puts its keys in the table
//!   (key -> client ids; the table ignores the database, as Redis's). The first change of a
//!   key after that sends one message naming it to each of those clients and takes the key
//!   out of the table (a client reads it again to track it again). With `OPTIN` a read is
//!   remembered only after `CLIENT CACHING yes`, with `OPTOUT` unless `CLIENT CACHING no`
//!   (each for the next command: `commands::client_tracking`).
//! - **BCAST**: a client names key prefixes (none: every key); every change of a matching key
//!   is sent to it, the keys of one prefix gathered in one message per command.
//! - `NOLOOP`: a client is not told of its own changes. `REDIRECT id`: the messages go to
//!   that client instead. A client whose redirect target has gone gets
//!   `tracking-redir-broken` (RESP3 only) instead of each message.
//! - FLUSHALL and FLUSHDB (and SWAPDB here) send every tracking client a message with a null
//!   key list ("everything"), and empty the table.
//! - `tracking-table-max-keys`: past it, keys leave the table with an invalidation each.
//!
//! Messages go into the receiving connection's queue (`pubsub::Delivery`), which it writes
//! after its current replies; the connection renders them in its protocol (RESP3: an
//! `invalidate` push; RESP2: a `message` of the `__redis__:invalidate` channel, if it is
//! subscribed to it and the messages are redirected to it; otherwise nothing, as Redis).
//!
//! Contract: a change's message is sent once the change is visible to other clients (the
//! command layer invalidates where it publishes keyspace notifications; in cluster mode each
//! replica as it applies the change, `cluster::apply`), and a read is put in
//! the table *before* its command reads (`commands::client_tracking`): a change made between
//! the two is then told, where Redis, single-threaded, registers after the read; a write that
//! found no client tracking looks again once visible ([`Tracking::active_after_write`]), and
//! tells every tracking client of "everything" if one tracks by then. A message too many
//! only costs a client a cached value; one missed would leave a stale one.
//! Ids of clients that stopped tracking stay in the table until their key changes (Redis's
//! lazy cleanup) and are skipped then.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;

use crate::pubsub::Delivery;
use crate::types::notify::{Notifier, OwnRead};

/// Redis's default `tracking-table-max-keys`.
pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

/// How a client tracks, as CLIENT TRACKING ON set it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `REDIRECT id` (0: none).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// `PREFIX`es (BCAST only; none: the empty prefix).
    pub prefixes: Vec<Vec<u8>>,
}

/// A connection's own view of its tracking, for the commands it runs (kept in `state::Conn`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    /// `CLIENT CACHING yes` (OPTIN) or `no` (OPTOUT) was given for the next command.
    pub caching: bool,
}

impl Mode {
    /// Whether a read of this client's next command is remembered (default mode only).
    pub fn remembers(&self) -> bool {
        // OPTIN: only after CACHING yes; OPTOUT: unless CACHING no.
        let asked = if self.optin { self.caching } else { !(self.optout && self.caching) };
        !self.bcast && asked
    }
}

/// What CLIENT TRACKINGINFO, GETREDIR and CLIENT LIST report of a tracking client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub redirect: u64,
    pub bcast: bool,
    pub noloop: bool,
    /// Its redirect target has gone.
    pub broken: bool,
    /// Its prefixes, in byte order.
    pub prefixes: Vec<Vec<u8>>,
}

/// The keys one message names.
pub type KeyList = Arc<[Vec<u8>]>;

/// The keys a message names: `None` for all of them (a flush).
pub type Keys = Option<KeyList>;

struct Client {
    redirect: u64,
    bcast: bool,
    noloop: bool,
    /// The redirect target has disconnected.
    target_gone: bool,
    prefixes: BTreeSet<Vec<u8>>,
}

#[derive(Default)]
struct Inner {
    clients: HashMap<u64, Client>,
    /// Default mode: key -> the clients that read it since its last change.
    table: HashMap<Vec<u8>, HashSet<u64>>,
    /// How many (key, client) pairs `table` holds.
    items: usize,
    /// BCAST: prefix -> its clients.
    prefixes: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    /// The message queues of the connections that can receive messages (RESP3 ones, and
    /// those that subscribed), by client id.
    queues: HashMap<u64, UnboundedSender<Delivery>>,
}

/// The server's tracking state (module doc).
pub struct Tracking {
    /// Clients with tracking on: every command's look, without the lock.
    on: AtomicUsize,
    /// Of those, the ones with NOLOOP ([`Tracking::any_noloop`]).
    noloop: AtomicUsize,
    max_keys: AtomicUsize,
    inner: Mutex<Inner>,
    /// Held while the notifier is told whether anyone tracks ([`Tracking::announce`]).
    announcing: Mutex<()>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking::new(DEFAULT_MAX_KEYS)
    }
}

/// Whether two prefixes would both match some key (one starts the other).
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl Tracking {
    /// No client tracking; at most `max_keys` keys in the table (0: no limit).
    pub fn new(max_keys: usize) -> Tracking {
        Tracking {
            on: AtomicUsize::new(0),
            noloop: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(max_keys),
            inner: Mutex::new(Inner::default()),
            announcing: Mutex::new(()),
        }
    }

    /// Tells `notifier` whether any client tracks now (every change is then queued for its
    /// invalidations: `types::notify`). Called after each enable or disable; the look and
    /// the setting happen under one lock, so the last call leaves the current truth whatever
    /// the order of concurrent ones.
    pub fn announce(&self, notifier: &Notifier) {
        let _one = self.announcing.lock();
        notifier.set_tracking(self.active());
    }

    /// Whether any client tracks.
    #[inline]
    pub fn active(&self) -> bool {
        self.on.load(Ordering::Acquire) > 0
    }

    /// Whether some tracking client has NOLOOP: in cluster mode a node then names the writer
    /// of each batch in the entries it proposes (`cluster::apply`), so that client's own
    /// changes can be left untold. Its own command sees its CLIENT TRACKING's effect.
    pub fn any_noloop(&self) -> bool {
        self.noloop.load(Ordering::Acquire) > 0
    }

    /// Whether any client tracks, looked at by a write once it is visible to other clients.
    /// The fence pairs with the one after a client begins tracking ([`Tracking::enable`]):
    /// either the write sees that client, or every read the client makes after it sees the
    /// write. A write that noted no keys because no client tracked when it was made asks
    /// this, and tells every tracking client to flush if one tracks by now.
    pub fn active_after_write(&self) -> bool {
        fence(Ordering::SeqCst);
        self.on.load(Ordering::SeqCst) > 0
    }

    /// Client `id` can receive messages through `tx` (its connection's queue).
    pub fn add_queue(&self, id: u64, tx: UnboundedSender<Delivery>) {
        self.inner.lock().queues.insert(id, tx);
    }

    /// Client `id`'s queue is gone (RESET dropped it).
    pub fn remove_queue(&self, id: u64) {
        self.inner.lock().queues.remove(&id);
    }

    /// Turns tracking on for client `id` (again: the options replace the earlier ones, the
    /// prefixes add to them), or refuses with Redis's error text for prefixes that overlap
    /// each other or the client's. The caller checked the options against each other and
    /// against the client's mode (`commands::client_tracking`).
    pub fn enable(&self, id: u64, opts: &Options) -> Result<(), String> {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let prefixes: Vec<Vec<u8>> = if opts.bcast && opts.prefixes.is_empty() {
            vec![Vec::new()]
        } else {
            opts.prefixes.clone()
        };
        if opts.bcast {
            let existing = inner.clients.get(&id).map(|c| &c.prefixes);
            for (i, p) in opts.prefixes.iter().enumerate() {
                if let Some(e) = existing.into_iter().flatten().find(|e| overlap(e, p)) {
                    return Err(format!(
                        "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a \
                         single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(e)
                    ));
                }
                if let Some(q) = opts.prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
                    return Err(format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes \
                         for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(q)
                    ));
                }
            }
        }
        let client = inner.clients.entry(id).or_insert_with(|| {
            self.on.fetch_add(1, Ordering::SeqCst);
            // Pairs with `active_after_write`'s.
            fence(Ordering::SeqCst);
            Client {
                redirect: 0,
                bcast: false,
                noloop: false,
                target_gone: false,
                prefixes: BTreeSet::new(),
            }
        });
        client.redirect = opts.redirect;
        client.bcast = opts.bcast;
        if client.noloop != opts.noloop {
            if opts.noloop {
                self.noloop.fetch_add(1, Ordering::AcqRel);
            } else {
                self.noloop.fetch_sub(1, Ordering::AcqRel);
            }
        }
        client.noloop = opts.noloop;
        client.target_gone = false;
        if opts.bcast {
            for p in prefixes {
                inner.prefixes.entry(p.clone()).or_default().insert(id);
                client.prefixes.insert(p);
            }
        }
        Ok(())
    }

    /// Turns tracking off for client `id` (its ids in the table are left: module doc).
    pub fn disable(&self, id: u64) {
        let mut inner = self.inner.lock();
        let Some(client) = inner.clients.remove(&id) else { return };
        self.on.fetch_sub(1, Ordering::AcqRel);
        if client.noloop {
            self.noloop.fetch_sub(1, Ordering::AcqRel);
        }
        for p in &client.prefixes {
            if let Some(ids) = inner.prefixes.get_mut(p) {
                ids.remove(&id);
                if ids.is_empty() {
                    inner.prefixes.remove(p);
                }
            }
        }
    }

    /// Client `id` disconnected: its tracking ends, its queue goes, and the clients that
    /// redirect to it are told at their next message.
    pub fn drop_client(&self, id: u64) {
        self.disable(id);
        let mut inner = self.inner.lock();
        inner.queues.remove(&id);
        for c in inner.clients.values_mut().filter(|c| c.redirect == id) {
            c.target_gone = true;
        }
    }

    /// What client `id`'s tracking is, if it tracks.
    pub fn info(&self, id: u64) -> Option<Info> {
        let inner = self.inner.lock();
        let c = inner.clients.get(&id)?;
        Some(Info {
            redirect: c.redirect,
            bcast: c.bcast,
            noloop: c.noloop,
            broken: c.target_gone,
            prefixes: c.prefixes.iter().cloned().collect(),
        })
    }

    /// INFO's figures: tracking clients, keys in the table, (key, client) pairs, prefixes.
    pub fn stats(&self) -> (usize, usize, usize, usize) {
        let inner = self.inner.lock();
        (inner.clients.len(), inner.table.len(), inner.items, inner.prefixes.len())
    }

    /// Puts `keys` in the table for client `id`; returns those it was not already there
    /// for (what [`Tracking::forget`] may take back). Keys past `tracking-table-max-keys`
    /// leave with an invalidation each.
    pub fn remember(&self, id: u64, keys: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut inner = self.inner.lock();
        let mut added = Vec::new();
        for &k in keys {
            if inner.table.entry(k.to_vec()).or_default().insert(id) {
                inner.items += 1;
                added.push(k.to_vec());
            }
        }
        self.evict(&mut inner);
        added
    }

    /// Takes client `id` off `keys` that [`Tracking::remember`] added for it (a script that
    /// turned out to read nothing).
    pub fn forget(&self, id: u64, keys: &[Vec<u8>]) {
        let mut inner = self.inner.lock();
        for k in keys {
            let Some(ids) = inner.table.get_mut(k) else { continue };
            if ids.remove(&id) {
                let empty = ids.is_empty();
                inner.items -= 1;
                if empty {
                    inner.table.remove(k);
                }
            }
        }
    }

    /// Sets `tracking-table-max-keys` (0: no limit), evicting past it.
    pub fn set_max_keys(&self, n: usize) {
        self.max_keys.store(n, Ordering::Release);
        self.evict(&mut self.inner.lock());
    }

    fn evict(&self, inner: &mut Inner) {
        let max = self.max_keys.load(Ordering::Acquire);
        if max == 0 || inner.table.len() <= max {
            return;
        }
        let over: Vec<Vec<u8>> =
            inner.table.keys().take(inner.table.len() - max).cloned().collect();
        // Evictions are nobody's change: NOLOOP does not hold them back.
        for k in over {
            invalidate_key(inner, None, &k, true, false);
        }
    }

    /// `keys` changed, by client `by` (none: the server, as active expiry): sends their
    /// messages (module doc).
    pub fn invalidate(&self, by: Option<u64>, keys: &[&[u8]]) {
        self.invalidate_after_reads(by, keys, &[]);
    }

    /// [`Tracking::invalidate`] for a transaction of client `by` that also read some of
    /// `keys`: for those `own` names, `by` is told and keeps tracking as its order of reads
    /// and writes says (`types::notify::OwnRead`), as Redis, telling each write at once,
    /// leaves it.
    pub fn invalidate_after_reads(&self, by: Option<u64>, keys: &[&[u8]], own: &[OwnRead]) {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        // A key `by` keeps is in the table again after its first change: its others are
        // the same change (several events of one command), not told again.
        let mut done: HashSet<&[u8]> = HashSet::new();
        for &k in keys {
            if !inner.table.contains_key(k) {
                continue;
            }
            match own.iter().find(|r| r.key == k) {
                Some(r) if done.insert(k) => invalidate_key(inner, by, k, r.told, r.kept),
                Some(_) => {}
                None => invalidate_key(inner, by, k, true, false),
            }
        }
        if inner.prefixes.is_empty() {
            return;
        }
        // Each prefix's keys in one message per client (in byte order, each once).
        let mut per_prefix: Vec<(Vec<u64>, KeyList)> = Vec::new();
        for (prefix, ids) in &inner.prefixes {
            let matching: BTreeSet<&[u8]> =
                keys.iter().copied().filter(|k| k.starts_with(prefix)).collect();
            if matching.is_empty() {
                continue;
            }
            let list: KeyList = matching.into_iter().map(<[u8]>::to_vec).collect();
            per_prefix.push((ids.iter().copied().collect(), list));
        }
        for (ids, list) in per_prefix {
            for id in ids {
                let noloop = inner.clients.get(&id).is_some_and(|c| c.noloop);
                if !(noloop && by == Some(id)) {
                    send(inner, id, Some(list.clone()));
                }
            }
        }
    }

    /// Every key may have changed (FLUSHALL, FLUSHDB, SWAPDB): a null message to every
    /// tracking client, whoever flushed, and an empty table.
    pub fn flush(&self) {
        let mut inner = self.inner.lock();
        let ids: Vec<u64> = inner.clients.keys().copied().collect();
        for id in ids {
            send(&mut inner, id, None);
        }
        inner.table.clear();
        inner.items = 0;
    }
}

/// Tells the default-mode clients that read `key` of its change by `by`, and takes it out of
/// the table; `by` itself only if `told_by`, and it stays in the table if `kept_by`.
fn invalidate_key(inner: &mut Inner, by: Option<u64>, key: &[u8], told_by: bool, kept_by: bool) {
    let Some(ids) = inner.table.remove(key) else { return };
    inner.items -= ids.len();
    if let Some(id) = by.filter(|id| kept_by && ids.contains(id)) {
        inner.table.insert(key.to_vec(), HashSet::from([id]));
        inner.items += 1;
    }
    let list: KeyList = Arc::new([key.to_vec()]);
    for id in ids {
        let Some(c) = inner.clients.get(&id) else { continue };
        let own = by == Some(id);
        if c.bcast || (own && (c.noloop || !told_by)) {
            continue;
        }
        send(inner, id, Some(list.clone()));
    }
}

/// Sends client `id` a message naming `keys`: to its redirect target, or to itself.
fn send(inner: &mut Inner, id: u64, keys: Keys) {
    let Some(c) = inner.clients.get(&id) else { return };
    let (to, redirected) = match c.redirect {
        0 => (id, false),
        target if c.target_gone => {
            if let Some(q) = inner.queues.get(&id) {
                let _ = q.send(Delivery::RedirectBroken(target));
            }
            return;
        }
        target => (target, true),
    };
    // A connection without a queue (RESP2, never subscribed) cannot be told: as in Redis.
    if let Some(q) = inner.queues.get(&to) {
        let _ = q.send(Delivery::Invalidate { keys, redirected });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

    fn queue(t: &Tracking, id: u64) -> UnboundedReceiver<Delivery> {
        let (tx, rx) = unbounded_channel();
        t.add_queue(id, tx);
        rx
    }

    fn keys_of(d: Delivery) -> Option<Vec<Vec<u8>>> {
        match d {
            Delivery::Invalidate { keys, .. } => keys.map(|k| k.to_vec()),
            other => panic!("not an invalidation: {other:?}"),
        }
    }

    #[test]
    fn a_read_key_is_told_once_on_its_next_change() {
        let t = Tracking::default();
        let mut rx = queue(&t, 1);
        t.enable(1, &Options::default()).unwrap();
        assert!(t.active());
        t.remember(1, &[b"a", b"b"]);
        assert_eq!(t.stats(), (1, 2, 2, 0));
        t.invalidate(Some(2), &[b"a", b"c"]);
        assert_eq!(keys_of(rx.try_recv().unwrap()), Some(vec![b"a".to_vec()]));
        assert!(rx.try_recv().is_err(), "c was never read");
        t.invalidate(Some(2), &[b"a"]);
        assert!(rx.try_recv().is_err(), "told once until read again");
        assert_eq!(t.stats(), (1, 1, 1, 0));
    }

    #[test]
    fn noloop_skips_the_clients_own_changes_and_redirect_goes_to_the_target() {
        let t = Tracking::default();
        let mut own = queue(&t, 1);
        let mut target = queue(&t, 9);
        t.enable(1, &Options { redirect: 9, noloop: true, ..Options::default() }).unwrap();
        t.remember(1, &[b"k", b"j"]);
        t.invalidate(Some(1), &[b"k"]);
        assert!(target.try_recv().is_err(), "its own change");
        t.invalidate(None, &[b"j"]);
        match target.try_recv().unwrap() {
            Delivery::Invalidate { keys, redirected } => {
                assert!(redirected);
                assert_eq!(keys.unwrap().to_vec(), vec![b"j".to_vec()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(own.try_recv().is_err());
        // The target leaves: the client is told instead of each message.
        t.drop_client(9);
        t.remember(1, &[b"k"]);
        t.invalidate(None, &[b"k"]);
        assert_eq!(own.try_recv().unwrap(), Delivery::RedirectBroken(9));
        assert!(t.info(1).unwrap().broken);
    }

    /// A transaction's own reads (`types::notify::OwnRead`): its client is told of a key as
    /// `told` says, once however many events the key raised, and keeps tracking it as
    /// `kept` says; other clients are told as always.
    #[test]
    fn a_transactions_reads_decide_what_its_client_is_told_and_keeps() {
        let t = Tracking::default();
        let mut own = queue(&t, 1);
        let mut other = queue(&t, 2);
        for id in [1, 2] {
            t.enable(id, &Options::default()).unwrap();
            t.remember(id, &[b"w-r", b"r-w", b"r-w-r"]);
        }
        let read = |key: &str, told, kept| OwnRead { key: key.into(), told, kept };
        let reads = [read("w-r", false, true), read("r-w", true, false), read("r-w-r", true, true)];
        let keys: [&[u8]; 5] = [b"w-r", b"r-w", b"r-w-r", b"w-r", b"r-w-r"];
        // The keys of every message `rx` has, in order.
        let told = |rx: &mut UnboundedReceiver<Delivery>| -> Vec<Vec<u8>> {
            std::iter::from_fn(|| rx.try_recv().ok()).flat_map(|d| keys_of(d).unwrap()).collect()
        };
        t.invalidate_after_reads(Some(1), &keys, &reads);
        assert_eq!(told(&mut own), vec![b"r-w".to_vec(), b"r-w-r".to_vec()]);
        let all = vec![b"w-r".to_vec(), b"r-w".to_vec(), b"r-w-r".to_vec()];
        assert_eq!(told(&mut other), all);
        // Client 1 still tracks the two keys it kept, client 2 none.
        assert_eq!(t.stats().2, 2);
        t.invalidate(Some(2), &[b"w-r", b"r-w", b"r-w-r"]);
        assert_eq!(told(&mut own), vec![b"w-r".to_vec(), b"r-w-r".to_vec()]);
    }

    #[test]
    fn the_noloop_clients_are_counted_as_they_turn_it_on_and_off() {
        let t = Tracking::default();
        assert!(!t.any_noloop());
        t.enable(1, &Options::default()).unwrap();
        assert!(!t.any_noloop());
        t.enable(1, &Options { noloop: true, ..Options::default() }).unwrap();
        t.enable(2, &Options { noloop: true, bcast: true, ..Options::default() }).unwrap();
        // Again with NOLOOP: still one client.
        t.enable(1, &Options { noloop: true, ..Options::default() }).unwrap();
        t.enable(2, &Options { bcast: true, ..Options::default() }).unwrap();
        assert!(t.any_noloop());
        t.disable(1);
        assert!(!t.any_noloop());
        t.enable(3, &Options { noloop: true, ..Options::default() }).unwrap();
        t.drop_client(3);
        assert!(!t.any_noloop());
    }

    #[test]
    fn bcast_gathers_a_prefixes_keys_and_refuses_overlapping_prefixes() {
        let t = Tracking::default();
        let mut rx = queue(&t, 1);
        let bcast = |p: &[&[u8]]| Options {
            bcast: true,
            prefixes: p.iter().map(|p| p.to_vec()).collect(),
            ..Options::default()
        };
        let e = t.enable(1, &bcast(&[b"foobar", b"foo"])).unwrap_err();
        assert!(e.starts_with("ERR Prefix 'foobar' overlaps with another provided prefix 'foo'"));
        t.enable(1, &bcast(&[b"a:", b"b:"])).unwrap();
        let e = t.enable(1, &bcast(&[b"a"])).unwrap_err();
        assert!(e.starts_with("ERR Prefix 'a' overlaps with an existing prefix 'a:'"), "{e}");
        t.invalidate(Some(2), &[b"b:2", b"a:1", b"c:1", b"a:1"]);
        assert_eq!(keys_of(rx.try_recv().unwrap()), Some(vec![b"a:1".to_vec()]));
        assert_eq!(keys_of(rx.try_recv().unwrap()), Some(vec![b"b:2".to_vec()]));
        assert!(rx.try_recv().is_err());
        assert_eq!(t.stats(), (1, 0, 0, 2));
        t.disable(1);
        assert_eq!(t.stats(), (0, 0, 0, 0));
        assert!(!t.active());
    }

    #[test]
    fn a_flush_tells_every_tracking_client_and_empties_the_table() {
        let t = Tracking::default();
        let mut a = queue(&t, 1);
        let mut b = queue(&t, 2);
        t.enable(1, &Options::default()).unwrap();
        t.enable(2, &Options { bcast: true, ..Options::default() }).unwrap();
        t.remember(1, &[b"x"]);
        t.flush();
        assert_eq!(keys_of(a.try_recv().unwrap()), None);
        assert_eq!(keys_of(b.try_recv().unwrap()), None);
        assert_eq!(t.stats().1, 0);
    }

    #[test]
    fn keys_past_the_limit_leave_with_a_message_and_forget_takes_back_new_ones() {
        let t = Tracking::new(2);
        let mut rx = queue(&t, 1);
        t.enable(1, &Options { noloop: true, ..Options::default() }).unwrap();
        t.remember(1, &[b"a", b"b", b"c"]);
        assert_eq!(t.stats().1, 2);
        assert_eq!(keys_of(rx.try_recv().unwrap()).unwrap().len(), 1, "one key evicted");
        t.set_max_keys(1);
        assert_eq!(t.stats().1, 1);
        assert!(rx.try_recv().is_ok());
        t.set_max_keys(0);
        let kept = t.remember(1, &[b"k"]);
        let added = t.remember(1, &[b"k", b"n"]);
        assert_eq!(kept, vec![b"k".to_vec()]);
        assert_eq!(added, vec![b"n".to_vec()], "k was there already");
        t.forget(1, &added);
        t.invalidate(Some(2), &[b"n"]);
        t.invalidate(Some(2), &[b"k"]);
        assert_eq!(keys_of(rx.try_recv().unwrap()), Some(vec![b"k".to_vec()]));
        assert!(rx.try_recv().is_err(), "n was taken back");
    }
}
