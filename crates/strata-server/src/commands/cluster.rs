//! Cluster mode's side of a command (`crate::routing`): before a command with keys runs, its
//! keys must hash to one slot (`CROSSSLOT` otherwise) and the slot must be served here
//! (`MOVED <slot> <host>:<port>` to the node that serves it, `CLUSTERDOWN` when none does),
//! with Redis Cluster's reply texts; and READONLY/READWRITE, which let a connection read from
//! a replica. Commands without keys run on any node.

use std::fmt::Write as _;

use super::errors::CmdError;
use super::{CmdResult, Command};
use crate::cluster::spec::NodeAddrs;
use crate::resp::Out;
use crate::routing::{node_name, Admin, Admission, NodeInfo, Route, SlotRange};
use crate::slots::key_slot;
use crate::state::{Conn, Shared};
use crate::storage::databases::{serve_partition, Serving};
use crate::storage::moving::Change;

/// Redis's reply when a command's keys are in more than one slot.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
/// Redis's reply when no node serves the slot.
pub const CLUSTERDOWN: &str = "CLUSTERDOWN Hash slot not served";
/// Redis Cluster's reply to a command on a slot being moved that cannot run now.
pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
/// Redis's reply to a cluster command on a standalone server.
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// What a command admitted in cluster mode holds while it runs: its partition served
/// (`storage::databases::serve_partition`), and for a write its admission (a move of its
/// slot waits for it: `crate::cluster::moves`).
pub struct Admitted {
    _serving: Serving,
    _admission: Option<Admission>,
}

