//! `Db::property_value`: named, human- and script-readable views of the DB's state.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use super::{Cfd, DbInner};
use crate::error::Result;
use crate::stats::LevelShape;

/// Property `name` of family `cfd`: views of its LSM tree and memtables are the family's,
/// the rest (cache, snapshots, write stalls, background errors, `statistics`) the DB's.
pub(crate) fn property_value(inner: &DbInner, cfd: &Cfd, name: &str) -> Result<Option<String>> {
    let Some(prop) = name.strip_prefix("strata.").or_else(|| name.strip_prefix("rocksdb.")) else {
        return Ok(None);
    };
    let sv = cfd.current_super_version();
    let v = &sv.version;
    let mems = || std::iter::once(&sv.mem).chain(sv.imm.iter());
    if let Some(level) = prop.strip_prefix("num-files-at-level") {
        return Ok(match level.parse::<usize>() {
            Ok(l) if l < v.levels.len() => Some(v.num_files(l).to_string()),
            _ => None,
        });
    }
    let out = match prop {
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
        // Blob files (RocksDB's names): of the current version; "total" adds those only
        // older versions still hold, by their size on disk.
        "num-blob-files" => v.blobs().len().to_string(),
        "live-blob-file-size" => v.blobs().bytes().0.to_string(),
        "live-blob-file-garbage-size" => v.blobs().bytes().1.to_string(),
        "total-blob-file-size" => {
            let live = inner.versions.lock().live_blob_files();
            live.iter()
                .filter_map(|&n| {
                    inner.fs.file_size(&crate::filename::blob_path(&inner.dir, n)).ok()
                })
                .sum::<u64>()
                .to_string()
        }
        "blob-stats" => {
            let (bytes, garbage) = v.blobs().bytes();
            format!(
                "Number of blob files: {}\nTotal size of blob files: {bytes}\nTotal size of \
                 garbage in blob files: {garbage}\n",
                v.blobs().len()
            )
        }
        "block-cache-capacity" => {
            inner.table_cache.block_cache().map_or(0, |c| c.cache.capacity()).to_string()
        }
        "block-cache-usage" => {
            inner.table_cache.block_cache().map_or(0, |c| c.cache.usage()).to_string()
        }
        "block-cache-pinned-usage" => v
            .files()
            .filter_map(|(_, f)| inner.table_cache.open_reader(f.number, &f.pinned))
            .map(|r| r.pinned_usage())
            .sum::<usize>()
            .to_string(),
        "estimate-table-readers-mem" => v
            .files()
            .filter_map(|(_, f)| inner.table_cache.open_reader(f.number, &f.pinned))
            .map(|r| r.memory_usage())
            .sum::<usize>()
            .to_string(),
        "block-cache-hit" => {
            inner.table_cache.block_cache().map_or(0, |c| c.cache.hits()).to_string()
        }
        "block-cache-miss" => {
            inner.table_cache.block_cache().map_or(0, |c| c.cache.misses()).to_string()
        }
        "write-buffer-manager-stops" => {
            inner.stats.stall_count(crate::stats::Stall::WriteBufferManager).to_string()
        }
        "write-buffer-manager-usage" => {
            inner.opts.write_buffer_manager.as_ref().map_or(0, |m| m.memory_usage()).to_string()
        }
        "background-errors" => u8::from(inner.bg_error().is_some()).to_string(),
        "estimate-pending-compaction-bytes" => sv.pending_compaction_bytes.to_string(),
        "num-running-compactions" => inner.state.lock().running_compactions.to_string(),
        "compaction-pending" => {
            let st = inner.state.lock();
            let pick = crate::compaction::pick(
                v,
                &cfd.live_opts().picker_options(),
                &st.compacting,
                crate::compaction::now_secs(),
            );
            u8::from(pick.is_some()).to_string()
        }
        "num-sorted-runs" => crate::compaction::universal::sorted_run_count(v).to_string(),
        "estimate-size-amplification-percent" => size_amplification_percent(v).to_string(),
        "num-snapshots" => inner.snapshots.count().to_string(),
        "oldest-snapshot-sequence" => {
            inner.snapshots.sequences().first().map_or(0, |s| s.0).to_string()
        }
        "is-write-stopped" => u8::from(inner.write_stopped.load(Relaxed)).to_string(),
        "actual-delayed-write-rate" => {
            let delayed = inner.write_delayed.load(Relaxed);
            if delayed { inner.delayed_rate.lock().rate() } else { 0 }.to_string()
        }
        "num-entries-active-mem-table" => sv.mem.num_entries().to_string(),
        "num-entries-imm-mem-tables" => {
            sv.imm.iter().map(|m| m.num_entries()).sum::<u64>().to_string()
        }
        "num-deletes-active-mem-table" => sv.mem.num_deletes().to_string(),
        "num-deletes-imm-mem-tables" => {
            sv.imm.iter().map(|m| m.num_deletes()).sum::<u64>().to_string()
        }
        "size-all-mem-tables" => {
            mems().map(|m| m.approximate_memory_usage()).sum::<usize>().to_string()
        }
        // Due, not merely queued: immutable memtables may wait for more to merge with. The
        // one flush thread runs a flush whenever one is due.
        "mem-table-flush-pending" | "num-running-flushes" => {
            let st = inner.state.lock();
            u8::from(st.cfs.get(&cfd.id).and_then(|c| c.flush_count()).is_some()).to_string()
        }
        "live-sst-files-size" => {
            let live = inner.versions.lock().live_tables();
            let sizes: std::collections::HashMap<_, _> =
                v.files().map(|(_, f)| (f.number, f.file_size)).collect();
            let current: u64 = sizes.values().sum();
            // Tables only older versions still hold are counted with their on-disk size, in
            // their own directories.
            let older: u64 = live
                .iter()
                .filter(|f| !sizes.contains_key(&f.number))
                .filter_map(|f| inner.fs.file_size(&f.path_in(&inner.dir)).ok())
                .sum();
            (current + older).to_string()
        }
        "estimate-live-data-size" => {
            // The bottom-most populated level holds (about) one version of every key; each
            // level above adds at most its own bytes (RocksDB's estimate).
            v.levels
                .iter()
                .map(|files| files.iter().map(|f| f.file_size).sum::<u64>())
                .fold(0u64, |acc, level| acc.max(level))
                .to_string()
        }
        "base-level" => {
            crate::compaction::picker::level_targets(v, &cfd.live_opts().picker_options())
                .base_level
                .to_string()
        }
        "num-live-versions" => {
            let mut versions = inner.versions.lock();
            (1 + versions.live_old_versions()).to_string()
        }
        "min-log-number-to-keep" => inner.versions.lock().log_number().0.to_string(),
        "is-file-deletions-enabled" => "1".to_string(),
        "levelstats" => {
            let mut s = String::from("Level Files Size(MB)\n--------------------\n");
            for l in 0..v.levels.len() {
                let _ = writeln!(
                    s,
                    "{l:3} {:8} {:8.0}",
                    v.num_files(l),
                    v.level_bytes(l) as f64 / 1048576.0
                );
            }
            s
        }
        "sstables" => sstables(v),
        // RocksDB's: the dump of the user's statistics, when the DB has them.
        "options-statistics" => match inner.stats.user_statistics() {
            Some(s) => s.dump(),
            None => return Ok(None),
        },
        "statistics" => {
            let cache = inner.table_cache.block_cache();
            inner.stats.statistics(&[
                ("rocksdb.block.cache.hit", cache.map_or(0, |c| c.cache.hits())),
                ("rocksdb.block.cache.miss", cache.map_or(0, |c| c.cache.misses())),
            ])
        }
        "stats" => {
            let busy = inner.state.lock().compacting.clone();
            let o = cfd.live_opts().picker_options();
            let t = crate::compaction::picker::level_targets(v, &o);
            let scores = crate::compaction::picker::level_scores(v, &o, &busy, &t);
            let shape: Vec<LevelShape> = (0..v.levels.len())
                .map(|l| LevelShape {
                    files: v.num_files(l),
                    being_compacted: v.levels[l]
                        .iter()
                        .filter(|f| busy.contains(&f.number))
                        .count(),
                    bytes: v.level_bytes(l),
                    score: scores[l],
                })
                .collect();
            let (bytes, garbage) = v.blobs().bytes();
            let blobs = crate::stats::BlobShape { files: v.blobs().len(), bytes, garbage };
            cfd.stats.report(&cfd.name, &shape, sv.pending_compaction_bytes, blobs, cfd.id == 0)
        }
        _ => return Ok(None),
    };
    Ok(Some(out))
}

