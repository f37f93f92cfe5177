//! Pub/sub's subscriptions: which client listens to which channel, pattern or shard channel
//! (Redis 7's sharded pub/sub: SSUBSCRIBE, SPUBLISH, a name space of its own that patterns do
//! not reach), and the queue each subscribed client's messages go into (its connection writes
//! them as they come, `server::listener`). A message is rendered once per protocol it goes
//! out in (a RESP3 client gets push frames), and its subscribers share that frame.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// What a subscriber's queue carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A message's frame, to write as it is.
    Frame(Arc<[u8]>),
    /// The shard channel it was subscribed to is no longer served here (cluster mode: the
    /// slot's partition moved): its connection forgets it and says `sunsubscribe`, as Redis
    /// does, so that the client subscribes again where the slot went.
    Revoked(Vec<u8>),
    /// A client-side caching invalidation (`tracking`): the keys that changed (`None`: all
    /// of them), and whether it comes redirected from another client. The receiving
    /// connection renders it in its protocol when it writes it.
    Invalidate { keys: Option<Arc<[Vec<u8>]>>, redirected: bool },
    /// The client its invalidations were redirected to (this id) has gone (`tracking`).
    RedirectBroken(u64),
}

/// Where a subscriber's messages go, and how it reads them.
#[derive(Clone)]
pub struct Subscriber {
    /// Its message queue.
    pub tx: UnboundedSender<Delivery>,
    /// It speaks RESP3 (messages are push frames).
    pub resp3: bool,
}

/// What a subscription names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A channel (SUBSCRIBE).
    Channel,
    /// A pattern of channels (PSUBSCRIBE).
    Pattern,
    /// A shard channel (SSUBSCRIBE).
    Shard,
}

type Subscribers = BTreeMap<Vec<u8>, HashMap<u64, Subscriber>>;

#[derive(Default)]
struct Registry {
    channels: Subscribers,
    patterns: Subscribers,
    shards: Subscribers,
}

impl Registry {
    fn of(&mut self, kind: Kind) -> &mut Subscribers {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }
}

/// Every subscription of a server, and the connections in MONITOR mode.
#[derive(Default)]
pub struct PubSub {
    reg: Mutex<Registry>,
    monitors: Mutex<HashMap<u64, Subscriber>>,
    /// How many `monitors` holds: read without the lock on every command.
    monitoring: std::sync::atomic::AtomicUsize,
}

