//! The checksum of Redis's serialized values: CRC-64 with Jones' polynomial
//! (0xad93d23594c935a9), bit-reflected, initial value 0 and no final xor — the variant
//! redis-server computes over a DUMP payload. Check value: `crc64(b"123456789")` is
//! 0xe9c6d914c4b8d9ca.

/// The polynomial with its bits reversed, for the least-significant-bit-first loop.
const REFLECTED_POLY: u64 = 0x95ac_9329_ac4b_c9b5;

/// One step of the byte-wise table: the CRC of each byte value.
static TABLE: [u64; 256] = table();

const fn table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ REFLECTED_POLY } else { c >> 1 };
            bit += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// The CRC-64 of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    update(0, bytes)
}

/// The CRC-64 of the bytes `crc` was computed over followed by `bytes`: a checksum computed a
/// piece at a time (an RDB file's, as it streams) equals the one of all the pieces at once.
pub fn update(crc: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(crc, |crc, &b| TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_of_the_jones_variant() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(crc64(b""), 0);
    }

    #[test]
    fn pieces_give_the_checksum_of_the_whole() {
        let data = b"REDIS0010 and some bytes after the header";
        for cut in 0..=data.len() {
            assert_eq!(update(update(0, &data[..cut]), &data[cut..]), crc64(data), "cut {cut}");
        }
    }
}