/// The memory of a DB over all its families (`strata::perf`'s figures).
pub(crate) struct MemoryFigures {
    /// Every memtable held (`size-all-mem-tables`).
    pub mem_tables: u64,
    /// Memtables not flushed yet (`cur-size-all-mem-tables`): all of them, as no flushed
    /// memtable is kept.
    pub unflushed_mem_tables: u64,
    /// What open table readers keep outside the block cache (`estimate-table-readers-mem`).
    pub table_readers: u64,
}

pub(crate) fn memory_figures(inner: &DbInner) -> MemoryFigures {
    let cfds: Vec<_> = inner.state.lock().cfs.values().map(|c| c.cfd.clone()).collect();
    let (mut mem, mut readers) = (0u64, 0u64);
    for cfd in cfds {
        let sv = cfd.current_super_version();
        mem += std::iter::once(&sv.mem)
            .chain(sv.imm.iter())
            .map(|m| m.approximate_memory_usage() as u64)
            .sum::<u64>();
        readers += sv
            .version
            .files()
            .filter_map(|(_, f)| inner.table_cache.open_reader(f.number, &f.pinned))
            .map(|r| r.memory_usage() as u64)
            .sum::<u64>();
    }
    MemoryFigures { mem_tables: mem, unflushed_mem_tables: mem, table_readers: readers }
}

