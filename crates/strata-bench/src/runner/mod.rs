//! Runs the configured benchmarks (`docs/db_bench.md` §2): per benchmark, plan it from the
//! catalog (`plan.rs`), start from an empty DB if it asks for one, then either run it inline
//! (`admin.rs`) or run its workload on N threads over the shared loop (`op_loop.rs`) and print
//! the result line, repeated as `name[X<n>-W<m>]` asks.
//!
//! One file per workload family: `fill.rs`, `read.rs`, `seek.rs`, `mixed.rs`, `merge.rs`,
//! `micro.rs`, `admin.rs`; each workload is a step function over the shared loop.

use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::catalog::{Admin, Fill, Mixed, Workload};
use crate::config::{BenchSpec, Config};
use crate::engine::Engine;
use crate::header;
use crate::stats::{print_flush, CombinedStats, Summary};

mod admin;
mod deterministic;
mod fill;
mod fill_unique;
mod merge;
mod micro;
mod mixed;
mod multi_scan;
mod op_loop;
mod plan;
mod range_tombstones;
mod read;
mod seek;
mod timeseries;
mod transaction;

pub use plan::Params;

use op_loop::{Ctx, Worker};

/// Runs the configured benchmarks.
pub struct Runner {
    cfg: Config,
    engine: Option<Box<dyn Engine>>,
    /// Threads created so far: thread seeds are `seed_base + this` (db_bench's
    /// `total_thread_count_`).
    thread_count: std::sync::atomic::AtomicU64,
    /// The I/O counters each multi-threaded step samples (set when the run starts).
    io: Option<crate::io::Sampler>,
}

impl Runner {
    pub fn new(cfg: Config) -> Self {
        Runner { cfg, engine: None, thread_count: std::sync::atomic::AtomicU64::new(0), io: None }
    }

    fn engine(&self) -> Result<&dyn Engine> {
        self.engine.as_deref().ok_or_else(|| anyhow!("the DB is not open"))
    }

    fn open(&mut self) -> Result<()> {
        let t = Instant::now();
        self.engine = Some(self.cfg.engine.open(&self.cfg).with_context(|| {
            format!("cannot open {} DB at {}", self.cfg.engine.name(), self.cfg.db.display())
        })?);
        if self.cfg.flags.use_existing_keys && self.cfg.key.existing.is_none() {
            self.load_existing_keys()?;
        }
        if self.cfg.flags.report_open_timing {
            print_flush(&format!(
                "OpenDb:     {:.6} milliseconds\n",
                t.elapsed().as_secs_f64() * 1e3
            ));
        }
        Ok(())
    }

    /// `--use_existing_keys` (db_bench's, after its first open): the DB's keys, read in order
    /// with a total-order iterator, become the key space; `--num` becomes their count.
    fn load_existing_keys(&mut self) -> Result<()> {
        let engine = self.engine()?;
        let ro = crate::engine::ReadOpts { total_order_seek: true, ..Default::default() };
        let mut it = engine.new_iterator(&ro, crate::engine::Bounds::default())?;
        it.seek_to_first();
        let mut keys = Vec::new();
        while it.valid() {
            keys.push(it.key().to_vec());
            it.next();
        }
        it.status().context("iterator error reading the existing keys")?;
        drop(it);
        if keys.is_empty() {
            bail!("--use_existing_keys: the DB at {} holds no key", self.cfg.db.display());
        }
        self.cfg.num = keys.len() as u64;
        self.cfg.flags.num = keys.len() as i64;
        self.cfg.key.existing = Some(keys.into());
        Ok(())
    }

    fn reopen_fresh(&mut self) -> Result<()> {
        self.engine = None;
        self.cfg.engine.destroy(&self.cfg)?;
        self.open()
    }

    /// Runs everything; the process exit status is the caller's business.
    pub fn run(&mut self) -> Result<()> {
        if self.cfg.flags.seed == 0 {
            print_flush(&format!("Set seed to {} because --seed was 0\n", self.cfg.seed_base));
        }
        for n in &self.cfg.notes {
            eprintln!("strata-bench: note: {n}");
        }
        if !self.cfg.use_existing_db {
            self.cfg.engine.destroy(&self.cfg)?;
        } else if !self.cfg.engine.exists(&self.cfg) {
            // db_bench fails to open (create_if_missing is false) rather than measure an
            // empty DB.
            bail!(
                "--use_existing_db: there is no {} DB at {}; create it first (for example \
                 --benchmarks=fillseq without --use_existing_db) or drop --use_existing_db",
                self.cfg.engine.name(),
                self.cfg.db.display()
            );
        }
        if let Some(parent) = self.cfg.db.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        self.open()?;
        let io = crate::io::Sampler::new(&self.cfg.db, self.cfg.flags.fio_baseline_iops);
        eprintln!("{}", io.describe());
        self.io = Some(io);
        eprint!("{}", header::environment(&self.cfg));
        print_flush(&header::header(&self.cfg));
        let specs = self.cfg.benchmarks.clone();
        for spec in &specs {
            self.run_spec(spec)?;
        }
        if self.cfg.flags.statistics {
            let text = match self.engine()?.statistics_text()? {
                Some(t) => t,
                None => format!("(engine {} keeps no statistics)\n", self.cfg.engine.name()),
            };
            print_flush(&format!("STATISTICS:\n{text}\n"));
        }
        self.engine = None;
        Ok(())
    }

