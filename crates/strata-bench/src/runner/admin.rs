//! DB maintenance and introspection: compact (timed, on every thread), open (timed reopen
//! cycles) and the inline benchmarks compactall, flush, waitforcompaction, stats, levelstats,
//! sstables, memstats, resetstats, which print their own text and no result line
//! (`docs/db_bench.md` §5.8).

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};

use super::op_loop::Ctx;
use super::Runner;
use crate::catalog::Admin;
use crate::stats::{print_flush, OpType, Stats, Summary};

/// The work of one thread of a threaded admin benchmark.
pub(super) fn on_thread(kind: Admin, cx: &Ctx<'_>) -> Result<()> {
    match kind {
        Admin::Compact => cx.engine.compact_range().context("compact"),
        other => unreachable!("{other:?} does not run on benchmark threads"),
    }
}

/// Properties `memstats` prints.
const MEM_PROPERTIES: &[&str] = &[
    "rocksdb.num-immutable-mem-table",
    "rocksdb.cur-size-active-mem-table",
    "rocksdb.cur-size-all-mem-tables",
    "rocksdb.size-all-mem-tables",
    "rocksdb.num-entries-active-mem-table",
    "rocksdb.num-entries-imm-mem-tables",
];

impl Runner {
    pub(super) fn run_inline(&mut self, kind: Admin) -> Result<()> {
        let db = self.cfg.db.display().to_string();
        let engine = self.engine()?;
        match kind {
            Admin::CompactAll => engine.compact_range().context("compactall")?,
            Admin::Flush => {
                engine.flush().context("flush")?;
                print_flush("flush memtable\n");
            }
            Admin::WaitForCompaction => {
                print_flush(&format!("waitforcompaction({db}): started\n"));
                // Give background work time to be scheduled, as db_bench does.
                std::thread::sleep(Duration::from_secs(5));
                let status = match engine.wait_for_compaction() {
                    Ok(()) => "OK".to_string(),
                    Err(e) => format!("{e:#}"),
                };
                print_flush(&format!("waitforcompaction({db}): finished with status ({status})\n"));
            }
            Admin::Stats => {
                let s = engine.stats_text().context("stats")?;
                print_flush(&format!("\n{s}\n"));
            }
            Admin::LevelStats => {
                let s = engine.level_stats_text().context("levelstats")?;
                print_flush(&format!("\n{s}\n"));
            }
            Admin::SsTables => {
                let s = engine.sstables_text().context("sstables")?;
                print_flush(&s);
            }
            Admin::MemStats => {
                let mut out = String::new();
                for p in MEM_PROPERTIES {
                    let v = engine.property(p)?.unwrap_or_else(|| "(not supported)".into());
                    let _ = writeln!(out, "{p}: {v}");
                }
                print_flush(&out);
            }
            Admin::ResetStats => engine.reset_stats().context("resetstats")?,
            Admin::Compact | Admin::Open => unreachable!("{kind:?} is not an inline benchmark"),
        }
        Ok(())
    }

    /// Closes and reopens the DB `--num / 10000` (at least 1) times, one op each.
    pub(super) fn run_open(&mut self, name: &str) -> Result<Summary> {
        let n = (self.cfg.num / 10000).max(1);
        let ctx = self.report_ctx(None, None, None);
        let mut stats = Stats::new(0, &ctx);
        stats.start();
        for _ in 0..n {
            self.engine = None;
            self.engine = Some(self.cfg.engine.open(&self.cfg)?);
            stats.finished_ops(1, OpType::Others);
        }
        stats.stop();
        let mut merged = Stats::new(0, &ctx);
        merged.merge(&stats);
        Ok(merged.report(name))
    }
}
