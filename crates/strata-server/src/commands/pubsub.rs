//! Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, the sharded SSUBSCRIBE,
//! SUNSUBSCRIBE and SPUBLISH, and PUBSUB (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS,
//! SHARDNUMSUB), with Redis's replies, on the server's subscriptions ([`crate::pubsub`]). A
//! subscribed connection gets its messages as they are published (`server::listener` writes
//! them between its commands, [`deliver`]); in RESP2 it may then run only the subscription
//! commands, PING, QUIT and RESET, as in Redis. Messages go to the subscribers of this server
//! (in cluster mode, of this node: a shard channel's commands are routed to its slot's
//! leader), and so do the keyspace notifications of the commands this node served
//! ([`publish_events`]).

use super::args::is;
use super::glob;
use super::CmdResult;
use crate::pubsub::{Delivery, Kind, Subscriber};
use crate::resp::Out;
use crate::state::{Conn, Shared, Subscriptions};
use crate::types::notify;

/// Whether `name` may run on a RESP2 connection with subscriptions.
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// The reply to a command refused on a subscribed RESP2 connection.
pub fn subscribed_refusal(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
}

/// A subscription confirmation: `[kind, channel, count]`; in RESP3 a push. Kept apart from
/// the replies (`Conn::pushes`: CLIENT REPLY OFF or SKIP does not silence it, in either
/// protocol, as in redis-server), except in RESP2 inside EXEC, where it is an element of
/// EXEC's reply.
fn confirm(
    pushes: &mut Vec<u8>,
    out: &mut Out,
    in_exec: bool,
    kind: &str,
    channel: Option<&[u8]>,
    count: usize,
) {
    let mut frame = Out { buf: Vec::new(), resp3: out.resp3 };
    frame.header(if out.resp3 { b'>' } else { b'*' }, 3);
    frame.bulk(kind.as_bytes());
    match channel {
        Some(c) => frame.bulk(c),
        None => frame.null(),
    }
    frame.int(count as i64);
    if out.resp3 || !in_exec {
        pushes.extend_from_slice(&frame.buf);
    } else {
        out.buf.extend_from_slice(&frame.buf);
    }
}

/// The connection's message queue, created (and offered to client-side caching's
/// invalidations, `tracking`) on first use: by a subscription, MONITOR, HELLO 3 or CLIENT
/// TRACKING.
pub fn message_queue<'c>(sh: &Shared, conn: &'c mut Conn) -> &'c mut Subscriptions {
    let id = conn.id;
    conn.subs.get_or_insert_with(|| {
        let subs = Subscriptions::new();
        sh.tracking.add_queue(id, subs.tx.clone());
        subs
    })
}

/// A connection's names of `kind`, and the count its confirmations of `kind` report.
fn names_of(subs: &mut Subscriptions, kind: Kind) -> &mut std::collections::BTreeSet<Vec<u8>> {
    match kind {
        Kind::Channel => &mut subs.channels,
        Kind::Pattern => &mut subs.patterns,
        Kind::Shard => &mut subs.shards,
    }
}

fn count_of(subs: &Subscriptions, kind: Kind) -> usize {
    match kind {
        Kind::Shard => subs.shards.len(),
        _ => subs.count(),
    }
}

fn subscribe_to(sh: &Shared, conn: &mut Conn, names: &[Vec<u8>], kind: Kind, out: &mut Out) {
    let (id, resp3, in_exec) = (conn.id, conn.resp3, conn.in_exec);
    let mut pushes = std::mem::take(&mut conn.pushes);
    let subs = message_queue(sh, conn);
    let confirmation = match kind {
        Kind::Channel => "subscribe",
        Kind::Pattern => "psubscribe",
        Kind::Shard => "ssubscribe",
    };
    for name in names {
        let who = Subscriber { tx: subs.tx.clone(), resp3 };
        sh.pubsub.subscribe(id, name, kind, who);
        names_of(subs, kind).insert(name.clone());
        confirm(&mut pushes, out, in_exec, confirmation, Some(name), count_of(subs, kind));
    }
    conn.pushes = pushes;
}

