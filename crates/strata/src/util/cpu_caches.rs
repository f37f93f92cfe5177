//! The size of the CPU's last-level cache, which decides whether blocks taken from the block
//! cache are likely still in the CPU's caches (`cache/block_cache.rs`, `BlockCache::
//! blocks_cold`).
//!
//! Read once from Linux's `sysfs` (`/sys/devices/system/cpu/cpu0/cache/index*/`): the size of
//! the highest-level data or unified cache. Elsewhere, or when it cannot be read, a common
//! server's 32 MiB: the answer only steers prefetch hints.

use std::sync::OnceLock;

/// What [`last_level_bytes`] answers when the OS does not tell.
const ASSUMED_BYTES: usize = 32 << 20;

/// Bytes of the CPU's last-level cache (one of them, on a machine with several).
pub fn last_level_bytes() -> usize {
    static BYTES: OnceLock<usize> = OnceLock::new();
    *BYTES.get_or_init(|| read_sysfs().unwrap_or(ASSUMED_BYTES))
}

fn read_sysfs() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, usize)> = None;
    for entry in dir.flatten() {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let Some(kind) = read("type") else { continue };
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(size.trim())) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size).filter(|&s| s > 0)
}

/// `sysfs`'s cache size: a number with an optional `K`, `M` or `G` suffix (`32768K`).
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: usize = digits.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_sysfs_writes_them() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
    }

    #[test]
    fn some_size_is_always_answered() {
        assert!(last_level_bytes() > 0);
    }
}
