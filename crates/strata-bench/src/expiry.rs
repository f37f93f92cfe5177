//! timeseries' expiry (`docs/db_bench.md` §5.5): the write counter a run shares with the
//! engines' compaction filters, and when an entry is expired by it. Apart from the
//! benchmark (`runner/timeseries.rs`) so the configuration and the engines need not reach
//! into the runner.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The write counter of one timeseries run: each put takes its value as the entry's
/// timestamp and raises it by one.
pub type Clock = Arc<AtomicU64>;

/// Writes timestamp `ts` into `key`, as [`expired`] reads it: its low bytes big-endian into
/// bytes 8..16 (fewer for a shorter key).
pub fn stamp(key: &mut [u8], ts: u64) {
    let start = key.len().min(8);
    let fill = (key.len() - start).min(8);
    for (i, b) in key[start..start + fill].iter_mut().enumerate() {
        *b = (ts >> ((fill - i - 1) * 8)) as u8;
    }
}

/// Whether the entry `key` is expired at `now` (the counter's value): its timestamp, bytes
/// 8..16 of the key big-endian (fewer for a shorter key, none for 8 bytes), is more than
/// `time_range` behind.
pub fn expired(now: u64, key: &[u8], time_range: u64) -> bool {
    let stamp = key.get(8..key.len().min(16)).unwrap_or(&[]);
    let ts = stamp.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    now.wrapping_sub(ts) > time_range
}

#[cfg(test)]
mod tests {
    use super::{expired, stamp};

    #[test]
    fn an_entry_expires_once_the_counter_is_more_than_the_range_past_it() {
        let mut key = vec![0u8; 16];
        key[8..16].copy_from_slice(&1000u64.to_be_bytes());
        assert!(!expired(1100, &key, 100));
        assert!(expired(1101, &key, 100));
        // Keys shorter than 16 bytes hold the timestamp's low bytes.
        let short = [0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xE8];
        assert!(!expired(1100, &short, 100) && expired(1101, &short, 100));
        // A key of 8 bytes holds no timestamp: 0.
        assert!(expired(101, &[7u8; 8], 100));
        // What `stamp` writes is what `expired` reads, whatever the key's length.
        for len in [8, 10, 16, 24] {
            let mut key = vec![0xAAu8; len];
            stamp(&mut key, 1000);
            assert_eq!(&key[..8], &[0xAA; 8]);
            // 1000 fits in the two bytes of the shortest key that holds any: an 8-byte key
            // holds none (timestamp 0).
            let held = if len == 8 { 0 } else { 1000 };
            assert!(!expired(held + 100, &key, 100), "{len}");
            assert!(expired(held + 101, &key, 100), "{len}");
        }
    }
}