/// A message's frame: `kind` (message, pmessage...) and its parts as bulk strings, an array
/// in RESP2 or a push in RESP3.
pub fn frame(resp3: bool, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("{}{}\r\n", if resp3 { '>' } else { '*' }, parts.len()).into_bytes();
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Sends the frame of `parts` to each of `subs` in its protocol (rendered once per protocol);
/// how many queues took it.
fn send(subs: &HashMap<u64, Subscriber>, parts: &[&[u8]]) -> usize {
    let mut frames: [Option<Arc<[u8]>>; 2] = [None, None];
    let mut n = 0;
    for s in subs.values() {
        let f = frames[usize::from(s.resp3)].get_or_insert_with(|| frame(s.resp3, parts).into());
        n += usize::from(s.tx.send(Delivery::Frame(f.clone())).is_ok());
    }
    n
}

impl PubSub {
    /// Subscribes client `id` to `channel` (of `kind`); false when it was already.
    pub fn subscribe(&self, id: u64, channel: &[u8], kind: Kind, who: Subscriber) -> bool {
        let mut reg = self.reg.lock();
        reg.of(kind).entry(channel.to_vec()).or_default().insert(id, who).is_none()
    }

    /// Unsubscribes client `id` from `channel` (of `kind`); false when it was not subscribed.
    pub fn unsubscribe(&self, id: u64, channel: &[u8], kind: Kind) -> bool {
        let mut reg = self.reg.lock();
        let map = reg.of(kind);
        let Some(subs) = map.get_mut(channel) else { return false };
        let was = subs.remove(&id).is_some();
        if subs.is_empty() {
            map.remove(channel);
        }
        was
    }

    /// The clients subscribed to some channel, pattern or shard channel (CLIENT KILL's
    /// `pubsub` type). Walks every subscription once.
    pub fn subscribed(&self) -> std::collections::HashSet<u64> {
        let reg = self.reg.lock();
        [&reg.channels, &reg.patterns, &reg.shards]
            .iter()
            .flat_map(|map| map.values())
            .flat_map(|subs| subs.keys().copied())
            .collect()
    }

    /// The subscriptions of the clients `ids`: (client, kind, channel or pattern). Walks every
    /// subscription once.
    pub fn subscriptions_of(
        &self,
        ids: &std::collections::HashSet<u64>,
    ) -> Vec<(u64, Kind, Vec<u8>)> {
        let reg = self.reg.lock();
        let mut out = Vec::new();
        for (kind, map) in [
            (Kind::Channel, &reg.channels),
            (Kind::Pattern, &reg.patterns),
            (Kind::Shard, &reg.shards),
        ] {
            for (channel, subs) in map {
                out.extend(
                    subs.keys()
                        .filter(|id| ids.contains(id))
                        .map(|&id| (id, kind, channel.clone())),
                );
            }
        }
        out
    }

    /// Unsubscribes client `id` from every channel, pattern and shard channel, and ends its
    /// MONITOR mode: for a connection that ended without unsubscribing what it knew of (its
    /// task was dropped). Walks every subscription.
    pub fn drop_client(&self, id: u64) {
        self.unmonitor(id);
        let reg = &mut *self.reg.lock();
        for map in [&mut reg.channels, &mut reg.patterns, &mut reg.shards] {
            map.retain(|_, subs| {
                subs.remove(&id);
                !subs.is_empty()
            });
        }
    }

    /// Sends `message` on `channel` to its subscribers and to those of the patterns it
    /// matches (`matches(pattern, channel)`); how many received it.
    pub fn publish(
        &self,
        channel: &[u8],
        message: &[u8],
        matches: impl Fn(&[u8], &[u8]) -> bool,
    ) -> usize {
        let reg = self.reg.lock();
        let mut n = 0;
        if let Some(subs) = reg.channels.get(channel) {
            n += send(subs, &[b"message", channel, message]);
        }
        for (pattern, subs) in &reg.patterns {
            if matches(pattern, channel) {
                n += send(subs, &[b"pmessage", pattern, channel, message]);
            }
        }
        n
    }

    /// SPUBLISH: sends `message` on shard channel `channel` to its subscribers; how many
    /// received it.
    pub fn publish_shard(&self, channel: &[u8], message: &[u8]) -> usize {
        let reg = self.reg.lock();
        reg.shards.get(channel).map_or(0, |subs| send(subs, &[b"smessage", channel, message]))
    }

    /// PUBSUB CHANNELS and SHARDCHANNELS: the channels (of `kind`) with a subscriber that
    /// `keep` accepts.
    pub fn channels(&self, kind: Kind, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
        self.reg.lock().of(kind).keys().filter(|c| keep(c)).cloned().collect()
    }

    /// PUBSUB NUMSUB and SHARDNUMSUB: the subscribers of `channel` (of `kind`).
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.reg.lock().of(kind).get(channel).map_or(0, HashMap::len)
    }

    /// Unsubscribes every subscriber of the shard channels `drop` picks, telling each
    /// ([`Delivery::Revoked`]); the channels revoked.
    pub fn revoke_shards(&self, drop: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
        let mut reg = self.reg.lock();
        let revoked: Vec<Vec<u8>> = reg.shards.keys().filter(|c| drop(c)).cloned().collect();
        for c in &revoked {
            for s in reg.shards.remove(c).into_iter().flat_map(HashMap::into_values) {
                let _ = s.tx.send(Delivery::Revoked(c.clone()));
            }
        }
        revoked
    }

    /// MONITOR: client `id` receives a line for each command the server runs from now on.
    pub fn monitor(&self, id: u64, who: Subscriber) {
        let mut m = self.monitors.lock();
        m.insert(id, who);
        self.monitoring.store(m.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a connection is in MONITOR mode (a hint: a monitor added meanwhile misses
    /// the command being asked about).
    pub fn monitored(&self) -> bool {
        self.monitoring.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    /// Sends `line` (a whole frame) to every monitor.
    pub fn feed_monitors(&self, line: Vec<u8>) {
        let line: Arc<[u8]> = line.into();
        for m in self.monitors.lock().values() {
            let _ = m.tx.send(Delivery::Frame(line.clone()));
        }
    }

    /// Takes client `id` out of MONITOR mode (it closed, or RESET ran).
    pub fn unmonitor(&self, id: u64) {
        let mut m = self.monitors.lock();
        m.remove(&id);
        self.monitoring.store(m.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// PUBSUB NUMPAT: the patterns with a subscriber.
    pub fn numpat(&self) -> usize {
        self.reg.lock().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(d: Delivery) -> Arc<[u8]> {
        match d {
            Delivery::Frame(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_reach_channel_and_pattern_subscribers_in_their_protocol() {
        let ps = PubSub::default();
        let (tx1, mut rx1) = tokio::sync::mpsc::unbounded_channel();
        let (tx2, mut rx2) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(
            1,
            b"news",
            Kind::Channel,
            Subscriber { tx: tx1.clone(), resp3: false }
        ));
        assert!(!ps.subscribe(1, b"news", Kind::Channel, Subscriber { tx: tx1, resp3: false }));
        assert!(ps.subscribe(2, b"n*", Kind::Pattern, Subscriber { tx: tx2, resp3: true }));
        let (tx3, mut rx3) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(3, b"news", Kind::Channel, Subscriber { tx: tx3, resp3: false }));
        let glob = |p: &[u8], c: &[u8]| p.last() == Some(&b'*') && c.starts_with(&p[..p.len() - 1]);
        assert_eq!(ps.publish(b"news", b"hi", glob), 3);
        let m1 = frame_of(rx1.try_recv().unwrap());
        assert_eq!(&*m1, b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
        // Subscribers of one protocol share the one frame rendered.
        assert!(Arc::ptr_eq(&m1, &frame_of(rx3.try_recv().unwrap())));
        assert_eq!(
            &*frame_of(rx2.try_recv().unwrap()),
            b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(ps.unsubscribe(3, b"news", Kind::Channel));
        assert_eq!((ps.numsub(Kind::Channel, b"news"), ps.numpat()), (1, 1));
        assert_eq!(ps.channels(Kind::Channel, |_| true), vec![b"news".to_vec()]);
        assert!(ps.unsubscribe(1, b"news", Kind::Channel));
        assert!(!ps.unsubscribe(1, b"news", Kind::Channel));
        assert_eq!(ps.publish(b"other", b"x", glob), 0);
        assert!(ps.channels(Kind::Channel, |_| true).is_empty());
    }

    #[test]
    fn shard_channels_are_a_name_space_of_their_own() {
        let ps = PubSub::default();
        let (tx1, mut rx1) = tokio::sync::mpsc::unbounded_channel();
        let (tx2, mut rx2) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(1, b"c", Kind::Shard, Subscriber { tx: tx1, resp3: true }));
        assert!(ps.subscribe(2, b"c", Kind::Channel, Subscriber { tx: tx2.clone(), resp3: false }));
        assert!(ps.subscribe(2, b"*", Kind::Pattern, Subscriber { tx: tx2, resp3: false }));
        assert_eq!(ps.publish_shard(b"c", b"hi"), 1);
        let m = frame_of(rx1.try_recv().unwrap());
        assert_eq!(&*m, b">3\r\n$8\r\nsmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n");
        assert!(rx2.try_recv().is_err(), "neither the channel nor the pattern gets it");
        assert_eq!(ps.publish(b"c", b"x", |_, _| true), 2);
        assert!(rx1.try_recv().is_err(), "nor does a shard subscriber get PUBLISH's");
        assert_eq!(ps.channels(Kind::Shard, |_| true), vec![b"c".to_vec()]);
        assert_eq!((ps.numsub(Kind::Shard, b"c"), ps.numsub(Kind::Shard, b"d")), (1, 0));
        // A revoked channel's subscribers are told, and it is gone.
        let (tx3, mut rx3) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(3, b"d", Kind::Shard, Subscriber { tx: tx3, resp3: false }));
        assert_eq!(ps.revoke_shards(|c| c == b"d"), vec![b"d".to_vec()]);
        assert_eq!(rx3.try_recv().unwrap(), Delivery::Revoked(b"d".to_vec()));
        assert_eq!(ps.publish_shard(b"d", b"hi"), 0);
        ps.drop_client(1);
        assert_eq!(ps.publish_shard(b"c", b"hi"), 0);
    }
}
