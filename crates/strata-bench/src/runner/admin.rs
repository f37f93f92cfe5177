//! DB maintenance and introspection: compact, verifychecksum and verifyfilechecksums (timed,
//! on every thread), backup and restore, open (timed reopen cycles) and the inline benchmarks compactall,
//! flush, waitforcompaction, stats, levelstats, sstables, memstats, resetstats, which print
//! their own text and no result line (`docs/db_bench.md` §5.8).

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::op_loop::Ctx;
use super::Runner;
use crate::catalog::Admin;
use crate::engine::{Bounds, Engine, LiveFile, ReadOpts};
use crate::stats::{print_flush, OpType, Stats, Summary};

/// The work of one thread of a threaded admin benchmark.
pub(super) fn on_thread(kind: Admin, cx: &Ctx<'_>) -> Result<()> {
    match kind {
        Admin::Compact => cx.engine.compact_range().context("compact"),
        Admin::VerifyChecksum => cx.engine.verify_checksum().context("VerifyChecksum() failed"),
        Admin::VerifyFileChecksums => {
            cx.engine.verify_file_checksums().context("VerifyFileChecksums() failed")
        }
        Admin::Backup => {
            let dir = std::path::Path::new(&cx.flags().backup_dir);
            cx.engine.backup(dir).with_context(|| format!("backup into {}", dir.display()))
        }
        Admin::Restore => {
            let f = cx.flags();
            let (from, to) =
                (std::path::Path::new(&f.backup_dir), std::path::Path::new(&f.restore_dir));
            cx.cfg
                .engine
                .restore(cx.cfg, from, to)
                .with_context(|| format!("restore of {} into {}", from.display(), to.display()))
        }
        other => unreachable!("{other:?} does not run on benchmark threads"),
    }
}

/// Properties `memstats` prints: db_bench's six memtable properties, then the rest of the
/// engine's memory (table readers' index and filter blocks, the block cache), so that two
/// engines' resident memory can be told apart by part.
const MEM_PROPERTIES: &[&str] = &[
    "rocksdb.num-immutable-mem-table",
    "rocksdb.cur-size-active-mem-table",
    "rocksdb.cur-size-all-mem-tables",
    "rocksdb.size-all-mem-tables",
    "rocksdb.num-entries-active-mem-table",
    "rocksdb.num-entries-imm-mem-tables",
    "rocksdb.estimate-table-readers-mem",
    "rocksdb.block-cache-usage",
    "rocksdb.block-cache-pinned-usage",
];

/// What db_bench's `stats_history` prints: each record's time, then one line per ticker
/// (` <time>   <name>  <change>`); the engine's error when it keeps no history.
fn stats_history_text(engine: &dyn Engine) -> String {
    let records = match engine.stats_history() {
        Ok(r) => r,
        Err(e) => return format!("{e:#}\n"),
    };
    let mut out = String::new();
    for (time, stats) in records {
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(time);
        let _ = writeln!(out, "------ {} ------", crate::header::ctime(when));
        for (name, change) in stats {
            let _ = writeln!(out, " {time}   {name}  {change}");
        }
    }
    out
}

/// `compact0`/`compact1` as db_bench runs them: the files of the first non-empty level at or
/// below `from` (L0 for `compact0`) go to the next non-empty level under it, in one
/// CompactFiles call. Nothing to do (no files, or nothing below them) is reported, not an
/// error; a refused CompactFiles is printed and the run goes on, as db_bench does.
fn compact_level(engine: &dyn Engine, from: usize) -> Result<()> {
    let files = engine.live_files().with_context(|| format!("compact{from}: live files"))?;
    let Some(plan) = plan_compact_level(&files, from) else {
        print_flush(&format!("compact{from} found 0 files to compact\n"));
        return Ok(());
    };
    let Some(to) = plan.to else {
        print_flush(&format!("compact{from} found no data beyond L{}\n", plan.from));
        return Ok(());
    };
    print_flush(&format!(
        "compact{from} found {} files to compact from L{} to L{to}\n",
        plan.names.len(),
        plan.from
    ));
    if let Err(e) = engine.compact_files(&plan.names, to) {
        print_flush(&format!("compact{from} CompactFiles failed: {e:#}\n"));
    }
    Ok(())
}