/// The error reply that keeps `args` (a command line of `cmd`, its arity checked) from
/// running on this node (`Err`); else, in cluster mode for a command with keys, what it
/// holds while it runs ([`Admitted`]). Always runs on a standalone server.
pub fn refusal(
    sh: &Shared,
    conn: &Conn,
    cmd: &Command,
    args: &[Vec<u8>],
) -> Result<Option<Admitted>, String> {
    let Some(router) = sh.router.as_ref() else { return Ok(None) };
    let mut slot = None;
    for i in cmd.keys.positions(args) {
        let s = key_slot(&args[i]);
        if slot.is_some_and(|first| first != s) {
            return Err(CROSSSLOT.to_string());
        }
        slot = Some(s);
    }
    let Some(slot) = slot else { return Ok(None) };
    // A write to a slot in the freeze of a move waits for the move to hand it off (then
    // `ASK`), as a Redis Cluster client waits on a key its source migrates, rather than
    // failing at once: clients that do not retry TRYAGAIN see latency, not an error.
    let mut waited = false;
    // Shard channels meet on the leader: a replica's subscribers would hear nothing, as
    // SPUBLISH reaches only the node it runs on.
    let readonly = conn.readonly && !cmd.keys.channels;
    loop {
        let route = match router.route(slot, cmd.write, readonly) {
            Route::Down => router.route_waiting(slot, cmd.write, readonly),
            r => r,
        };
        match route {
            Route::Local => {
                router.prepare(slot, cmd.write, readonly)?;
                let admission = if cmd.write {
                    match router.admit_write(slot) {
                        Ok(a) => a,
                        Err(_) if !waited => {
                            waited = true;
                            router.wait_for_move(slot);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                } else {
                    None
                };
                let serving = serve_partition(router.partition_of(slot));
                return Ok(Some(Admitted { _serving: serving, _admission: admission }));
            }
            Route::TryAgain if !waited => {
                waited = true;
                router.wait_for_move(slot);
            }
            // Sent here by the source's ASK before this node's partition adopted the slot.
            Route::Moved(_) | Route::Ask(_)
                if conn.asking && !waited && router.wait_for_adopt(slot) =>
            {
                waited = true;
            }
            Route::Moved(addr) => return Err(format!("MOVED {slot} {addr}")),
            Route::Ask(addr) => return Err(format!("ASK {slot} {addr}")),
            Route::TryAgain => return Err(TRYAGAIN.to_string()),
            Route::Down => return Err(CLUSTERDOWN.to_string()),
        }
    }
}

/// READONLY: this connection's reads may be served by a replica of their slot.
pub fn readonly(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_readonly(sh, conn, true, out)
}

/// ASKING: the next command follows an `ASK` redirect. A node serves a slot that moved to
/// one of its partitions from the move's adopt step on, whatever the flag; with it, a
/// command on a slot one of its partitions is still importing waits for the adopt (the
/// step right after the source's handoff) instead of being sent back with `MOVED`.
pub fn asking(sh: &Shared, c: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_none() {
        return Err(DISABLED.into());
    }
    c.asking = true;
    out.simple("OK");
    Ok(())
}

/// READWRITE: back to reads from the slot's leader only.
pub fn readwrite(sh: &Shared, conn: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    set_readonly(sh, conn, false, out)
}

fn set_readonly(sh: &Shared, conn: &mut Conn, on: bool, out: &mut Out) -> CmdResult {
    if sh.router.is_none() {
        return Err(DISABLED.into());
    }
    conn.readonly = on;
    out.simple("OK");
    Ok(())
}

/// CLUSTER SLOTS | SHARDS | NODES | INFO | MYID | KEYSLOT key | COUNTKEYSINSLOT slot |
/// GETKEYSINSLOT slot count, from the router's layout ([`Layout`]); and the cluster map's
/// commands, for the `strata-cluster` controller (`crate::routing::Admin`): MAP,
/// ADDNODE id host:port:raft_port, REMOVENODE id, FORGETNODE id, REBALANCE.
///
/// A node of this cluster leads some partitions and follows others, which Redis Cluster's
/// node-wide master/replica roles cannot say. The choice: SLOTS names each range's leader
/// alone, and NODES lists every node as a master, with the slots of the partitions it leads,
/// and no replica lines, so every client sends every command to a leader, which is where
/// writes and linearizable reads go. Why SLOTS lists no replicas: redis-py's cluster client
/// gives each node the role it has in the first range that names it, so a node seen first
/// as a range's replica would be a replica for good, and the commands it sends to every
/// primary (KEYS, SCAN, DBSIZE, FLUSHALL, FUNCTION LOAD, ...) would skip the partitions that
/// node leads: silently partial answers. SHARDS, per slot range, names the leader (`master`)
/// and the other replicas (`replica`) of each, for clients that read from replicas
/// (`READONLY` connections).
pub fn cluster(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let Some(router) = sh.router.as_ref() else { return Err(DISABLED.into()) };
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    let argc = |n: usize| -> Result<(), CmdError> {
        if a.len() == n {
            Ok(())
        } else {
            Err(format!("ERR Unknown subcommand or wrong number of arguments for '{sub}'. Try CLUSTER HELP.").into())
        }
    };
    match sub.as_str() {
        "help" => {
            argc(2)?;
            let help = [
                "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "COUNTKEYSINSLOT <slot>",
                "    How many keys the slot holds here.",
                "GETKEYSINSLOT <slot> <count>",
                "    Up to <count> key names of the slot.",
                "INFO",
                "    The cluster's state and size.",
                "KEYSLOT <key>",
                "    The slot of the key.",
                "MYID",
                "    This node's id.",
                "NODES",
                "    The cluster's nodes, each with the slots of the partitions it leads.",
                "SHARDS",
                "    Per slot range, the partition's leader and its other replicas.",
                "SLOTS",
                "    The slot ranges with the leader serving each.",
                "MAP | REBALANCE | ADDNODE | REMOVENODE | FORGETNODE | SETSLOTPARTITION",
                "    The layout's administration, for strata-cluster (docs/replication.md).",
                "MOVESLOT | SLOTRECORDS | SLOTTAIL | IMPORTRECORDS | IMPORTCHANGES",
                "    The steps of a slot move, for strata-cluster move-slots.",
                "HELP",
                "    This text.",
            ];
            super::args::reply_help(out, &help);
        }
        "keyslot" => {
            argc(3)?;
            out.int(i64::from(key_slot(&a[2])));
        }
        "myid" => {
            argc(2)?;
            let l = router.layout();
            let me = l.nodes.iter().find(|n| n.id == l.myself).map(NodeInfo::name);
            out.bulk(me.unwrap_or_default().as_bytes());
        }
        "slots" => {
            argc(2)?;
            let l = router.layout();
            let led: Vec<(&SlotRange, u64)> =
                l.ranges.iter().filter_map(|r| r.leader.map(|id| (r, id))).collect();
            out.array(led.len());
            for (r, id) in led {
                out.array(3);
                out.int(i64::from(r.first));
                out.int(i64::from(r.last));
                out.array(3);
                match l.nodes.iter().find(|n| n.id == id) {
                    Some(n) => {
                        out.bulk(n.host.as_bytes());
                        out.int(i64::from(n.port));
                        out.bulk(n.name().as_bytes());
                    }
                    None => {
                        out.bulk(b"");
                        out.int(0);
                        out.bulk(node_name(id).as_bytes());
                    }
                }
            }
        }
        "shards" => {
            argc(2)?;
            let l = router.layout();
            out.array(l.ranges.len());
            for r in &l.ranges {
                out.map(2);
                out.bulk(b"slots");
                out.array(2);
                out.int(i64::from(r.first));
                out.int(i64::from(r.last));
                out.bulk(b"nodes");
                let order = serving_order(r);
                out.array(order.len());
                for id in order {
                    let n = l.nodes.iter().find(|n| n.id == id);
                    out.map(7);
                    out.bulk(b"id");
                    out.bulk(node_name(id).as_bytes());
                    out.bulk(b"port");
                    out.int(i64::from(n.map_or(0, |n| n.port)));
                    out.bulk(b"ip");
                    out.bulk(n.map_or(&b""[..], |n| n.host.as_bytes()));
                    out.bulk(b"endpoint");
                    out.bulk(n.map_or(&b""[..], |n| n.host.as_bytes()));
                    out.bulk(b"role");
                    out.bulk(if r.leader == Some(id) { b"master" } else { b"replica" });
                    out.bulk(b"replication-offset");
                    out.int(0);
                    out.bulk(b"health");
                    out.bulk(if r.leader.is_some() { b"online" } else { b"fail" });
                }
            }
        }
        "nodes" => {
            argc(2)?;
            let l = router.layout();
            let mut text = String::new();
            for n in &l.nodes {
                let flags = if n.id == l.myself { "myself,master" } else { "master" };
                let _ = write!(
                    text,
                    "{} {}:{}@{} {flags} - 0 0 {} connected",
                    n.name(),
                    n.host,
                    n.port,
                    n.bus_port,
                    l.epoch
                );
                for r in l.ranges.iter().filter(|r| r.leader == Some(n.id)) {
                    if r.first == r.last {
                        let _ = write!(text, " {}", r.first);
                    } else {
                        let _ = write!(text, " {}-{}", r.first, r.last);
                    }
                }
                text.push('\n');
            }
            out.bulk(text.as_bytes());
        }
        "info" => {
            argc(2)?;
            let l = router.layout();
            let served: usize = l
                .ranges
                .iter()
                .filter(|r| r.leader.is_some())
                .map(|r| usize::from(r.last - r.first) + 1)
                .sum();
            let leaders: std::collections::BTreeSet<u64> =
                l.ranges.iter().filter_map(|r| r.leader).collect();
            let state = if served == usize::from(crate::slots::SLOTS) { "ok" } else { "fail" };
            let text = format!(
                "cluster_state:{state}\r\ncluster_slots_assigned:{}\r\ncluster_slots_ok:{served}\r\n\
                 cluster_slots_pfail:0\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:{}\r\n\
                 cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
                crate::slots::SLOTS,
                usize::from(crate::slots::SLOTS) - served,
                l.nodes.len(),
                leaders.len(),
                l.epoch,
                l.epoch
            );
            out.bulk(text.as_bytes());
        }
        "moveslot" => {
            // CLUSTER MOVESLOT partition op slot peer: a step of a move (the controller's).
            argc(6)?;
            let partition = u16_arg(&a[2], "partition")?;
            let op = String::from_utf8_lossy(&a[3]).into_owned();
            let (slot, peer) = (slot_arg(&a[4])?, u16_arg(&a[5], "partition")?);
            let text = router.move_step(partition, &op, slot, peer).map_err(CmdError::from)?;
            out.simple(&text);
        }
        "slotrecords" => {
            // CLUSTER SLOTRECORDS partition slot cursor count: the frozen slot's records.
            argc(6)?;
            let partition = u16_arg(&a[2], "partition")?;
            let slot = slot_arg(&a[3])?;
            let count = crate::types::number::parse_int_strict(&a[5])
                .filter(|n| *n > 0)
                .ok_or(CmdError::from("ERR count must be a positive integer"))?;
            router.check_copy(partition, slot, true).map_err(CmdError::from)?;
            let view = sh.dbs.partition(partition);
            let page = crate::storage::moving::export(view, slot, &a[4], count as usize)
                .map_err(|e| CmdError::from(format!("ERR {e}")))?;
            out.array(1 + 3 * page.records.len());
            out.bulk(&page.next);
            for (family, key, value) in &page.records {
                out.int(i64::from(*family));
                out.bulk(key);
                out.bulk(value);
            }
        }
        "slottail" => {
            // CLUSTER SLOTTAIL partition slot after count: the outbox of a slot being copied
            // out, from the entry after log index `after`, whole entries up to `count`
            // changes; the last index read, then kind, family, key, value per change.
            argc(6)?;
            let partition = u16_arg(&a[2], "partition")?;
            let slot = slot_arg(&a[3])?;
            let after = crate::types::number::parse_int_strict(&a[4])
                .and_then(|n| u64::try_from(n).ok())
                .ok_or(CmdError::from("ERR after must be a log index (0 or more)"))?;
            let count = crate::types::number::parse_int_strict(&a[5])
                .filter(|n| *n > 0)
                .ok_or(CmdError::from("ERR count must be a positive integer"))?;
            router.check_copy(partition, slot, true).map_err(CmdError::from)?;
            let view = sh.dbs.partition(partition);
            let (last, changes) =
                crate::cluster::outbox::page(view, partition, slot, after, count as usize)
                    .map_err(|e| CmdError::from(format!("ERR {e}")))?;
            out.array(1 + 4 * changes.len());
            out.bulk(last.to_string().as_bytes());
            for c in &changes {
                let (kind, family, key, value) = c.parts();
                out.int(i64::from(kind));
                out.int(i64::from(family));
                out.bulk(key);
                out.bulk(value);
            }
        }
        "importchanges" => {
            // CLUSTER IMPORTCHANGES partition slot (kind family key value)...: a page of the
            // source's outbox, replayed in its order.
            let (partition, slot) = import_head(a, &sub, 4, router)?;
            let mut changes = Vec::with_capacity((a.len() - 4) / 4);
            for r in a[4..].chunks(4) {
                let small = |b: &[u8], what: &str| {
                    crate::types::number::parse_int_strict(b)
                        .and_then(|f| u8::try_from(f).ok())
                        .ok_or(CmdError::from(format!("ERR {what} must be a small integer")))
                };
                let (kind, family) = (small(&r[0], "kind")?, small(&r[1], "family")?);
                let change = Change::of(kind, family, r[2].clone(), r[3].clone())
                    .map_err(|e| CmdError::from(format!("ERR {e}")))?;
                changes.push(change);
            }
            let view = sh.dbs.partition(partition);
            let n = crate::storage::moving::apply_changes(view, slot, &changes)
                .map_err(|e| CmdError::from(format!("ERR {e}")))?;
            out.int(n as i64);
        }
        "importrecords" => {
            // CLUSTER IMPORTRECORDS partition slot (family key value)...: the copy's records.
            let (partition, slot) = import_head(a, &sub, 3, router)?;
            let mut records = Vec::with_capacity((a.len() - 4) / 3);
            for r in a[4..].chunks(3) {
                let family = crate::types::number::parse_int_strict(&r[0])
                    .and_then(|f| u8::try_from(f).ok())
                    .ok_or(CmdError::from("ERR family must be 0, 1 or 2"))?;
                records.push((family, r[1].as_slice(), r[2].as_slice()));
            }
            // A large page enters the target's replicas as table files; a small one as a
            // write batch.
            let bytes: usize = records.iter().map(|(_, k, v)| k.len() + v.len()).sum();
            let n = if bytes >= crate::cluster::ingest::INGEST_BYTES {
                let entry = crate::cluster::ingest::encode(slot, &records)
                    .map_err(|e| CmdError::from(format!("ERR {e}")))?;
                router.ingest_copy(partition, entry).map_err(CmdError::from)?
            } else {
                let view = sh.dbs.partition(partition);
                crate::storage::moving::import(view, slot, &records)
                    .map_err(|e| CmdError::from(format!("ERR {e}")))?
            };
            out.int(n as i64);
        }
        "map" | "rebalance" | "addnode" | "removenode" | "forgetnode" | "setslotpartition" => {
            let op = match sub.as_str() {
                "map" => {
                    argc(2)?;
                    Admin::Map
                }
                "setslotpartition" => {
                    argc(4)?;
                    Admin::MoveSlot {
                        slot: slot_arg(&a[2])?,
                        partition: u16_arg(&a[3], "partition")?,
                    }
                }
                "rebalance" => {
                    argc(2)?;
                    Admin::Rebalance
                }
                "addnode" => {
                    argc(4)?;
                    let id = node_id_arg(&a[2])?;
                    let addr = String::from_utf8_lossy(&a[3]);
                    let addrs = NodeAddrs::parse(&addr).ok_or_else(|| {
                        CmdError::from(format!(
                            "ERR node address `{addr}`: expected host:port:raft_port"
                        ))
                    })?;
                    Admin::AddNode { id, client: addrs.client, raft: addrs.raft }
                }
                "removenode" => {
                    argc(3)?;
                    Admin::RemoveNode(node_id_arg(&a[2])?)
                }
                _ => {
                    argc(3)?;
                    Admin::ForgetNode(node_id_arg(&a[2])?)
                }
            };
            let text = router.admin(op).map_err(CmdError::from)?;
            out.bulk(text.as_bytes());
        }
        "countkeysinslot" => {
            argc(3)?;
            let slot = slot_arg(&a[2])?;
            let mut n = 0i64;
            let _serving = serve_partition(router.partition_of(slot));
            sh.dbs.store(c.db).scan_slot(slot, |_| {
                n += 1;
                true
            })?;
            out.int(n);
        }
        "getkeysinslot" => {
            argc(4)?;
            let slot = slot_arg(&a[2])?;
            let count = crate::types::number::parse_int_strict(&a[3])
                .filter(|n| *n >= 0)
                .ok_or(CmdError::from("ERR Invalid number of keys"))?;
            let mut keys = Vec::new();
            let _serving = serve_partition(router.partition_of(slot));
            sh.dbs.store(c.db).scan_slot(slot, |k| {
                if keys.len() as i64 >= count {
                    return false;
                }
                keys.push(k.to_vec());
                true
            })?;
            out.array(keys.len());
            for k in keys {
                out.bulk(&k);
            }
        }
        _ => return Err(super::errors::unknown_subcommand(a)),
    }
    Ok(())
}

/// A range's replicas, its leader first.
fn serving_order(r: &SlotRange) -> Vec<u64> {
    let mut order: Vec<u64> = r.leader.into_iter().collect();
    order.extend(r.replicas.iter().copied().filter(|id| Some(*id) != r.leader));
    order
}

/// A node id argument: a positive integer, as in `cluster-nodes`, or the 40 hex digits
/// CLUSTER NODES names it by.
fn node_id_arg(a: &[u8]) -> Result<u64, CmdError> {
    let text = String::from_utf8_lossy(a);
    let id = if text.len() == 40 {
        u64::from_str_radix(text.trim_start_matches('0'), 16).ok()
    } else {
        text.parse::<u64>().ok()
    };
    id.filter(|n| *n > 0).ok_or_else(|| CmdError::from(format!("ERR Invalid node id `{text}`")))
}

/// A partition argument: an integer below 65536 (the router checks it against the count).
fn u16_arg(a: &[u8], what: &str) -> Result<u16, CmdError> {
    crate::types::number::parse_int_strict(a)
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| CmdError::from(format!("ERR Invalid {what}")))
}

/// The partition and slot of an import (IMPORTRECORDS, IMPORTCHANGES: `partition slot`
/// then records of `width` arguments each), once this node may take it (`Router::check_copy`).
fn import_head(
    a: &[Vec<u8>],
    sub: &str,
    width: usize,
    router: &std::sync::Arc<dyn crate::routing::Router>,
) -> Result<(u16, u16), CmdError> {
    if a.len() < 4 || !(a.len() - 4).is_multiple_of(width) {
        return Err(format!(
            "ERR Unknown subcommand or wrong number of arguments for '{sub}'. Try CLUSTER HELP."
        )
        .into());
    }
    let partition = u16_arg(&a[2], "partition")?;
    let slot = slot_arg(&a[3])?;
    router.check_copy(partition, slot, false).map_err(CmdError::from)?;
    Ok((partition, slot))
}

/// A slot argument: an integer below 16384, else Redis's error.
fn slot_arg(a: &[u8]) -> Result<u16, CmdError> {
    crate::types::number::parse_int_strict(a)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n < crate::slots::SLOTS)
        .ok_or(CmdError::from("ERR Invalid slot"))
}
