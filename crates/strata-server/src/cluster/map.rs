//! The cluster map ([`ClusterMap`]): every node with its addresses and state, the partitions'
//! count, the replication factor, and each partition's replicas (preferred leader first),
//! with a version. It is the state of the meta group ([`META`], a Raft group of its own, as
//! Pegasus keeps its layout in its meta servers): every node of the map holds a replica of
//! that group (the first few as voters, the rest as learners), so each node has the map in
//! its own store, learns each change when it applies it, and finds its place in the cluster
//! again after a restart.
//!
//! ```text
//!  record (server family, key "cluster\0map"):
//!    format u8 (1, 2 or 3) | version u64 LE | partitions u16 LE | replicas u8 | nodes u16 LE
//!    | per node, ids ascending:  id u64 LE | state u8 (0 active, 1 leaving)
//!                               | client len u16 LE | client | raft len u16 LE | raft
//!    | per partition, in order:  count u8 | node id u64 LE x count
//!    formats 2 and 3:
//!    | moved u16 LE | per moved slot, ascending:  slot u16 LE | partition u16 LE
//!    format 3 only:
//!    | cluster id u64 LE (not 0)
//!
//!  meta group entry:  format u8 (1) | expected version u64 LE | record of the new map
//! ```
//!
//! Slots belong to partitions in runs (`super::partitions`) unless the map says otherwise:
//! a slot moved to another partition (`move-slots`) is listed with it. A map without moved
//! slots is written in format 1, which versions before slot moves read too.
//!
//! The cluster id tells this cluster's nodes from another's at their connections (the
//! transport's handshake: node and group ids repeat from cluster to cluster). It is drawn at
//! random by the meta group's leader when it commits a new cluster's first map, or the first
//! change of a map written before ids (0: none); a map with one is written in format 3.
//!
//! An entry replaces the map when the map applied before it has the expected version, and
//! the new map's version is that plus one; otherwise it changes nothing and its reply says
//! `stale` (a controller that read an older map retries on the new one). So the map's
//! changes form one sequence whatever the number of controllers, and applying is
//! deterministic.

use std::collections::{BTreeMap, BTreeSet};

use strata::{Db, WriteBatch};
use strata_replication::{GroupId, NodeId, Peer};

use super::partitions::Partitions;
use super::spec::NodeAddrs;
use crate::storage::Store;

/// The meta group's id: above every partition's (partitions are groups `0..count`).
pub const META: GroupId = GroupId(u32::MAX);

/// The map's key in the server family (the meta group's one key range).
pub const MAP_KEY: &[u8] = b"cluster\0map";
/// The meta group's key range in the server family: `[META_START, META_END)`.
pub const META_START: &[u8] = b"cluster\0";
/// End of the meta group's key range.
pub const META_END: &[u8] = b"cluster\x01";

const FORMAT: u8 = 1;
/// The record's format once a slot has moved.
const FORMAT_MOVED: u8 = 2;
/// The record's format once the map has a cluster id.
const FORMAT_ID: u8 = 3;

/// How many of the map's nodes vote in the meta group: all of them up to three, five from
/// five on (a majority survives one failure with three, two with five).
pub fn meta_voter_count(nodes: usize) -> usize {
    match nodes {
        0..=3 => nodes,
        4 => 3,
        _ => 5,
    }
}

/// A node's state in the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeState {
    /// Takes replicas.
    Active,
    /// Being removed: rebalancing moves its replicas away, after which it can be forgotten.
    Leaving,
}

/// A node of the map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapNode {
    /// Where it is reached.
    pub addrs: NodeAddrs,
    /// Active or leaving.
    pub state: NodeState,
}

impl MapNode {
    /// Where its Raft transport is reached, as a group's membership names it.
    pub fn peer(&self) -> Peer {
        Peer { addr: self.addrs.raft.clone() }
    }
}

/// The cluster's layout (see the module's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMap {
    /// Changes with every committed change; 0 for a map not committed yet (a new cluster's,
    /// computed from the settings).
    pub version: u64,
    /// The partitions' count (fixed for a cluster's life).
    pub partitions: u16,
    /// Replicas per partition.
    pub replicas: u8,
    /// Every node.
    pub nodes: BTreeMap<NodeId, MapNode>,
    /// Each partition's replicas, preferred leader first.
    pub placement: Vec<Vec<NodeId>>,
    /// The slots whose partition is not the one their run gives, with theirs.
    pub moved: BTreeMap<u16, u16>,
    /// The cluster's id (module doc); 0 until the first map is committed.
    pub id: u64,
}