/// db_bench's `VerifyDBFromDB`: opens the DB in `--truth_db` read-only with the run's engine
/// and options, gets every key of it from the run's DB (same value), then walks both DBs side
/// by side (no extra or missing key). The first difference fails the run naming the key and
/// both sides (db_bench only asserts, in debug builds).
fn verify_from_truth(cfg: &crate::config::Config, engine: &dyn Engine) -> Result<()> {
    let truth_dir = std::path::PathBuf::from(&cfg.flags.truth_db);
    let mut truth_cfg = cfg.clone();
    truth_cfg.db.clone_from(&truth_dir);
    truth_cfg.flags.readonly = true;
    truth_cfg.use_existing_db = true;
    let truth = cfg
        .engine
        .open(&truth_cfg)
        .with_context(|| format!("open error: --truth_db={}", truth_dir.display()))?;
    let ro = ReadOpts { total_order_seek: true, ..ReadOpts::default() };
    // Keys and values as escaped bytes, a long one cut after 40.
    let show = |b: &[u8]| {
        let cut = if b.len() > 40 { "..." } else { "" };
        format!("\"{}{cut}\" ({} bytes)", b[..b.len().min(40)].escape_ascii(), b.len())
    };
    eprintln!("Verifying db >= truth_db with ::Get...");
    let mut it = truth.new_iterator(&ro, Bounds::default())?;
    it.seek_to_first();
    let mut value = Vec::new();
    while it.valid() {
        let found = engine.get(it.key(), &ro, &mut value).context("get error")?;
        if !found || value != it.value() {
            bail!(
                "verify: key {} holds {} in --truth_db and {} in the DB",
                show(it.key()),
                show(it.value()),
                if found { show(&value) } else { "nothing".into() }
            );
        }
        it.next();
    }
    it.status().context("iterator error (--truth_db)")?;
    eprintln!("Verifying db == truth_db...");
    let mut ours = engine.new_iterator(&ro, Bounds::default())?;
    ours.seek_to_first();
    it.seek_to_first();
    while ours.valid() {
        if !it.valid() || it.key() != ours.key() || it.value() != ours.value() {
            bail!(
                "verify: the DB holds key {} where --truth_db holds {}",
                show(ours.key()),
                if it.valid() { format!("key {}", show(it.key())) } else { "no more".into() }
            );
        }
        ours.next();
        it.next();
    }
    ours.status().context("iterator error")?;
    if it.valid() {
        bail!("verify: --truth_db holds key {} past the DB's last", show(it.key()));
    }
    eprintln!("...Verified");
    Ok(())
}

/// What `compact<from>` compacts: every file of level `from`, into `to`.
#[derive(Debug, PartialEq, Eq)]
struct CompactLevelPlan {
    from: usize,
    to: Option<usize>,
    names: Vec<String>,
}

/// `None` when there is no file to compact. With `from` > 0 the source is the first
/// non-empty level below L0 (dynamic level sizing may leave L1 empty); the target is the
/// first non-empty level under the source, `None` when there is none.
fn plan_compact_level(files: &[LiveFile], from: usize) -> Option<CompactLevelPlan> {
    let source =
        if from == 0 { 0 } else { files.iter().map(|f| f.level).filter(|&l| l >= from).min()? };
    let names: Vec<String> =
        files.iter().filter(|f| f.level == source).map(|f| f.name.clone()).collect();
    if names.is_empty() {
        return None;
    }
    let to = files.iter().map(|f| f.level).filter(|&l| l > source).min();
    Some(CompactLevelPlan { from: source, to, names })
}

impl Runner {
    pub(super) fn run_inline(&mut self, kind: Admin) -> Result<()> {
        let db = self.cfg.db.display().to_string();
        let engine = self.engine()?;
        match kind {
            Admin::CompactAll => engine.compact_range().context("compactall")?,
            Admin::CompactLevel { from } => compact_level(engine, from)?,
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
            Admin::StatsHistory => print_flush(&stats_history_text(engine)),
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
            Admin::Verify => verify_from_truth(&self.cfg, engine)?,
            Admin::Compact
            | Admin::Open
            | Admin::Backup
            | Admin::Restore
            | Admin::VerifyChecksum
            | Admin::VerifyFileChecksums => {
                unreachable!("{kind:?} is not an inline benchmark")
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, level: usize) -> LiveFile {
        LiveFile { name: name.into(), level }
    }

    #[test]
    fn compact0_moves_l0_to_the_next_non_empty_level() {
        let files = [f("1.sst", 0), f("2.sst", 0), f("3.sst", 4), f("4.sst", 6)];
        let p = plan_compact_level(&files, 0).unwrap();
        assert_eq!(
            p,
            CompactLevelPlan { from: 0, to: Some(4), names: vec!["1.sst".into(), "2.sst".into()] }
        );
    }

    #[test]
    fn compact1_starts_at_the_first_non_empty_level_below_l0() {
        let files = [f("1.sst", 0), f("3.sst", 4), f("5.sst", 4), f("4.sst", 6)];
        let p = plan_compact_level(&files, 1).unwrap();
        assert_eq!(
            p,
            CompactLevelPlan { from: 4, to: Some(6), names: vec!["3.sst".into(), "5.sst".into()] }
        );
    }

    #[test]
    fn nothing_to_do_is_not_an_error() {
        assert_eq!(plan_compact_level(&[f("1.sst", 3)], 0), None);
        assert_eq!(plan_compact_level(&[f("1.sst", 0)], 1), None);
        let last = plan_compact_level(&[f("1.sst", 0)], 0).unwrap();
        assert_eq!(last.to, None);
    }
}
