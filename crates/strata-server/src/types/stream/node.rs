//! The nodes of a stream: Redis keeps a stream's entries in a radix tree of listpacks
//! ("nodes") of at most `stream-node-max-entries` entries and `stream-node-max-bytes` bytes,
//! and approximate trimming (`MAXLEN ~`, `MINID ~`, `LIMIT`) removes whole nodes only. So
//! that those commands leave exactly the entries Redis leaves, each stream here keeps one
//! record per node it would have: the node's first ("master") id, its live and deleted
//! entry counts, the last id ever put in it, an estimate of its listpack size, and the
//! field names of its first entry (Redis stores an entry with the same field names more
//! compactly, which the estimate follows). The entries themselves are separate sub-keys.
//!
//! ```text
//!  node record (value of the `0x02 | master id` sub-key):
//!  +------------+---------------+------------------+----------------+
//!  | live u64LE | deleted u64LE | last id (16, LE) | body_bytes u64LE |
//!  +------------+---------------+------------------+----------------+
//!  | field count u32LE | (field_len u32LE | field)*                  |
//!  +--------------------------------------------------------------+
//!  body_bytes: the estimated listpack size without its two counters (live, deleted)
//! ```

use super::id::StreamId;
use crate::types::number::parse_int_strict;

/// A listpack's header (total bytes, element count) and end byte.
const LP_OVERHEAD: u64 = 7;
/// The most Redis lets a node's listpack hold (`STREAM_LISTPACK_MAX_SIZE`), also the
/// largest sum of an entry's fields and values it accepts.
pub const LISTPACK_MAX: u64 = 1 << 30;

/// A node of a stream (module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The id of the first entry put in the node: its key.
    pub master: StreamId,
    /// Entries not deleted.
    pub live: u64,
    /// Entries marked deleted by trimming or XDEL (still counted towards the node's size).
    pub deleted: u64,
    /// The last id put in the node.
    pub last: StreamId,
    /// Estimated listpack bytes without the live and deleted counters.
    pub body_bytes: u64,
    /// The field names of the master entry.
    pub master_fields: Vec<Vec<u8>>,
}

/// The encoded size of an integer element of a listpack, backlen included.
fn int_size(v: i64) -> u64 {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    };
    enc + backlen_size(enc)
}

/// The encoded size of a string element (stored as an integer when it reads as one).
fn str_size(s: &[u8]) -> u64 {
    if let Some(v) = parse_int_strict(s) {
        return int_size(v);
    }
    let n = s.len() as u64;
    let enc = match n {
        0..=63 => 1 + n,
        64..=4095 => 2 + n,
        _ => 5 + n,
    };
    enc + backlen_size(enc)
}

fn backlen_size(l: u64) -> u64 {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

impl Node {
    /// A new node whose first entry is `id` with `pairs` (field, value, field, value...).
    pub fn new(id: StreamId, pairs: &[Vec<u8>]) -> Node {
        let fields: Vec<Vec<u8>> = pairs.iter().step_by(2).cloned().collect();
        let mut body = LP_OVERHEAD + int_size(fields.len() as i64) + int_size(0);
        body += fields.iter().map(|f| str_size(f)).sum::<u64>();
        let mut n = Node {
            master: id,
            live: 0,
            deleted: 0,
            last: id,
            body_bytes: body,
            master_fields: fields,
        };
        n.push(id, pairs);
        n
    }

    /// The estimated listpack size.
    pub fn bytes(&self) -> u64 {
        self.body_bytes + int_size(self.live as i64) + int_size(self.deleted as i64)
    }

    /// Whether Redis would start a new node for an entry of `pairs` rather than append it
    /// to this one.
    pub fn is_full(&self, pairs: &[Vec<u8>], max_entries: u64, max_bytes: u64) -> bool {
        let max_bytes =
            if max_bytes == 0 || max_bytes > LISTPACK_MAX { LISTPACK_MAX } else { max_bytes };
        let new_bytes: u64 = pairs.iter().map(|p| p.len() as u64).sum();
        self.bytes() + new_bytes >= max_bytes
            || (max_entries != 0 && self.live + self.deleted >= max_entries)
    }

    /// Puts the entry `id` with `pairs` at the end of the node.
    pub fn push(&mut self, id: StreamId, pairs: &[Vec<u8>]) {
        let same = pairs.len() / 2 == self.master_fields.len()
            && pairs.iter().step_by(2).zip(&self.master_fields).all(|(a, b)| a == b);
        let ms_delta = id.ms.wrapping_sub(self.master.ms) as i64;
        let seq_delta = id.seq.wrapping_sub(self.master.seq) as i64;
        let mut b = int_size(if same { 2 } else { 0 }) + int_size(ms_delta) + int_size(seq_delta);
        let mut pieces = 3 + pairs.len() as i64 / 2;
        if same {
            b += pairs.iter().skip(1).step_by(2).map(|v| str_size(v)).sum::<u64>();
        } else {
            b += int_size(pairs.len() as i64 / 2);
            b += pairs.iter().map(|p| str_size(p)).sum::<u64>();
            pieces += pairs.len() as i64 / 2 + 1;
        }
        b += int_size(pieces);
        self.body_bytes += b;
        self.live += 1;
        self.last = id;
    }

    /// Marks one live entry deleted; whether the node is then empty (Redis removes it).
    pub fn delete_one(&mut self) -> bool {
        self.live = self.live.saturating_sub(1);
        self.deleted += 1;
        self.live == 0
    }

    /// The record value.
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(44 + self.master_fields.iter().map(|f| 4 + f.len()).sum::<usize>());
        out.extend_from_slice(&self.live.to_le_bytes());
        out.extend_from_slice(&self.deleted.to_le_bytes());
        out.extend_from_slice(&self.last.to_le_bytes());
        out.extend_from_slice(&self.body_bytes.to_le_bytes());
        out.extend_from_slice(&(self.master_fields.len() as u32).to_le_bytes());
        for f in &self.master_fields {
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            out.extend_from_slice(f);
        }
        out
    }

    /// Reads a record of the node keyed `master`; `None` when it does not decode.
    pub fn decode(master: StreamId, v: &[u8]) -> Option<Node> {
        let u64_at = |at: usize| {
            v.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        };
        let live = u64_at(0)?;
        let deleted = u64_at(8)?;
        let last = StreamId::from_le_bytes(v.get(16..32)?)?;
        let body_bytes = u64_at(32)?;
        let count = u32::from_le_bytes(v.get(40..44)?.try_into().ok()?) as usize;
        let mut at = 44;
        let mut master_fields = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            let len = u32::from_le_bytes(v.get(at..at + 4)?.try_into().ok()?) as usize;
            at += 4;
            master_fields.push(v.get(at..at.checked_add(len)?)?.to_vec());
            at += len;
        }
        (at == v.len()).then_some(Node { master, live, deleted, last, body_bytes, master_fields })
    }
}

