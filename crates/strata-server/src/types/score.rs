//! Order-preserving encoding of sorted-set scores, and the score-index entries in the
//! `zscore` column family.
//!
//! ```text
//!  score index key:  subkey::prefix(f, key, version) | score 8 bytes | member    value: empty
//!                    (the prefix starts with the key's lead: `super::subkey`)
//!  score bytes:      f = the f64's bits (-0.0 stored as +0.0)
//!                    f >= 0: f | 1<<63        f < 0: !f        written big-endian
//! ```
//!
//! Byte order of the encoded scores equals numeric order of the floats (NaN is never stored),
//! so a scan of the index walks members by (score, member), as ZRANGE wants.

use super::subkey;
use crate::filing::Filing;

/// Encodes `score` so that bytewise order equals numeric order.
pub fn encode_score(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let enc = if bits >> 63 == 0 { bits | (1 << 63) } else { !bits };
    enc.to_be_bytes()
}

/// Inverse of [`encode_score`].
pub fn decode_score(b: [u8; 8]) -> f64 {
    let enc = u64::from_be_bytes(b);
    let bits = if enc >> 63 == 1 { enc & !(1 << 63) } else { !enc };
    f64::from_bits(bits)
}

/// The score-index key of (`score`, `member`) of `key` at `version`, filed as `f` files.
pub fn index_key(f: Filing, key: &[u8], version: u64, score: f64, member: &[u8]) -> Vec<u8> {
    let mut out = subkey::prefix_with_room(f, key, version, 8 + member.len());
    out.extend_from_slice(&encode_score(score));
    out.extend_from_slice(member);
    out
}

/// Splits the part of an index key after the prefix into (score, member).
pub fn split_index_suffix(rest: &[u8]) -> Option<(f64, &[u8])> {
    let s: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    Some((decode_score(s), &rest[8..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_order() {
        let xs = [f64::NEG_INFINITY, -1e300, -1.5, -0.0, 0.0, 1e-300, 1.0, 2.5, f64::INFINITY];
        for w in xs.windows(2) {
            assert!(encode_score(w[0]) <= encode_score(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(encode_score(-0.0), encode_score(0.0));
    }

    proptest! {
        #[test]
        fn order_preserving(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            prop_assert_eq!(a.partial_cmp(&b).map(|o| o != std::cmp::Ordering::Greater),
                Some(encode_score(a) <= encode_score(b)));
            let back = decode_score(encode_score(a));
            prop_assert!(back.to_bits() == a.to_bits() || (a.to_bits() == (-0.0f64).to_bits() && back.to_bits() == 0));
        }
    }
}
