//! Checksums: CRC32C (masked where stored next to data it may be computed over again, as in the
//! WAL) and XXH3 (truncated to 32 bits). The checksum kind stored in an SST footer selects one.

/// Which function protects a block. on-disk: never change the tag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum ChecksumType {
    /// CRC32C (Castagnoli), hardware-accelerated on x86-64 and aarch64.
    #[default]
    Crc32c = 1,
    /// Low 32 bits of XXH3-64.
    Xxh3 = 2,
}

impl ChecksumType {
    /// The checksum type with on-disk tag `b`, if known.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(ChecksumType::Crc32c),
            2 => Some(ChecksumType::Xxh3),
            _ => None,
        }
    }

    /// Checksum of `data` followed by `extra` (the block's compression-type byte).
    #[inline]
    pub fn compute(self, data: &[u8], extra: &[u8]) -> u32 {
        match self {
            ChecksumType::Crc32c => crc32c::crc32c_append(crc32c::crc32c(data), extra),
            ChecksumType::Xxh3 => {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                h.update(data);
                h.update(extra);
                h.digest() as u32
            }
        }
    }
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC so that a CRC over data containing CRCs does not degenerate.
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
#[cfg(test)]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_roundtrip() {
        for v in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(v)), v);
            assert_ne!(mask_crc(v), v);
        }
    }

    #[test]
    fn known_crc32c_vector() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c::crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(
            crc32c::crc32c_append(crc32c::crc32c(b"1234"), b"56789"),
            crc32c::crc32c(b"123456789")
        );
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn checksum_types_differ_and_cover_extra() {
        let a = ChecksumType::Crc32c.compute(b"abc", &[1]);
        let b = ChecksumType::Crc32c.compute(b"abc", &[2]);
        assert_ne!(a, b);
        let x = ChecksumType::Xxh3.compute(b"abc", &[1]);
        assert_ne!(x, ChecksumType::Xxh3.compute(b"abc", &[2]));
    }
}
