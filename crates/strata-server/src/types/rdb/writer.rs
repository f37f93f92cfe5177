//! Encoding a [`Value`] as an object type and body (drawn in `super`), in the encodings
//! redis-server 7.0 writes for it with the thresholds of [`Encodings`]: a string with the
//! integer encoding where Redis uses it, a list as a quicklist 2 of listpacks, a set as an
//! intset or a plain set, a sorted set or a hash as a listpack or plain, a stream as type 19.
//! Strings past 20 bytes are LZF-compressed when that saves four bytes, as Redis writes them
//! (with this server's own matcher, so not always the same bytes).

use super::listpack::Writer as Listpack;
use super::{intset, lzf, types, Encodings, StreamNode, StreamValue, Value};
use crate::types::number::parse_int_strict;
use crate::types::stream::StreamId;
use std::collections::HashMap;

/// Appends a length.
pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push((n & 0xff) as u8);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends a string: an integer of 32 bits or less in canonical form in its integer
/// encoding (as Redis writes one), else, past 20 bytes, LZF-compressed when that saves four
/// bytes or more (as Redis writes one), else its length and bytes.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = parse_int_strict(s) {
            if let Ok(b) = i8::try_from(v) {
                out.push(0xc0);
                out.push(b as u8);
                return;
            }
            if let Ok(h) = i16::try_from(v) {
                out.push(0xc1);
                out.extend_from_slice(&h.to_le_bytes());
                return;
            }
            if let Ok(w) = i32::try_from(v) {
                out.push(0xc2);
                out.extend_from_slice(&w.to_le_bytes());
                return;
            }
        }
    }
    if s.len() > 20 {
        if let Some(c) = lzf::compress(s, s.len() - 4) {
            out.push(0xc3);
            put_len(out, c.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A score as text in a listpack: an integral value as an integer's text (a listpack
/// integer then, as Redis writes it), `inf`, `-inf`, `-0`, else the shortest text that reads
/// back as the same double (Redis reads any `strtod` form).
fn score_text(s: f64) -> Vec<u8> {
    let text = if s.is_infinite() {
        if s > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        }
    } else if s == 0.0 {
        if s.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        }
    } else if s.fract() == 0.0 && s.abs() < (i64::MAX / 2) as f64 {
        (s as i64).to_string()
    } else if (1e-4..1e15).contains(&s.abs()) {
        format!("{s}")
    } else {
        format!("{s:e}")
    };
    text.into_bytes()
}

/// Whether a list node is full for one more element of `next` bytes.
fn node_full(lp: &Listpack, next: usize, limit: i64) -> bool {
    if lp.count() == 0 {
        return false;
    }
    if limit > 0 {
        return lp.count() as i64 >= limit || lp.bytes() + next > 8192;
    }
    let bytes = match limit {
        -1 => 4096,
        -3 => 16384,
        -4 => 32768,
        l if l <= -5 => 65536,
        _ => 8192,
    };
    lp.bytes() + next + 11 > bytes
}

/// The object type and body of `v`.
pub fn encode(v: &Value, enc: &Encodings) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        Value::String(s) => {
            out.push(types::STRING);
            put_string(&mut out, s);
        }
        Value::List(items) => {
            let mut nodes = Vec::new();
            let mut lp = Listpack::new();
            for e in items {
                if node_full(&lp, e.len(), enc.list_max_listpack_size) {
                    nodes.push(std::mem::take(&mut lp).finish());
                }
                lp.push(e);
            }
            if lp.count() > 0 {
                nodes.push(lp.finish());
            }
            out.push(types::LIST_QUICKLIST_2);
            put_len(&mut out, nodes.len() as u64);
            for n in &nodes {
                put_len(&mut out, 2);
                put_string(&mut out, n);
            }
        }
        Value::Set(members) => {
            let ints: Option<Vec<i64>> = members.iter().map(|m| parse_int_strict(m)).collect();
            match ints {
                Some(mut ints) if ints.len() as u64 <= enc.set_max_intset_entries => {
                    ints.sort_unstable();
                    ints.dedup();
                    out.push(types::SET_INTSET);
                    put_string(&mut out, &intset::encode(&ints));
                }
                _ => {
                    out.push(types::SET);
                    put_len(&mut out, members.len() as u64);
                    for m in members {
                        put_string(&mut out, m);
                    }
                }
            }
        }
        Value::ZSet(pairs) => {
            let mut sorted: Vec<&(Vec<u8>, f64)> = pairs.iter().collect();
            sorted.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let small = pairs.len() as u64 <= enc.zset_max_listpack_entries
                && pairs.iter().all(|(m, _)| m.len() as u64 <= enc.zset_max_listpack_value);
            if small {
                let mut lp = Listpack::new();
                for (m, s) in sorted {
                    lp.push(m);
                    lp.push(&score_text(*s));
                }
                out.push(types::ZSET_LISTPACK);
                put_string(&mut out, &lp.finish());
            } else {
                // Greatest first, as Redis writes a skiplist.
                out.push(types::ZSET_2);
                put_len(&mut out, pairs.len() as u64);
                for (m, s) in sorted.into_iter().rev() {
                    put_string(&mut out, m);
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
        }
        Value::Hash(pairs) => {
            let small = pairs.len() as u64 <= enc.hash_max_listpack_entries
                && pairs
                    .iter()
                    .all(|(f, v)| f.len().max(v.len()) as u64 <= enc.hash_max_listpack_value);
            if small {
                let mut lp = Listpack::new();
                for (f, v) in pairs {
                    lp.push(f);
                    lp.push(v);
                }
                out.push(types::HASH_LISTPACK);
                put_string(&mut out, &lp.finish());
            } else {
                out.push(types::HASH);
                put_len(&mut out, pairs.len() as u64);
                for (f, v) in pairs {
                    put_string(&mut out, f);
                    put_string(&mut out, v);
                }
            }
        }
        Value::Stream(s) => {
            out.push(types::STREAM_LISTPACKS_2);
            put_stream(&mut out, s);
        }
    }
    out
}

/// A stream node's listpack: its master entry (live count, no deleted entries, the master
/// fields), then each live entry.
fn node_listpack(n: &StreamNode) -> Vec<u8> {
    let mut lp = Listpack::new();
    lp.push_int(n.entries.len() as i64);
    lp.push_int(0);
    lp.push_int(n.master_fields.len() as i64);
    for f in &n.master_fields {
        lp.push(f);
    }
    lp.push_int(0);
    for e in &n.entries {
        let fields = e.pairs.iter().step_by(2);
        let same = e.pairs.len() / 2 == n.master_fields.len()
            && fields.zip(&n.master_fields).all(|(a, b)| a == b);
        lp.push_int(if same { 2 } else { 0 });
        lp.push_int(e.id.ms.wrapping_sub(n.master.ms) as i64);
        lp.push_int(e.id.seq.wrapping_sub(n.master.seq) as i64);
        if same {
            for v in e.pairs.iter().skip(1).step_by(2) {
                lp.push(v);
            }
            lp.push_int(n.master_fields.len() as i64 + 3);
        } else {
            let k = e.pairs.len() / 2;
            lp.push_int(k as i64);
            for p in &e.pairs[..2 * k] {
                lp.push(p);
            }
            lp.push_int(2 * k as i64 + 4);
        }
    }
    lp.finish()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

fn put_stream(out: &mut Vec<u8>, s: &StreamValue) {
    let nodes: Vec<&StreamNode> = s.nodes.iter().filter(|n| !n.entries.is_empty()).collect();
    put_len(out, nodes.len() as u64);
    for n in nodes {
        put_string(out, &n.master.to_be_bytes());
        put_string(out, &node_listpack(n));
    }
    put_len(out, s.length);
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for g in &s.groups {
        put_string(out, &g.name);
        put_id(out, g.last_id);
        put_len(out, g.entries_read.map_or(u64::MAX, |v| v as u64));
        put_len(out, g.pending.len() as u64);
        for p in &g.pending {
            out.extend_from_slice(&p.id.to_be_bytes());
            out.extend_from_slice(&p.delivery_ms.to_le_bytes());
            put_len(out, p.deliveries);
        }
        let mut owned: HashMap<&[u8], Vec<StreamId>> = HashMap::new();
        for p in &g.pending {
            owned.entry(&p.consumer).or_default().push(p.id);
        }
        put_len(out, g.consumers.len() as u64);
        for c in &g.consumers {
            put_string(out, &c.name);
            out.extend_from_slice(&c.seen_ms.to_le_bytes());
            let own = owned.get(c.name.as_slice()).map_or(&[][..], Vec::as_slice);
            put_len(out, own.len() as u64);
            for id in own {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}