fn unsubscribe_from(sh: &Shared, conn: &mut Conn, names: &[Vec<u8>], kind: Kind, out: &mut Out) {
    let (id, in_exec) = (conn.id, conn.in_exec);
    let confirmation = match kind {
        Kind::Channel => "unsubscribe",
        Kind::Pattern => "punsubscribe",
        Kind::Shard => "sunsubscribe",
    };
    let mut pushes = std::mem::take(&mut conn.pushes);
    let subs = message_queue(sh, conn);
    let names: Vec<Vec<u8>> = if names.is_empty() {
        names_of(subs, kind).iter().cloned().collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        confirm(&mut pushes, out, in_exec, confirmation, None, count_of(subs, kind));
    }
    for name in &names {
        sh.pubsub.unsubscribe(id, name, kind);
        names_of(subs, kind).remove(name);
        confirm(&mut pushes, out, in_exec, confirmation, Some(name), count_of(subs, kind));
    }
    conn.pushes = pushes;
}

/// SUBSCRIBE channel [channel ...]
pub fn subscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    subscribe_to(sh, conn, &a[1..], Kind::Channel, out);
    Ok(())
}

/// PSUBSCRIBE pattern [pattern ...]
pub fn psubscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    subscribe_to(sh, conn, &a[1..], Kind::Pattern, out);
    Ok(())
}

/// UNSUBSCRIBE [channel ...]
pub fn unsubscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    unsubscribe_from(sh, conn, &a[1..], Kind::Channel, out);
    Ok(())
}

/// PUNSUBSCRIBE [pattern ...]
pub fn punsubscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    unsubscribe_from(sh, conn, &a[1..], Kind::Pattern, out);
    Ok(())
}

/// SSUBSCRIBE shardchannel [shardchannel ...]
pub fn ssubscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    subscribe_to(sh, conn, &a[1..], Kind::Shard, out);
    Ok(())
}

/// SUNSUBSCRIBE [shardchannel ...]
pub fn sunsubscribe(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    unsubscribe_from(sh, conn, &a[1..], Kind::Shard, out);
    Ok(())
}

/// Writes what a subscribed connection's queue handed it to `out`: a message's frame, or for
/// a revoked shard channel (`PubSub::revoke_shards`) the channel forgotten and the
/// `sunsubscribe` Redis sends then, with the shard channels left.
pub fn deliver(sh: &Shared, conn: &mut Conn, d: Delivery, out: &mut Vec<u8>) {
    match d {
        Delivery::Frame(f) => out.extend_from_slice(&f),
        Delivery::Revoked(channel) => {
            let (id, resp3) = (conn.id, conn.resp3);
            let subs = message_queue(sh, conn);
            if !subs.shards.remove(&channel) {
                return;
            }
            sh.pubsub.unsubscribe(id, &channel, Kind::Shard);
            // Outside a command: the frame goes with the pushes, in either protocol.
            let mut reply = Out { buf: Vec::new(), resp3 };
            let left = count_of(subs, Kind::Shard);
            confirm(out, &mut reply, false, "sunsubscribe", Some(&channel), left);
        }
        Delivery::Invalidate { keys, redirected } => invalidation(conn, keys, redirected, out),
        Delivery::RedirectBroken(target) => {
            // Only a RESP3 connection can be told (Redis's rule).
            if conn.resp3 {
                let mut w = Out { buf: std::mem::take(out), resp3: true };
                w.push(2);
                w.bulk(b"tracking-redir-broken");
                w.int(target as i64);
                *out = w.buf;
            }
        }
    }
}

/// The channel RESP2 connections receive redirected invalidations on (once subscribed).
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Writes a client-side caching invalidation as this connection reads it now: a RESP3
/// `invalidate` push; for a RESP2 connection subscribed to [`INVALIDATE_CHANNEL`] a message of
/// it, when redirected to it; nothing otherwise (RESP2 has no push frames), as Redis. The keys
/// are an array, or null for "every key".
fn invalidation(
    conn: &Conn,
    keys: Option<std::sync::Arc<[Vec<u8>]>>,
    redirected: bool,
    out: &mut Vec<u8>,
) {
    let subscribed = || conn.subs.as_ref().is_some_and(|s| s.channels.contains(INVALIDATE_CHANNEL));
    let mut w = Out { buf: std::mem::take(out), resp3: conn.resp3 };
    if conn.resp3 {
        w.push(2);
        w.bulk(b"invalidate");
    } else if redirected && subscribed() {
        w.array(3);
        w.bulk(b"message");
        w.bulk(INVALIDATE_CHANNEL);
    } else {
        *out = w.buf;
        return;
    }
    match keys {
        Some(keys) => {
            w.array(keys.len());
            for k in keys.iter() {
                w.bulk(k);
            }
        }
        None => w.null(),
    }
    *out = w.buf;
}