    fn run_spec(&mut self, spec: &BenchSpec) -> Result<()> {
        let name = spec.name.as_str();
        let plan = plan::plan(&self.cfg, name)?;
        if plan.bench.fresh_db {
            if self.cfg.use_existing_db {
                print_flush(&format!("{name:<12} : skipped (--use_existing_db is true)\n"));
                return Ok(());
            }
            if plan.bench.workload == Workload::Mixed(Mixed::TimeSeries) {
                // A new write counter for each timeseries, which the DB opened for it (and
                // every later one of the run) filters by with --expire_style=compaction_filter,
                // as db_bench's open options keep the filter.
                self.cfg.time_series_clock = Some(std::sync::Arc::default());
                if self.cfg.flags.expire_style == "compaction_filter" {
                    print_flush("Compaction filter is used to remove expired data");
                }
            }
            self.reopen_fresh()?;
        }
        if plan.bench.merge_operator && self.cfg.flags.merge_operator.is_empty() {
            print_flush(&format!("{name:<12} : skipped (--merge_operator is unknown)\n"));
            bail!("{name} needs --merge_operator");
        }
        let workload = plan.bench.workload;
        match workload {
            Workload::Admin(admin) if workload.is_inline() => {
                for _ in 0..spec.warmups + spec.repeats {
                    self.run_inline(admin)?;
                }
                Ok(())
            }
            Workload::Admin(Admin::Open) => {
                print_flush(&format!("DB path: [{}]\n", self.cfg.db.display()));
                self.repeat(spec, |r| r.run_open(name))
            }
            _ => {
                print_flush(&format!("DB path: [{}]\n", self.cfg.db.display()));
                let f = &self.cfg.flags;
                if matches!(workload, Workload::Admin(Admin::Backup | Admin::Restore)) {
                    print_flush(&format!("Backup path: [{}]\n", f.backup_dir));
                }
                if workload == Workload::Admin(Admin::Restore) {
                    print_flush(&format!("Restore path: [{}]\n", f.restore_dir));
                }
                self.repeat(spec, |r| {
                    let summary = r.run_threads(name, plan.threads, &plan.params, |cx, ts| {
                        exec(workload, cx, ts)
                    })?;
                    if workload == Workload::RandomTransaction {
                        let sets = r.cfg.flags.transaction_sets as u64;
                        if let Some(line) = transaction::verify(r.engine()?, sets)? {
                            print_flush(&line);
                        }
                    }
                    Ok(summary)
                })
            }
        }
    }

    fn repeat(
        &mut self,
        spec: &BenchSpec,
        mut once: impl FnMut(&mut Self) -> Result<Summary>,
    ) -> Result<()> {
        let name = spec.name.as_str();
        if spec.warmups > 0 {
            print_flush(&format!("Warming up benchmark by running {} times\n", spec.warmups));
        }
        for _ in 0..spec.warmups {
            once(self)?;
        }
        if spec.repeats > 1 {
            print_flush(&format!("Running benchmark for {} times\n", spec.repeats));
        }
        let mut combined = CombinedStats::default();
        for _ in 0..spec.repeats {
            let s = once(self)?;
            combined.add(&s);
            if self.cfg.flags.confidence_interval_only {
                print_flush(&combined.report_ci_only(name));
            } else {
                print_flush(&combined.report(name));
            }
        }
        if spec.repeats > 1 {
            print_flush(&combined.report_final(name));
        }
        Ok(())
    }
}

/// What one thread of a benchmark does.
fn exec(workload: Workload, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match workload {
        Workload::Fill(Fill::Put(mode)) => fill::put(mode, cx, ts),
        Workload::Fill(Fill::Delete { seq }) => fill::delete(seq, cx, ts),
        Workload::Fill(Fill::ReplaceKeys) => fill::replace_keys(cx, ts),
        Workload::Fill(Fill::Ingest) => fill::ingest(cx, ts),
        Workload::Fill(Fill::Deterministic(mode)) => deterministic::run(mode, cx, ts),
        Workload::Read(r) => read::run(r, cx, ts),
        Workload::Seek(s) => seek::run(s, cx, ts),
        Workload::Mixed(m) => mixed::run(m, cx, ts),
        Workload::Merge(m) => merge::run(m, cx, ts),
        Workload::Micro(m) => micro::run(m, cx, ts),
        Workload::Admin(a) => admin::on_thread(a, cx),
        Workload::RandomTransaction => transaction::run(cx, ts),
    }
}

/// Runs strata-bench with command-line `args` (for the runners' tests).
#[cfg(test)]
pub(crate) fn run_args(args: &[&str]) -> anyhow::Result<()> {
    Runner::new(crate::config::Config::from_args(args).expect("config")).run()
}
