//! Redis Cluster's key slots: every key hashes to one of [`SLOTS`] slots, the CRC16 (XMODEM:
//! polynomial 0x1021, initial value 0, no reflection) of the key modulo 16384, or of its hash
//! tag, so that keys sharing a tag share a slot and multi-key commands on them can run on one
//! node. The hash tag is the part between the first `{` and the first `}` after it, when
//! that part is not empty (`{user1000}.following`); otherwise the whole key is hashed.
//!
//! This is the function every Redis Cluster client computes to route a key, so it must agree
//! with theirs bit for bit (the tests hold the specification's vectors).

/// The number of slots.
pub const SLOTS: u16 = 16384;

/// CRC16-XMODEM's table, one entry per byte value.
const TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

/// CRC16-XMODEM of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)])
}

/// The part of `key` that is hashed: its hash tag if it has a non-empty one, else all of it.
pub fn hash_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

/// The slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_part(key)) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM, and the Redis Cluster specification's example.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn slots_agree_with_redis() {
        // Values `CLUSTER KEYSLOT` gives on redis-server.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"hello"), 866);
        assert_eq!(key_slot(b""), 0);
        assert_eq!(key_slot(b"123456789"), 0x31C3 % SLOTS);
    }

    #[test]
    fn hash_tags_follow_the_specification() {
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // Only the first `{` and the first `}` after it count.
        assert_eq!(hash_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_part(b"foo{bar}{zap}"), b"bar");
        // An empty tag, or no closing brace: the whole key.
        assert_eq!(hash_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_part(b"foo{bar"), b"foo{bar");
        assert_eq!(hash_part(b"{}"), b"{}");
        assert_eq!(hash_part(b"}{x}"), b"x");
    }

    #[test]
    fn every_slot_is_below_the_count() {
        for i in 0..10_000u32 {
            assert!(key_slot(format!("key:{i}").as_bytes()) < SLOTS);
        }
    }
}