/// A damaged record or entry, with what was wrong.
fn bad(what: &str) -> String {
    format!("cluster map: {what}")
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err(bad(&format!("cut short in {what}")));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, String> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn text(&mut self, what: &str) -> Result<String, String> {
        let n = usize::from(self.u16(what)?);
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| bad(&format!("{what} is not UTF-8")))
    }
}

impl ClusterMap {
    /// The map's record.
    pub fn encode(&self) -> Vec<u8> {
        let format = match (self.id, self.moved.is_empty()) {
            (0, true) => FORMAT,
            (0, false) => FORMAT_MOVED,
            _ => FORMAT_ID,
        };
        let mut out = vec![format];
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.partitions.to_le_bytes());
        out.push(self.replicas);
        out.extend_from_slice(&(self.nodes.len() as u16).to_le_bytes());
        for (id, n) in &self.nodes {
            out.extend_from_slice(&id.to_le_bytes());
            out.push(match n.state {
                NodeState::Active => 0,
                NodeState::Leaving => 1,
            });
            for t in [&n.addrs.client, &n.addrs.raft] {
                out.extend_from_slice(&(t.len() as u16).to_le_bytes());
                out.extend_from_slice(t.as_bytes());
            }
        }
        for r in &self.placement {
            out.push(r.len() as u8);
            for id in r {
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
        if format != FORMAT {
            out.extend_from_slice(&(self.moved.len() as u16).to_le_bytes());
            for (slot, p) in &self.moved {
                out.extend_from_slice(&slot.to_le_bytes());
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
        if format == FORMAT_ID {
            out.extend_from_slice(&self.id.to_le_bytes());
        }
        out
    }

    /// The partition slot `slot` (below 16384) belongs to: the one the map moved it to, or
    /// its run's.
    pub fn partition_of(&self, slot: u16) -> u16 {
        match self.moved.get(&slot) {
            Some(p) => *p,
            None => self.runs().of_slot(slot),
        }
    }

    /// The runs of slots the partitions start with.
    pub fn runs(&self) -> Partitions {
        Partitions::new(self.partitions.max(1)).expect("a map has 1 to 16384 partitions")
    }

    /// The slots of partition `p`, in order, as runs `(first, last)`.
    pub fn slot_runs_of(&self, p: u16) -> Vec<(u16, u16)> {
        let mut runs: Vec<(u16, u16)> = Vec::new();
        let mut add = |s: u16| match runs.last_mut() {
            Some((_, last)) if *last + 1 == s => *last = s,
            _ => runs.push((s, s)),
        };
        let (first, last) = self.runs().slots(p);
        let mut moved_in = self.moved.iter().filter(|(_, q)| **q == p).map(|(s, _)| *s).peekable();
        for s in first..=last {
            while let Some(m) = moved_in.next_if(|m| *m < s) {
                add(m);
            }
            if !self.moved.contains_key(&s) {
                add(s);
            }
        }
        for m in moved_in {
            add(m);
        }
        runs
    }

    /// Every slot in runs of one partition, in slot order: `(first, last, partition)`.
    pub fn slot_table(&self) -> Vec<(u16, u16, u16)> {
        let mut table: Vec<(u16, u16, u16)> = Vec::new();
        for s in 0..crate::slots::SLOTS {
            let p = self.partition_of(s);
            match table.last_mut() {
                Some((_, last, q)) if *q == p => *last = s,
                _ => table.push((s, s, p)),
            }
        }
        table
    }

    /// Decodes a record, checking that it describes a map (every partition's replicas are
    /// distinct nodes of the map).
    pub fn decode(b: &[u8]) -> Result<ClusterMap, String> {
        let mut r = Reader { b };
        let format = r.u8("the format")?;
        if !(FORMAT..=FORMAT_ID).contains(&format) {
            return Err(bad(&format!("format {format}, expected {FORMAT} to {FORMAT_ID}")));
        }
        let version = r.u64("the version")?;
        let partitions = r.u16("the partitions")?;
        let replicas = r.u8("the replicas")?;
        let count = r.u16("the node count")?;
        let mut nodes = BTreeMap::new();
        for _ in 0..count {
            let id = r.u64("a node id")?;
            let state = match r.u8("a node state")? {
                0 => NodeState::Active,
                1 => NodeState::Leaving,
                s => return Err(bad(&format!("node {id} has state {s}, expected 0 or 1"))),
            };
            let client = r.text("a client address")?;
            let raft = r.text("a raft address")?;
            if nodes.insert(id, MapNode { addrs: NodeAddrs { client, raft }, state }).is_some() {
                return Err(bad(&format!("node {id} appears twice")));
            }
        }
        let mut placement = Vec::with_capacity(usize::from(partitions));
        for p in 0..partitions {
            let n = r.u8("a replica count")?;
            let mut ids = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                let id = r.u64("a replica")?;
                if !nodes.contains_key(&id) || ids.contains(&id) {
                    return Err(bad(&format!("partition {p} names node {id} wrongly")));
                }
                ids.push(id);
            }
            placement.push(ids);
        }
        let mut moved = BTreeMap::new();
        if format != FORMAT {
            let runs = Partitions::new(partitions.max(1)).ok_or_else(|| bad("0 partitions"))?;
            for _ in 0..r.u16("the moved slots' count")? {
                let slot = r.u16("a moved slot")?;
                let p = r.u16("a moved slot's partition")?;
                let fits = slot < crate::slots::SLOTS
                    && p < partitions
                    && runs.of_slot(slot) != p
                    && moved.last_key_value().is_none_or(|(s, _)| *s < slot);
                if !fits {
                    return Err(bad(&format!(
                        "moved slot {slot} to partition {p}: not a slot in ascending order \
                         moved out of its run to one of the {partitions} partitions"
                    )));
                }
                moved.insert(slot, p);
            }
        }
        let id = if format == FORMAT_ID { r.u64("the cluster id")? } else { 0 };
        if format == FORMAT_ID && id == 0 {
            return Err(bad("cluster id 0 in format 3"));
        }
        if !r.b.is_empty() {
            return Err(bad(&format!("{} bytes after the record", r.b.len())));
        }
        Ok(ClusterMap { version, partitions, replicas, nodes, placement, moved, id })
    }

    /// The map stored in `store` (the meta group's applied state), if any.
    pub fn load(store: &Store) -> Result<Option<ClusterMap>, String> {
        let v = store
            .db
            .get_cf(&store.server_cf, MAP_KEY)
            .map_err(|e| format!("cluster map: cannot read it: {e}"))?;
        v.map(|v| ClusterMap::decode(&v)).transpose()
    }

    /// The nodes that should vote in the meta group: those voting now (`current`) that are
    /// still in the map, then others in id order, up to [`meta_voter_count`].
    pub fn meta_voters(&self, current: &BTreeSet<NodeId>) -> BTreeSet<NodeId> {
        let want = meta_voter_count(self.nodes.len());
        let mut voters: BTreeSet<NodeId> =
            current.iter().copied().filter(|n| self.nodes.contains_key(n)).take(want).collect();
        for id in self.nodes.keys() {
            if voters.len() >= want {
                break;
            }
            voters.insert(*id);
        }
        voters
    }

    /// The partitions `node` holds a replica of.
    pub fn held_by(&self, node: NodeId) -> Vec<u16> {
        (0..self.partitions).filter(|p| self.placement[usize::from(*p)].contains(&node)).collect()
    }

    /// The client address of `node`.
    pub fn client(&self, node: NodeId) -> Option<&str> {
        self.nodes.get(&node).map(|n| n.addrs.client.as_str())
    }
}

/// The meta group entry that replaces the map of version `expected` by `new` (whose version
/// must be `expected + 1`).
pub fn encode_change(expected: u64, new: &ClusterMap) -> Vec<u8> {
    let mut out = vec![FORMAT];
    out.extend_from_slice(&expected.to_le_bytes());
    out.extend_from_slice(&new.encode());
    out
}

/// A new cluster id (module doc): random, never 0.
pub fn draw_cluster_id() -> u64 {
    loop {
        let id: u64 = rand::random();
        if id != 0 {
            return id;
        }
    }
}

/// The reply of an entry that changed the map.
pub const APPLIED: &[u8] = b"ok";

/// Applies meta group entry `command` at `index`: adds the new map's record to `batch` when
/// the stored map has the expected version, and returns the reply and the new map (`None`
/// when stale). An `Err` is an entry that does not decode (it stops the meta group).
pub fn apply_change(
    db: &Db,
    store: &Store,
    index: u64,
    command: &[u8],
    batch: &mut WriteBatch,
) -> Result<(Vec<u8>, Option<ClusterMap>), String> {
    let Some((&format, rest)) = command.split_first() else {
        return Err(format!("meta entry {index} is empty"));
    };
    if format != FORMAT || rest.len() < 8 {
        return Err(format!("meta entry {index}: format {format} or length {}", command.len()));
    }
    let expected = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
    let new = ClusterMap::decode(&rest[8..]).map_err(|e| format!("meta entry {index}: {e}"))?;
    let current = db
        .get_cf(&store.server_cf, MAP_KEY)
        .map_err(|e| format!("meta entry {index}: cannot read the map: {e}"))?
        .map(|v| ClusterMap::decode(&v))
        .transpose()
        .map_err(|e| format!("meta entry {index}: the stored map: {e}"))?;
    let version = current.as_ref().map_or(0, |m| m.version);
    // The partitions' count and, once drawn, the cluster id are the cluster's for life.
    let fits = current
        .as_ref()
        .is_none_or(|m| m.partitions == new.partitions && (m.id == 0 || m.id == new.id));
    if version != expected || new.version != expected + 1 || !fits {
        return Ok((format!("stale {version}").into_bytes(), None));
    }
    batch.put_cf(&store.server_cf, MAP_KEY, &rest[8..]);
    Ok((APPLIED.to_vec(), Some(new)))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn map(nodes: &[NodeId], partitions: u16, replicas: u8) -> ClusterMap {
        let nodes: BTreeMap<NodeId, MapNode> = nodes
            .iter()
            .map(|id| {
                let addrs = NodeAddrs {
                    client: format!("127.0.0.1:{}", 7000 + id),
                    raft: format!("127.0.0.1:{}", 17000 + id),
                };
                (*id, MapNode { addrs, state: NodeState::Active })
            })
            .collect();
        let ids: Vec<NodeId> = nodes.keys().copied().collect();
        let placement = (0..partitions)
            .map(|p| {
                (0..usize::from(replicas)).map(|i| ids[(usize::from(p) + i) % ids.len()]).collect()
            })
            .collect();
        let moved = BTreeMap::new();
        ClusterMap { version: 3, partitions, replicas, nodes, placement, moved, id: 0 }
    }

    #[test]
    fn a_cluster_id_goes_in_format_3_with_or_without_moved_slots() {
        let mut m = map(&[1, 2, 3], 4, 3);
        m.id = 0x0123_4567_89ab_cdef;
        let b = m.encode();
        assert_eq!(b[0], 3);
        assert_eq!(ClusterMap::decode(&b).unwrap(), m);
        m.moved.insert(5000, 3);
        let b = m.encode();
        assert_eq!((b[0], ClusterMap::decode(&b).unwrap()), (3, m.clone()));
        for cut in 0..b.len() {
            assert!(ClusterMap::decode(&b[..cut]).is_err(), "{cut}");
        }
        let mut zero = b.clone();
        let n = zero.len();
        zero[n - 8..].fill(0);
        assert!(ClusterMap::decode(&zero).unwrap_err().contains("cluster id 0"));
        // Without an id, the formats of before: maps from nodes of earlier versions read.
        m.id = 0;
        assert_eq!(m.encode()[0], 2);
    }

    #[test]
    fn moved_slots_round_trip_and_route() {
        let mut m = map(&[1, 2, 3], 4, 3);
        assert_eq!(m.encode()[0], 1, "no moved slot: format 1");
        assert_eq!(m.partition_of(5000), 1);
        assert_eq!(m.slot_runs_of(1), vec![(4096, 8191)]);
        m.moved.insert(5000, 3);
        m.moved.insert(5001, 3);
        m.moved.insert(100, 1);
        let b = m.encode();
        assert_eq!(b[0], 2);
        assert_eq!(ClusterMap::decode(&b).unwrap(), m);
        assert_eq!((m.partition_of(5000), m.partition_of(100), m.partition_of(99)), (3, 1, 0));
        assert_eq!(m.slot_runs_of(1), vec![(100, 100), (4096, 4999), (5002, 8191)]);
        assert_eq!(m.slot_runs_of(3), vec![(5000, 5001), (12288, 16383)]);
        assert_eq!(m.slot_runs_of(0), vec![(0, 99), (101, 4095)]);
        let table = m.slot_table();
        assert_eq!(table[..3], [(0, 99, 0), (100, 100, 1), (101, 4095, 0)]);
        assert_eq!(table.iter().map(|(f, l, _)| u32::from(l - f) + 1).sum::<u32>(), 16384);
        // A moved slot listed under its own run's partition, or out of order, is refused.
        let mut wrong = b.clone();
        let at = wrong.len() - 4 * 3;
        wrong[at + 2..at + 4].copy_from_slice(&0u16.to_le_bytes());
        assert!(ClusterMap::decode(&wrong).unwrap_err().contains("moved slot 100"));
        for cut in 0..b.len() {
            assert!(ClusterMap::decode(&b[..cut]).is_err(), "{cut}");
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_named() {
        let mut m = map(&[1, 2, 3, 9], 8, 3);
        m.nodes.get_mut(&9).unwrap().state = NodeState::Leaving;
        let b = m.encode();
        assert_eq!(ClusterMap::decode(&b).unwrap(), m);
        for cut in 0..b.len() {
            let e = ClusterMap::decode(&b[..cut]).unwrap_err();
            assert!(e.contains("cut short"), "{cut}: {e}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(ClusterMap::decode(&longer).unwrap_err().contains("1 bytes after"));
        let mut wrong = b.clone();
        wrong[0] = 7;
        assert!(ClusterMap::decode(&wrong).unwrap_err().contains("format 7"));
        // A replica that is not a node of the map.
        let mut stray = m.clone();
        stray.placement[2][1] = 42;
        assert!(ClusterMap::decode(&stray.encode()).unwrap_err().contains("partition 2"));
    }

    #[test]
    fn changes_apply_in_sequence_and_stale_ones_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let opts = strata::Options::default();
        let store = crate::types::open(opts, dir.path(), crate::storage::SyncPolicy::No).unwrap();
        let apply = |cmd: &[u8]| {
            let mut b = WriteBatch::new();
            let r = apply_change(&store.db, &store, 7, cmd, &mut b);
            store.db.write(b).unwrap();
            r
        };
        let mut first = map(&[1, 2, 3], 4, 3);
        first.version = 1;
        let (reply, new) = apply(&encode_change(0, &first)).unwrap();
        assert_eq!((reply.as_slice(), new.as_ref()), (APPLIED, Some(&first)));
        assert_eq!(ClusterMap::load(&store).unwrap(), Some(first.clone()));
        // A change from a version that is not the stored one, or that skips a version, or
        // that changes the partitions' count, is stale: nothing is written.
        let mut second = map(&[1, 2, 3, 4], 4, 3);
        second.version = 2;
        assert_eq!(apply(&encode_change(0, &second)).unwrap(), (b"stale 1".to_vec(), None));
        second.version = 3;
        assert_eq!(apply(&encode_change(1, &second)).unwrap().1, None);
        let mut other = map(&[1, 2, 3], 8, 3);
        other.version = 2;
        assert_eq!(apply(&encode_change(1, &other)).unwrap().1, None);
        assert_eq!(ClusterMap::load(&store).unwrap(), Some(first));
        second.version = 2;
        assert_eq!(apply(&encode_change(1, &second)).unwrap().0, APPLIED);
        assert_eq!(ClusterMap::load(&store).unwrap(), Some(second.clone()));
        // A map without an id takes one with a change; from then on it never changes.
        let mut third = second.clone();
        (third.version, third.id) = (3, 0xa1);
        assert_eq!(apply(&encode_change(2, &third)).unwrap().0, APPLIED);
        let mut fourth = third.clone();
        (fourth.version, fourth.id) = (4, 0xb2);
        assert_eq!(apply(&encode_change(3, &fourth)).unwrap(), (b"stale 3".to_vec(), None));
        assert_eq!(ClusterMap::load(&store).unwrap(), Some(third));
        // Entries that do not decode stop the group, naming the entry.
        assert!(apply(b"").unwrap_err().contains("meta entry 7 is empty"));
        assert!(apply(&[1, 0, 0]).unwrap_err().contains("meta entry 7"));
        let mut cut = encode_change(2, &map(&[1], 1, 1));
        cut.pop();
        assert!(apply(&cut).unwrap_err().contains("cut short"));
    }

    #[test]
    fn meta_voters_keep_current_ones_and_fill_in_id_order() {
        assert_eq!(meta_voter_count(1), 1);
        assert_eq!(meta_voter_count(4), 3);
        assert_eq!(meta_voter_count(9), 5);
        let m = map(&[1, 2, 3, 4, 5, 6], 4, 3);
        let keep: BTreeSet<NodeId> = [6, 4, 9].into();
        assert_eq!(m.meta_voters(&keep), [1, 2, 3, 4, 6].into());
        assert_eq!(m.meta_voters(&BTreeSet::new()), [1, 2, 3, 4, 5].into());
    }
}
