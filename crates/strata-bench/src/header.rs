//! The environment block (stderr) and the header (stdout), `docs/db_bench.md` §8.2, and time
//! formatting.

use std::fmt::Write as _;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::values::ValueSize;

fn utc(t: SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(t)
}

/// `ctime` layout without the newline: `Sat Nov 21 05:01:03 2026` (UTC).
pub fn ctime(t: SystemTime) -> String {
    utc(t).format("%a %b %e %H:%M:%S %Y").to_string()
}

/// `2026/11/21-04:55:59 ` (with the trailing space), for interval lines.
pub fn time_to_string(t: SystemTime) -> String {
    utc(t).format("%Y/%m/%d-%H:%M:%S ").to_string()
}

/// `20261121-045559`, for output directory names.
pub fn timestamp_compact(t: SystemTime) -> String {
    utc(t).format("%Y%m%d-%H%M%S").to_string()
}

fn cpu_info() -> (usize, String, String) {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut count = 0;
    let mut model = String::new();
    let mut cache = String::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        match k.trim() {
            "model name" => {
                count += 1;
                model = v.trim().to_string();
            }
            "cache size" => cache = v.trim().to_string(),
            _ => {}
        }
    }
    (count, model, cache)
}

/// The environment block (stderr).
pub fn environment(cfg: &Config) -> String {
    let (n, model, cache) = cpu_info();
    let mut s = String::new();
    s.push_str(&cfg.engine.version_line());
    s.push('\n');
    let _ = writeln!(s, "Date:       {}", ctime(SystemTime::now()));
    let _ = writeln!(s, "CPU:        {n} * {model}");
    let _ = writeln!(s, "CPUCache:   {cache}");
    s
}

/// The header block (stdout), ending with 48 dashes.
pub fn header(cfg: &Config) -> String {
    let f = &cfg.flags;
    let ratio = f.compression_ratio;
    let mut s = String::new();
    let _ = writeln!(s, "Keys:       {} bytes each (+ 0 bytes user-defined timestamp)", f.key_size);
    let avg = cfg.value_size.average();
    let after = (avg as f64 * ratio + 0.5) as i64;
    match cfg.value_size {
        ValueSize::Fixed(n) => {
            let _ = writeln!(s, "Values:     {n} bytes each ({after} bytes after compression)");
        }
        ValueSize::Uniform { min, max } | ValueSize::Normal { min, max } => {
            let _ =
                writeln!(s, "Values:     {avg} avg bytes each ({after} bytes after compression)");
            let _ = writeln!(
                s,
                "Values Distribution: {} (min: {min}, max: {max})",
                f.value_size_distribution_type
            );
        }
    }
    let num = cfg.num as f64;
    let _ = writeln!(s, "Entries:    {}", cfg.num);
    let _ = writeln!(s, "Prefix:    {} bytes", f.prefix_size);
    let _ = writeln!(s, "Keys per prefix:    {}", f.keys_per_prefix);
    let _ = writeln!(
        s,
        "RawSize:    {:.1} MB (estimated)",
        (f.key_size as f64 + avg as f64) * num / 1048576.0
    );
    let _ = writeln!(
        s,
        "FileSize:   {:.1} MB (estimated)",
        (f.key_size as f64 + avg as f64 * ratio) * num / 1048576.0
    );
    let _ = writeln!(s, "Write rate: {} bytes/second", f.benchmark_write_rate_limit);
    let _ = writeln!(s, "Read rate: {} ops/second", f.benchmark_read_rate_limit);
    let _ = writeln!(s, "Compression: {}", cfg.compression.header_name());
    s.push_str("Compression sampling rate: 0\n");
    let _ = writeln!(s, "Memtablerep: {}", memtablerep(cfg));
    let _ = writeln!(s, "Perf Level: {}", f.perf_level);
    let _ = writeln!(s, "Engine:     {}", cfg.engine.name());
    if cfg!(debug_assertions) {
        s.push_str("WARNING: Optimization is disabled: benchmarks unnecessarily slow\n");
    }
    s.push_str(&"-".repeat(48));
    s.push('\n');
    s
}

fn memtablerep(cfg: &Config) -> &'static str {
    use crate::engine_kind::EngineKind;
    match cfg.engine {
        EngineKind::Strata if cfg.flags.memtablerep == "vector" => "StrataVector",
        EngineKind::Strata => "StrataArenaSkipList",
        EngineKind::Memory => "BTreeMap",
        EngineKind::Sqlite => "SQLiteBTree",
        EngineKind::LevelDb => "LevelDBSkipList",
        EngineKind::Kyoto => "KyotoTreeDB",
        EngineKind::Fjall => "FjallSkipList",
        EngineKind::Redb => "RedbBTree",
        EngineKind::RocksDb => match cfg.flags.memtablerep.as_str() {
            "vector" => "VectorRepFactory",
            "prefix_hash" => "HashSkipListRepFactory",
            "hash_linkedlist" => "HashLinkListRepFactory",
            _ => "SkipListFactory",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn dates() {
        // 2026-11-21 05:01:03 UTC, a Saturday.
        let t = UNIX_EPOCH + Duration::from_secs(1_795_237_263);
        assert_eq!(ctime(t), "Sat Nov 21 05:01:03 2026");
        assert_eq!(time_to_string(t), "2026/11/21-05:01:03 ");
        assert_eq!(ctime(UNIX_EPOCH), "Thu Jan  1 00:00:00 1970");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(timestamp_compact(leap), "20000229-000000");
    }
}
