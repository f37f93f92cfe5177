//! HyperLogLog: PFADD, PFCOUNT, PFMERGE and PFDEBUG over string values in Redis's own HLL
//! layout, so that its bytes (GET, SET, DUMP, RESTORE) and its counts are redis-server's.
//! Mirrored in `docs/format/hll.md`.
//!
//! ```text
//! value   = "HYLL" | encoding u8 | 0 0 0 | count u64 LE | registers
//!           encoding: 0 dense, 1 sparse; count: the cached cardinality, stale when the top
//!           bit of its last byte (byte 15) is set
//! dense   : 16,384 registers of 6 bits, 12,288 bytes; register i is bits 6i..6i+5 of the
//!           registers read as one little-endian bit string (low bit of each byte first)
//! sparse  : opcodes, in register order, covering all 16,384 registers:
//!           00xxxxxx            ZERO:  xxxxxx + 1 (1-64) registers at 0
//!           01xxxxxx yyyyyyyy   XZERO: xxxxxxyyyyyyyy + 1 (1-16,384) registers at 0
//!           1vvvvvxx            VAL:   xx + 1 (1-4) registers at vvvvv + 1 (1-32)
//! ```
//!
//! A value is checked before each use as Redis checks it: a string too short, without the
//! magic, of another encoding or a dense one of the wrong length is "not a valid HyperLogLog
//! string value" (WRONGTYPE); sparse opcodes that do not cover the registers exactly are a
//! corrupt object (INVALIDOBJ). Every change keeps the key's expiry.
//!
//! Sparse values are rewritten in their shortest form after a change (`sparse`); they turn
//! dense when a register passes 32 or the value passes `hll-sparse-max-bytes`.

pub mod delta;
pub mod estimate;
pub mod sparse;
pub mod value;

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Meta};
use super::notify::STRING;
use crate::storage::LAYOUT_REGISTER_DELTAS;
use strata::WriteBatch;
pub use value::{Encoding, Hll, HllError};

/// Redis's default `hll-sparse-max-bytes`.
pub const DEFAULT_SPARSE_MAX: usize = 3000;

/// The HyperLogLog at `key` and the key's expiry; `None` when absent.
fn load(ks: &Keyspace, key: &[u8]) -> Result<Option<(Hll, u64)>> {
    let Some(m) = ks.typed(key, Kind::String)? else {
        return Ok(None);
    };
    Ok(Some((Hll::parse(m.value.to_vec())?, m.expire_ms)))
}

/// Writes `h` at `key`, expiring at `expire_ms`: as a register delta of `edits` (`delta`)
/// when `h` was dense before the change and the delta is at most half the value, else whole.
fn store(
    ks: &Keyspace,
    key: &[u8],
    h: Hll,
    expire_ms: u64,
    was_dense: bool,
    edits: &[delta::Edit],
) -> Result<()> {
    let raw = Meta::encode_string(&h.into_bytes(), expire_ms);
    let mut b = WriteBatch::with_capacity_bytes(key.len() + raw.len() + 64);
    let small = was_dense && !edits.is_empty() && delta::encoded_len(edits) * 2 <= raw.len();
    let whole = if small {
        ks.store.merge_meta(&mut b, key, LAYOUT_REGISTER_DELTAS, raw, || delta::encode(edits)).err()
    } else {
        Some(raw)
    };
    if let Some(raw) = whole {
        ks.store.put_meta(&mut b, key, raw);
    }
    ks.write(b)
}

/// PFADD: adds `elements` to the HyperLogLog at `key` (absent: a new empty one, which counts
/// as a change); whether it changed. Raises `pfadd` on a change.
pub fn add(ks: &Keyspace, key: &[u8], elements: &[Vec<u8>], sparse_max: usize) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut h, expire_ms, created) = match load(ks, key)? {
        Some((h, at)) => (h, at, false),
        None => (Hll::empty(), 0, true),
    };
    let was_dense = h.encoding() == Encoding::Dense;
    let raised = h.add(elements, sparse_max)?;
    let mut changed = !raised.is_empty();
    if created && !changed {
        // A new one is a change; its cached count is stale like any changed one's.
        h.mark_stale();
        changed = true;
    }
    if changed {
        let edits: Vec<delta::Edit> =
            raised.iter().map(|&(i, v)| delta::Edit::Raise(i as u16, v)).collect();
        store(ks, key, h, expire_ms, was_dense, &edits)?;
        ks.notify_new(created, key);
        ks.notify(STRING, "pfadd", key);
    }
    Ok(changed)
}