/// The number of nodes of the radix tree Redis would hold for nodes keyed `masters` (sorted
/// ascending; XINFO STREAM's `radix-tree-nodes`): a root, then a compressed node for each
/// run of bytes the keys below it share, a branching node where they part, and a leaf per
/// key.
pub fn radix_tree_nodes(masters: &[StreamId]) -> u64 {
    let keys: Vec<[u8; 16]> = masters.iter().map(|m| m.to_be_bytes()).collect();
    if keys.is_empty() {
        return 1;
    }
    subtree(&keys, 0)
}

/// The nodes of the subtree whose node starts at byte `depth` of `keys` (sorted, sharing
/// their first `depth` bytes).
fn subtree(keys: &[[u8; 16]], depth: usize) -> u64 {
    if depth >= 16 {
        return 1;
    }
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    if first[depth] == last[depth] {
        // One way on: a compressed node up to where the keys part (or end).
        let shared = (depth..16).find(|&i| first[i] != last[i]).unwrap_or(16);
        return 1 + subtree(keys, shared);
    }
    let mut n = 1;
    let mut start = 0;
    for i in 1..=keys.len() {
        if i == keys.len() || keys[i][depth] != keys[start][depth] {
            n += subtree(&keys[start..i], depth + 1);
            start = i;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn records_round_trip_and_garbage_is_refused() {
        let mut n = Node::new(StreamId::new(5, 1), &pairs(&["f", "v", "g", "w"]));
        n.push(StreamId::new(6, 0), &pairs(&["x", "1"]));
        assert!(!n.delete_one());
        let raw = n.encode();
        assert_eq!(Node::decode(n.master, &raw), Some(n.clone()));
        for cut in 0..raw.len() {
            assert_eq!(Node::decode(n.master, &raw[..cut]), None);
        }
        let mut long = raw.clone();
        long.push(0);
        assert_eq!(Node::decode(n.master, &long), None);
        assert!(n.delete_one());
        assert_eq!((n.live, n.deleted), (0, 2));
    }

    #[test]
    fn nodes_fill_by_entries_and_by_bytes() {
        let small = pairs(&["item", "1"]);
        let mut n = Node::new(StreamId::new(1, 0), &small);
        for i in 1..100 {
            assert!(!n.is_full(&small, 100, 4096), "entry {i}");
            n.push(StreamId::new(1 + i, 0), &small);
        }
        assert!(n.is_full(&small, 100, 4096));
        assert!(!n.is_full(&small, 0, 4096));
        // Header and end, the master entry (count, deleted, 1 field, "item", 0), and small
        // entries with the master's fields: ten bytes each (five one-byte elements, each
        // with its one-byte back length).
        assert_eq!(n.bytes(), 7 + (2 + 2 + 2 + 6 + 2) + 100 * 10);
        let big = vec![b"f".to_vec(), vec![b'x'; 5000]];
        let n = Node::new(StreamId::new(1, 0), &big);
        assert!(n.is_full(&big, 100, 4096));
        assert!(!n.is_full(&big, 100, 0));
    }

    #[test]
    fn radix_tree_nodes_as_redis_counts_them() {
        let id = |ms, seq| StreamId::new(ms, seq);
        assert_eq!(radix_tree_nodes(&[]), 1);
        assert_eq!(radix_tree_nodes(&[id(5, 0)]), 2);
        // Keys parting at one byte: root, branch, and a compressed node and leaf each.
        assert_eq!(radix_tree_nodes(&[id(25, 0), id(38, 0)]), 6);
        // Parting at the last byte: the branch's children are leaves.
        assert_eq!(radix_tree_nodes(&[id(1, 1), id(1, 2), id(1, 3)]), 1 + 1 + 3);
    }

    #[test]
    fn element_sizes_follow_listpack_encodings() {
        assert_eq!(int_size(0), 2);
        assert_eq!(int_size(127), 2);
        assert_eq!(int_size(128), 3);
        assert_eq!(int_size(-1), 3);
        assert_eq!(int_size(i64::MAX), 10);
        assert_eq!(str_size(b"12"), 2);
        assert_eq!(str_size(b"ab"), 4);
        assert_eq!(str_size(&[b'a'; 100]), 103);
        assert_eq!(backlen_size(127), 1);
        assert_eq!(backlen_size(128), 2);
    }
}