/// Drops every subscription of a connection that is closing (or RESET), and its MONITOR.
pub fn forget(sh: &Shared, conn: &mut Conn) {
    sh.pubsub.unmonitor(conn.id);
    if let Some(subs) = conn.subs.take() {
        sh.tracking.remove_queue(conn.id);
        for (names, kind) in [
            (&subs.channels, Kind::Channel),
            (&subs.patterns, Kind::Pattern),
            (&subs.shards, Kind::Shard),
        ] {
            for name in names {
                sh.pubsub.unsubscribe(conn.id, name, kind);
            }
        }
    }
}

/// Publishes keyspace notifications (`types::notify`): each event to its key's
/// `__keyspace@<db>__:<key>` channel and then its `__keyevent@<db>__:<event>` channel, as
/// enabled when it was raised; and sends the invalidations of client-side caching for the
/// keys they name, changed by client `by` (none: the server; for the keys its transaction
/// also read, as `raised.own_reads` says), while the notifier queues changes for them
/// (never in cluster mode: `commands::client_tracking`); or, where a change
/// went unqueued and a client tracks by now, tells every tracking client that everything may
/// have changed. Called once the writes are visible to other clients.
pub fn publish_events(sh: &Shared, by: Option<u64>, raised: notify::Raised) {
    use std::io::Write;
    if raised.unnoted {
        // A change no client tracked when it was made: one that tracks now may have read
        // the key before the change was visible (`types::notify`).
        if sh.tracking.active_after_write() {
            super::client_tracking::flushed(sh);
        }
    } else if sh.notifier.tracking() {
        let keys: Vec<&[u8]> = raised.events.iter().map(|e| e.key.as_slice()).collect();
        sh.tracking.invalidate_after_reads(by, &keys, &raised.own_reads);
    }
    let mut channel = Vec::new();
    for e in raised.events {
        if e.keyspace {
            channel.clear();
            let _ = write!(channel, "__keyspace@{}__:", e.db);
            channel.extend_from_slice(&e.key);
            sh.pubsub.publish(&channel, e.event.as_bytes(), glob::matches);
        }
        if e.keyevent {
            channel.clear();
            let _ = write!(channel, "__keyevent@{}__:", e.db);
            channel.extend_from_slice(e.event.as_bytes());
            sh.pubsub.publish(&channel, &e.key, glob::matches);
        }
    }
}

/// Publishes the keyspace notifications this thread raised and has not published yet (the
/// changes of client `by`; none: the server's).
pub fn flush_events(sh: &Shared, by: Option<u64>) {
    let raised = notify::take();
    if !raised.is_empty() {
        publish_events(sh, by, raised);
    }
}

/// PUBLISH channel message
pub fn publish(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let n = sh.pubsub.publish(&a[1], &a[2], glob::matches);
    out.int(n as i64);
    Ok(())
}

/// SPUBLISH shardchannel message
pub fn spublish(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.int(sh.pubsub.publish_shard(&a[1], &a[2]) as i64);
    Ok(())
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS | SHARDNUMSUB
pub fn pubsub(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let shard = is(sub, "shardchannels") || is(sub, "shardnumsub");
    let kind = if shard { Kind::Shard } else { Kind::Channel };
    if (is(sub, "channels") || is(sub, "shardchannels")) && a.len() <= 3 {
        let chans = sh.pubsub.channels(kind, |c| a.get(2).is_none_or(|p| glob::matches(p, c)));
        out.array(chans.len());
        for c in &chans {
            out.bulk(c);
        }
    } else if is(sub, "numsub") || is(sub, "shardnumsub") {
        // A flat array of channel, count pairs, in RESP3 too, as redis-server 7.0 answers
        // (redis-py's cluster client reads it so).
        out.array(2 * (a.len() - 2));
        for c in &a[2..] {
            out.bulk(c);
            out.int(sh.pubsub.numsub(kind, c) as i64);
        }
    } else if is(sub, "numpat") && a.len() == 2 {
        out.int(sh.pubsub.numpat() as i64);
    } else if is(sub, "help") && a.len() == 2 {
        let help = [
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    The channels with subscribers, those matching the pattern if given.",
            "NUMPAT",
            "    How many pattern subscriptions there are.",
            "NUMSUB [<channel> ...]",
            "    Each channel with its number of subscribers.",
            "SHARDCHANNELS [<pattern>]",
            "    The shard channels with subscribers, those matching the pattern if given.",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Each shard channel with its number of subscribers.",
            "HELP",
            "    This text.",
        ];
        super::args::reply_help(out, &help);
    } else {
        return Err(super::errors::subcommand_syntax(a));
    }
    Ok(())
}
