//! INFO's `lazyfreed_objects`: the values that Redis 7.0 would hand to its lazyfree thread
//! when UNLINK (or DEL with `lazyfree-lazy-user-del yes`) deletes them.
//!
//! Here no deletion waits on the size of what it deletes: it removes the key's metadata
//! record and leaves the members to compaction (`types::gc`), so every such value is freed
//! "in the background". The count keeps Redis's meaning for a client that reads it: a value
//! counts when Redis's estimate of the effort of freeing it passes [`LAZYFREE_THRESHOLD`]
//! (Redis's rule: the nodes of a list, the members of a set, sorted set or hash that has
//! left its compact encoding, the nodes and consumer groups of a stream; 1 for anything
//! else). `lazyfree_pending_objects` stays 0: nothing is queued.
//!
//! Not counted: FLUSHDB/FLUSHALL ASYNC (a range deletion here, whose keys are not walked to
//! be counted) and deletions by expiry or overwrite (`lazyfree-lazy-expire`,
//! `lazyfree-lazy-server-del`).

use super::args::is;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::keys;
use crate::types::rdb::Encodings;
use crate::types::stream::info as stream_info;
use crate::types::stream::Stream;
use crate::types::{list, set, zset, Keyspace, Kind, Meta, Result};
use std::sync::atomic::Ordering::Relaxed;

/// Redis's `LAZYFREE_THRESHOLD`: a value whose freeing effort is above this is freed lazily.
pub const LAZYFREE_THRESHOLD: u64 = 64;

/// List elements read to estimate their average size ([`frees_lazily`]).
const LIST_SAMPLE: i64 = 8;

/// DEL and UNLINK: deletes the keys; UNLINK, and DEL under `lazyfree-lazy-user-del yes`,
/// count the values Redis would free lazily (module doc).
pub fn del(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let lazy = is(&a[0], "unlink")
        || sh.params.read().get("lazyfree-lazy-user-del").is_some_and(|v| is(v.as_bytes(), "yes"));
    let n = if lazy {
        let enc = super::dump::encodings(sh);
        let mut lazily = 0;
        let n = keys::delete_with(&ks, &a[1..], |k, m| {
            lazily += u64::from(frees_lazily(&enc, &ks, k, m)?);
            Ok(())
        })?;
        sh.stats.lazyfreed.fetch_add(lazily, Relaxed);
        n
    } else {
        keys::delete(&ks, &a[1..])?
    };
    out.int(n as i64);
    Ok(())
}

/// Whether Redis 7.0 would free the value at `key` (metadata `m`) lazily: its estimate of the
/// effort passes [`LAZYFREE_THRESHOLD`], by the encodings OBJECT ENCODING names here
/// (`commands::keys::encoding_name`'s rules, the thresholds `enc`).
fn frees_lazily(enc: &Encodings, ks: &Keyspace, key: &[u8], m: &Meta) -> Result<bool> {
    // A list's nodes, or the members of a set, sorted set or hash, are at most its size: a
    // small value is settled without reading its members.
    if m.kind != Kind::Stream && m.size <= LAZYFREE_THRESHOLD {
        return Ok(false);
    }
    let effort = match m.kind {
        Kind::String => 1,
        Kind::Hash if m.compact => 1,
        Kind::Set if set::intset_shaped(ks, key, m, enc.set_max_intset_entries)? => 1,
        Kind::ZSet
            if zset::listpack_shaped(
                ks,
                key,
                m,
                enc.zset_max_listpack_entries,
                enc.zset_max_listpack_value,
            )? =>
        {
            1
        }
        Kind::Hash | Kind::Set | Kind::ZSet => m.size,
        Kind::List => nodes_for(m.size, average_len(ks, key)?, enc.list_max_listpack_size),
        Kind::Stream => {
            let s = Stream::from_meta(m)?;
            // Redis takes the first group's PEL as the measure of every group's.
            let first_pending = if s.groups == 0 {
                0
            } else {
                stream_info::groups(ks, key)?
                    .and_then(|g| g.first().map(|g| g.pending))
                    .unwrap_or(0)
            };
            s.nodes + s.groups * (1 + first_pending)
        }
    };
    Ok(effort > LAZYFREE_THRESHOLD)
}

/// The average length of the first [`LIST_SAMPLE`] elements of the list at `key`.
fn average_len(ks: &Keyspace, key: &[u8]) -> Result<u64> {
    let sample = list::range(ks, key, 0, LIST_SAMPLE - 1)?;
    let total: usize = sample.iter().map(Vec::len).sum();
    Ok((total / sample.len().max(1)) as u64)
}

/// The nodes of Redis's quicklist for `len` elements of about `elem_len` bytes each under
/// `list-max-listpack-size` `fill` (entries per node when positive, else a node's bytes: -1
/// 4 KiB ... -5 64 KiB, lower values as -5); a listpack entry costs about 2 bytes beside its
/// data.
fn nodes_for(len: u64, elem_len: u64, fill: i64) -> u64 {
    if len == 0 {
        return 0;
    }
    if fill > 0 {
        return len.div_ceil(fill.unsigned_abs());
    }
    let class = fill.unsigned_abs().clamp(1, 5);
    let node_bytes = 4096u64 << (class - 1);
    let per_node = (node_bytes / (elem_len + 2)).max(1);
    len.div_ceil(per_node)
}

#[cfg(test)]
mod tests {
    use super::nodes_for;

    #[test]
    fn list_nodes_follow_the_fill_setting() {
        assert_eq!(nodes_for(0, 5, -2), 0);
        assert_eq!(nodes_for(10, 5, -2), 1, "small lists are one node");
        // 8 KiB nodes of 7-byte entries: 1,170 a node.
        assert_eq!(nodes_for(100_000, 5, -2), 86);
        assert_eq!(nodes_for(100_000, 5, -1), 171, "4 KiB nodes");
        assert_eq!(nodes_for(100_000, 5, -9), 11, "below -5 as -5 (64 KiB)");
        assert_eq!(nodes_for(1000, 5, 128), 8, "entries per node");
        assert_eq!(nodes_for(10, 100_000, -2), 10, "a value larger than a node is a node");
    }
}
