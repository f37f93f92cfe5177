//! Pub/sub's subscriptions: which client listens to which channel or pattern, and the queue
//! each subscribed client's messages go into (its connection writes them as they come,
//! `server::listener`). A message is rendered once per protocol it goes out in (a RESP3
//! client gets push frames), and its subscribers share that frame.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where a subscriber's messages go, and how it reads them.
#[derive(Clone)]
pub struct Subscriber {
    /// Its message queue.
    pub tx: UnboundedSender<Arc<[u8]>>,
    /// It speaks RESP3 (messages are push frames).
    pub resp3: bool,
}

#[derive(Default)]
struct Registry {
    channels: BTreeMap<Vec<u8>, HashMap<u64, Subscriber>>,
    patterns: BTreeMap<Vec<u8>, HashMap<u64, Subscriber>>,
}

/// Every subscription of a server.
#[derive(Default)]
pub struct PubSub {
    reg: Mutex<Registry>,
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

impl PubSub {
    /// Subscribes client `id` to `channel` (a pattern when `pattern`); false when it was
    /// already.
    pub fn subscribe(&self, id: u64, channel: &[u8], pattern: bool, who: Subscriber) -> bool {
        let mut reg = self.reg.lock();
        let map = if pattern { &mut reg.patterns } else { &mut reg.channels };
        map.entry(channel.to_vec()).or_default().insert(id, who).is_none()
    }

    /// Unsubscribes client `id` from `channel` (a pattern when `pattern`); false when it was
    /// not subscribed.
    pub fn unsubscribe(&self, id: u64, channel: &[u8], pattern: bool) -> bool {
        let mut reg = self.reg.lock();
        let map = if pattern { &mut reg.patterns } else { &mut reg.channels };
        let Some(subs) = map.get_mut(channel) else { return false };
        let was = subs.remove(&id).is_some();
        if subs.is_empty() {
            map.remove(channel);
        }
        was
    }

    /// Unsubscribes client `id` from every channel and pattern: for a connection that ended
    /// without unsubscribing what it knew of (its task was dropped). Walks every
    /// subscription.
    pub fn drop_client(&self, id: u64) {
        let reg = &mut *self.reg.lock();
        for map in [&mut reg.channels, &mut reg.patterns] {
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
        // Each subscriber gets the frame of its protocol, rendered on first use.
        let mut send = |subs: &HashMap<u64, Subscriber>, parts: &[&[u8]]| {
            let mut frames: [Option<Arc<[u8]>>; 2] = [None, None];
            for s in subs.values() {
                let f = frames[usize::from(s.resp3)]
                    .get_or_insert_with(|| frame(s.resp3, parts).into())
                    .clone();
                n += usize::from(s.tx.send(f).is_ok());
            }
        };
        if let Some(subs) = reg.channels.get(channel) {
            send(subs, &[b"message", channel, message]);
        }
        for (pattern, subs) in &reg.patterns {
            if matches(pattern, channel) {
                send(subs, &[b"pmessage", pattern, channel, message]);
            }
        }
        n
    }

    /// PUBSUB CHANNELS: the channels with a subscriber that `keep` accepts.
    pub fn channels(&self, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
        self.reg.lock().channels.keys().filter(|c| keep(c)).cloned().collect()
    }

    /// PUBSUB NUMSUB: the subscribers of `channel`.
    pub fn numsub(&self, channel: &[u8]) -> usize {
        self.reg.lock().channels.get(channel).map_or(0, HashMap::len)
    }

    /// PUBSUB NUMPAT: the patterns with a subscriber.
    pub fn numpat(&self) -> usize {
        self.reg.lock().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_reach_channel_and_pattern_subscribers_in_their_protocol() {
        let ps = PubSub::default();
        let (tx1, mut rx1) = tokio::sync::mpsc::unbounded_channel();
        let (tx2, mut rx2) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(1, b"news", false, Subscriber { tx: tx1.clone(), resp3: false }));
        assert!(!ps.subscribe(1, b"news", false, Subscriber { tx: tx1, resp3: false }));
        assert!(ps.subscribe(2, b"n*", true, Subscriber { tx: tx2, resp3: true }));
        let (tx3, mut rx3) = tokio::sync::mpsc::unbounded_channel();
        assert!(ps.subscribe(3, b"news", false, Subscriber { tx: tx3, resp3: false }));
        let glob = |p: &[u8], c: &[u8]| p.last() == Some(&b'*') && c.starts_with(&p[..p.len() - 1]);
        assert_eq!(ps.publish(b"news", b"hi", glob), 3);
        let m1 = rx1.try_recv().unwrap();
        assert_eq!(&*m1, b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
        // Subscribers of one protocol share the one frame rendered.
        assert!(Arc::ptr_eq(&m1, &rx3.try_recv().unwrap()));
        assert_eq!(
            &*rx2.try_recv().unwrap(),
            b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(ps.unsubscribe(3, b"news", false));
        assert_eq!((ps.numsub(b"news"), ps.numpat()), (1, 1));
        assert_eq!(ps.channels(|_| true), vec![b"news".to_vec()]);
        assert!(ps.unsubscribe(1, b"news", false));
        assert!(!ps.unsubscribe(1, b"news", false));
        assert_eq!(ps.publish(b"other", b"x", glob), 0);
        assert!(ps.channels(|_| true).is_empty());
    }
}
