//! Keys and self-checking values.
//!
//! The key space is `0..keys`. A key whose index is `3 mod 4` is a *counter*: it takes merges
//! with the `uint64add` operator, puts of an 8-byte base and deletes. Every other key is a
//! *value* key: puts and deletes.
//!
//! A value written to value key `i` at version `v` names both and carries a checksum:
//!
//! ```text
//! 'S' | key index u32 LE | version u64 LE | pad_len u16 LE | pad (pad_len bytes) | crc32c u32 LE
//! ```
//!
//! so a value read back is either recognised exactly (key and version) or is garbage. A
//! counter's operand for version `v` is a 64-bit hash of `(i, v)`, so the counter's value
//! identifies which operands were applied.

/// The column an entity put carries beside its default column (the payload): the put's
/// version, u64 LE (`workload::WorkloadConfig::entity_ratio`).
pub const VERSION_COLUMN: &[u8] = b"version";

/// Whether a key takes merges.
pub fn is_counter(i: u32) -> bool {
    i % 4 == 3
}

/// The key bytes of index `i`.
pub fn key(i: u32) -> Vec<u8> {
    let p = if is_counter(i) { 'c' } else { 'k' };
    format!("{p}{i:08}").into_bytes()
}

/// The key index of `key`, if it is one of ours.
pub fn parse_key(key: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(key).ok()?;
    let (p, n) = s.split_at_checked(1)?;
    let i: u32 = n.parse().ok()?;
    (n.len() == 8 && p == if is_counter(i) { "c" } else { "k" }).then_some(i)
}

/// SplitMix64: a well-mixed hash of one word.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn seed_of(i: u32, version: u64) -> u64 {
    mix((u64::from(i) << 40) ^ version ^ 0x5354_5241_5441)
}

/// The value of value key `i` at `version`. Most are short; a few are a few KiB, to span WAL
/// blocks and data blocks.
pub fn value(i: u32, version: u64) -> Vec<u8> {
    let h = seed_of(i, version);
    let pad_len = match h % 64 {
        0 => 2000 + (h >> 8) % 6000,
        1..=8 => 100 + (h >> 8) % 400,
        _ => (h >> 8) % 48,
    } as usize;
    let mut v = Vec::with_capacity(19 + pad_len);
    v.push(b'S');
    v.extend_from_slice(&i.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    v.extend_from_slice(&(pad_len as u16).to_le_bytes());
    let mut s = h;
    for _ in 0..pad_len {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.push(b'a' + ((s >> 59) as u8 % 26));
    }
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// Decodes a value key's value into `(key index, version)`; `Err` describes the damage.
pub fn decode_value(v: &[u8]) -> Result<(u32, u64), String> {
    if v.len() < 19 {
        return Err(format!("{} bytes, too short for a stress value", v.len()));
    }
    let (body, crc) = v.split_at(v.len() - 4);
    let crc = u32::from_le_bytes(crc.try_into().unwrap_or_default());
    if crc32c::crc32c(body) != crc {
        return Err("checksum of the value does not match".into());
    }
    if body[0] != b'S' {
        return Err("bad value tag".into());
    }
    let i = u32::from_le_bytes(body[1..5].try_into().unwrap_or_default());
    let version = u64::from_le_bytes(body[5..13].try_into().unwrap_or_default());
    let pad = u16::from_le_bytes(body[13..15].try_into().unwrap_or_default()) as usize;
    if 15 + pad != body.len() {
        return Err("padding length does not match".into());
    }
    if value(i, version) != v {
        return Err(format!("not the value of key {i} version {version}"));
    }
    Ok((i, version))
}

/// A *dead value* of value key `i`: a put the harness makes in place of a delete, read as
/// absent. The crash loops' compaction filter (`crate::stress_filter`) removes dead values, so
/// flushes and compactions turn such puts into deletions; with or without the filter having
/// run, the key reads as deleted.
///
/// ```text
/// 'D' | key index u32 LE | crc32c u32 LE (of the first 5 bytes)
/// ```
pub fn dead_value(i: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(9);
    v.push(b'D');
    v.extend_from_slice(&i.to_le_bytes());
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// The key index of a dead value, if `v` is one.
pub fn decode_dead_value(v: &[u8]) -> Option<u32> {
    if v.len() != 9 || v[0] != b'D' {
        return None;
    }
    let i = u32::from_le_bytes(v[1..5].try_into().ok()?);
    (dead_value(i) == v).then_some(i)
}

/// The operand a merge (or the base a put) of counter key `i` at `version` carries.
pub fn operand(i: u32, version: u64) -> u64 {
    seed_of(i, version) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_roundtrip_and_detect_damage() {
        for i in [0u32, 1, 2, 5, 1000] {
            for ver in [1u64, 2, 77, 1 << 40] {
                let v = value(i, ver);
                assert_eq!(decode_value(&v), Ok((i, ver)));
                let mut bad = v.clone();
                bad[v.len() / 2] ^= 4;
                assert!(decode_value(&bad).is_err());
                assert!(decode_value(&v[..v.len() - 1]).is_err());
            }
        }
        assert_eq!(parse_key(&key(7)), Some(7));
        assert_eq!(parse_key(&key(8)), Some(8));
        assert_eq!(parse_key(b"c00000008"), None);
        assert_ne!(operand(3, 1), operand(3, 2));
        assert_eq!(decode_dead_value(&dead_value(6)), Some(6));
        assert_eq!(decode_dead_value(&value(6, 1)), None);
        let mut bad = dead_value(6);
        bad[2] ^= 1;
        assert_eq!(decode_dead_value(&bad), None);
    }
}
