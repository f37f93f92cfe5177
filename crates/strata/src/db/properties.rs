//! `Db::property_value`: named, human- and script-readable views of the DB's state.

use std::fmt::Write as _;

use super::DbInner;
use crate::error::Result;

/// Every property name this DB answers (without the `strata.` prefix).
pub(crate) const PROPERTY_NAMES: &[&str] = &[
    "num-files-at-level<N>",
    "estimate-num-keys",
    "num-immutable-mem-table",
    "cur-size-active-mem-table",
    "cur-size-all-mem-tables",
    "total-sst-files-size",
    "block-cache-capacity",
    "block-cache-usage",
    "background-errors",
    "levelstats",
    "stats",
];

pub(crate) fn property_value(inner: &DbInner, name: &str) -> Result<Option<String>> {
    let Some(prop) = name.strip_prefix("strata.").or_else(|| name.strip_prefix("rocksdb.")) else {
        return Ok(None);
    };
    let sv = inner.current_super_version();
    let v = &sv.version;
    let mems = || std::iter::once(&sv.mem).chain(sv.imm.iter());
    let out = if let Some(level) = prop.strip_prefix("num-files-at-level") {
        match level.parse::<usize>() {
            Ok(l) if l < v.levels.len() => v.num_files(l).to_string(),
            _ => return Ok(None),
        }
    } else {
        match prop {
            "estimate-num-keys" => {
                let mem: u64 =
                    mems().map(|m| m.num_entries().saturating_sub(2 * m.num_deletes())).sum();
                let tables: u64 =
                    v.files().map(|(_, f)| f.num_entries.saturating_sub(2 * f.num_deletions)).sum();
                (mem + tables).to_string()
            }
            "num-immutable-mem-table" => sv.imm.len().to_string(),
            "cur-size-active-mem-table" => sv.mem.approximate_memory_usage().to_string(),
            "cur-size-all-mem-tables" => {
                mems().map(|m| m.approximate_memory_usage()).sum::<usize>().to_string()
            }
            "total-sst-files-size" => v.files().map(|(_, f)| f.file_size).sum::<u64>().to_string(),
            "block-cache-capacity" => {
                inner.table_cache.block_cache().map_or(0, |c| c.capacity()).to_string()
            }
            "block-cache-usage" => {
                inner.table_cache.block_cache().map_or(0, |c| c.usage()).to_string()
            }
            "background-errors" => u8::from(inner.bg_error().is_some()).to_string(),
            "levelstats" | "stats" => {
                let mut s = String::new();
                let _ = writeln!(s, "Level Files Size(MB)");
                let _ = writeln!(s, "--------------------");
                for l in 0..v.levels.len() {
                    let _ = writeln!(
                        s,
                        "{l:>5} {:>5} {:>8.0}",
                        v.num_files(l),
                        v.level_bytes(l) as f64 / 1048576.0
                    );
                }
                s
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(out))
}