/// PFCOUNT of one key: its cached count, or the estimate, which is then cached in the value
/// (a write, as in Redis) unless `cache` is off (a replicated store, where a read must not
/// propose a write). 0 for an absent key.
pub fn count(ks: &Keyspace, key: &[u8], cache: bool) -> Result<u64> {
    let _g = ks.store.locks.lock(&[key]);
    let Some((mut h, expire_ms)) = load(ks, key)? else {
        return Ok(0);
    };
    if let Some(n) = h.cached_count() {
        return Ok(n);
    }
    let n = h.count()?;
    if cache {
        h.set_cached_count(n);
        let dense = h.encoding() == Encoding::Dense;
        store(ks, key, h, expire_ms, dense, &[delta::Edit::Count(n)])?;
    }
    Ok(n)
}

/// The registers of the union of the HyperLogLogs at `keys` (absent keys are empty), and
/// whether one of them is dense.
fn union(ks: &Keyspace, keys: &[Vec<u8>]) -> Result<(Vec<u8>, bool)> {
    let mut max = vec![0u8; estimate::REGISTERS];
    let mut dense = false;
    for k in keys {
        if let Some((h, _)) = load(ks, k)? {
            dense |= h.encoding() == Encoding::Dense;
            h.merge_into(&mut max)?;
        }
    }
    Ok((max, dense))
}

/// PFCOUNT of several keys: the estimated cardinality of their union (nothing is cached).
pub fn count_union(ks: &Keyspace, keys: &[Vec<u8>]) -> Result<u64> {
    let (max, _) = union(ks, keys)?;
    Ok(estimate::count_registers(&max))
}

/// PFMERGE: stores the union of `dst` and `sources` at `dst` (dense if one of them is),
/// keeping `dst`'s expiry. Raises `pfadd`.
pub fn merge(ks: &Keyspace, dst: &[u8], sources: &[Vec<u8>], sparse_max: usize) -> Result<()> {
    let mut keys: Vec<Vec<u8>> = vec![dst.to_vec()];
    keys.extend(sources.iter().cloned());
    let locked: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let _g = ks.store.locks.lock(&locked);
    let (max, dense) = union(ks, &keys)?;
    let (mut h, expire_ms, created) = match load(ks, dst)? {
        Some((h, at)) => (h, at, false),
        None => (Hll::empty(), 0, true),
    };
    h.set_registers(&max, dense, sparse_max);
    store(ks, dst, h, expire_ms, false, &[])?;
    ks.notify_new(created, dst);
    ks.notify(STRING, "pfadd", dst);
    Ok(())
}

/// The HyperLogLog at `key` for PFDEBUG, with its expiry: [`TypeError::NoSuchKey`] when
/// absent.
fn debug_load(ks: &Keyspace, key: &[u8]) -> Result<(Hll, u64)> {
    load(ks, key)?.ok_or(TypeError::NoSuchKey)
}

/// PFDEBUG GETREG: the registers, after turning a sparse value dense (stored, as Redis
/// does).
pub fn debug_registers(ks: &Keyspace, key: &[u8], sparse_max: usize) -> Result<Vec<u8>> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut h, expire_ms) = debug_load(ks, key)?;
    let regs = h.registers()?;
    if h.make_dense(sparse_max)? {
        store(ks, key, h, expire_ms, false, &[])?;
    }
    Ok(regs)
}

/// PFDEBUG TODENSE: turns a sparse value dense; whether it was sparse.
pub fn debug_to_dense(ks: &Keyspace, key: &[u8], sparse_max: usize) -> Result<bool> {
    let _g = ks.store.locks.lock(&[key]);
    let (mut h, expire_ms) = debug_load(ks, key)?;
    let converted = h.make_dense(sparse_max)?;
    if converted {
        store(ks, key, h, expire_ms, false, &[])?;
    }
    Ok(converted)
}

/// PFDEBUG ENCODING and DECODE: the value as it is.
pub fn debug_value(ks: &Keyspace, key: &[u8]) -> Result<Hll> {
    Ok(debug_load(ks, key)?.0)
}
