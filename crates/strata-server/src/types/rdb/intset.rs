//! Intsets: a small set of integers as Redis keeps it, sorted, every member in the width
//! of the widest.
//!
//! ```text
//!  +----------------+--------------+---------------------------------+
//!  | encoding u32LE | length u32LE | members, ascending, LE integers |
//!  +----------------+--------------+---------------------------------+
//!  encoding: the bytes per member, 2, 4 or 8
//! ```

use super::BadData;

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x))
}

/// Decodes an intset: its members, which must be at least one, strictly ascending, and fill
/// the blob exactly.
pub fn decode(b: &[u8]) -> Result<Vec<i64>, BadData> {
    let bad = BadData("intset");
    if b.len() < 8 {
        return Err(bad);
    }
    let width = le(&b[..4]) as usize;
    let count = le(&b[4..8]) as usize;
    if !matches!(width, 2 | 4 | 8) || count == 0 || count.checked_mul(width) != Some(b.len() - 8) {
        return Err(bad);
    }
    let bits = (width * 8) as u32;
    let mut out: Vec<i64> = Vec::with_capacity(count);
    for chunk in b[8..].chunks_exact(width) {
        let shift = 64 - bits;
        let v = ((le(chunk) << shift) as i64) >> shift;
        if out.last().is_some_and(|&p| p >= v) {
            return Err(bad);
        }
        out.push(v);
    }
    Ok(out)
}

/// The intset of `members` (strictly ascending), in the narrowest width that holds them.
pub fn encode(members: &[i64]) -> Vec<u8> {
    let width: usize = if members.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if members.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + members.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for v in members {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_each_width() {
        for set in [vec![-3, 0, 7], vec![-70000, 1], vec![i64::MIN, 0, i64::MAX]] {
            let b = encode(&set);
            assert_eq!(decode(&b).unwrap(), set);
            for cut in 0..b.len() {
                assert!(decode(&b[..cut]).is_err());
            }
        }
        assert_eq!(encode(&[1, 2])[..4], 2u32.to_le_bytes());
        assert_eq!(encode(&[1, 40000])[..4], 4u32.to_le_bytes());
    }

    #[test]
    fn disorder_duplicates_and_bad_widths_are_refused() {
        assert!(decode(&encode(&[2, 1])).is_err());
        assert!(decode(&encode(&[1, 1])).is_err());
        let mut b = encode(&[1, 2]);
        b[0] = 3;
        assert!(decode(&b).is_err());
        assert!(decode(&encode(&[])).is_err());
    }
}