/// RocksDB's `Version::DebugString(hex)`: per level, each file with its size, sequence range
/// and key range.
fn sstables(v: &crate::version::levels::Version) -> String {
    let hex = |b: &[u8]| {
        b.iter().fold(String::with_capacity(2 * b.len()), |mut s, x| {
            let _ = write!(s, "{x:02X}");
            s
        })
    };
    let describe = |k: &[u8]| match crate::key::parse_internal_key(k) {
        Some(p) => format!("'{}' seq:{}, type:{}", hex(p.user_key), p.seq.0, p.value_type as u8),
        None => format!("'{}'", hex(k)),
    };
    let mut s = String::new();
    for (l, files) in v.levels.iter().enumerate() {
        let _ = writeln!(s, "--- level {l} --- version# 0 ---");
        for f in files {
            let _ = writeln!(
                s,
                " {}:{}[{} .. {}][{} .. {}](0)",
                f.number.0,
                f.file_size,
                f.smallest_seqno.0,
                f.largest_seqno.0,
                describe(&f.smallest),
                describe(&f.largest)
            );
        }
    }
    s
}

/// Starts the thread that writes the `stats` property into the info LOG every
/// `Options::stats_dump_period_sec` (none when it is 0).
pub(crate) fn start_stats_dump(
    inner: &std::sync::Arc<DbInner>,
) -> Result<Option<std::thread::JoinHandle<()>>> {
    let secs = inner.opts.stats_dump_period_sec;
    if secs == 0 {
        return Ok(None);
    }
    let period = std::time::Duration::from_secs(u64::from(secs));
    super::background::spawn(inner, "strata-stats".to_string(), move |db| {
        stats_dump_loop(db, period);
    })
    .map(Some)
}

fn stats_dump_loop(inner: &DbInner, period: std::time::Duration) {
    let mut next = std::time::Instant::now() + period;
    let mut st = inner.state.lock();
    while !st.shutting_down {
        let now = std::time::Instant::now();
        if now < next {
            // Woken early by any background event or by shutdown; loop re-checks.
            inner.bg_cv.wait_for(&mut st, next - now);
            continue;
        }
        drop(st);
        // Every family's report names it; `default`'s (first) carries the DB-wide section.
        inner.info_log.log("------- DUMPING STATS -------");
        for cfd in inner.families() {
            if let Ok(Some(stats)) = property_value(inner, &cfd, "strata.stats") {
                inner.info_log.log_lines(&stats);
            }
        }
        next = now + period;
        st = inner.state.lock();
    }
}

/// Bytes of every sorted run above the oldest, as a percentage of the oldest run's: what
/// universal's `max_size_amplification_percent` bounds (0 for an empty DB or a single run).
fn size_amplification_percent(v: &crate::version::levels::Version) -> u64 {
    let runs = crate::compaction::universal::sorted_runs(v, &std::collections::HashSet::new());
    let Some((oldest, newer)) = runs.split_last() else { return 0 };
    let newer: u64 = newer.iter().map(|r| r.size).sum();
    (u128::from(newer) * 100 / u128::from(oldest.size.max(1))) as u64
}
