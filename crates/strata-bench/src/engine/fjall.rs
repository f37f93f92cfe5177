//! `--engine=fjall` (cargo feature `fjall`): fjall 3, an LSM tree in Rust, one database with
//! one keyspace (`default`), configured as fjall's documentation recommends: its defaults
//! (leveled compaction; filters at a 0.01% false-positive rate in L0 and 10 bits per key
//! below; no compression in L0-L1 and LZ4 below; 4 KiB blocks; writes handed to the OS on
//! every write, `manual_journal_persist = false`), with the db_bench flags given applied on
//! top of them:
//!
//! - `--cache_size`: the block cache (`Database::builder().cache_size`);
//! - `--write_buffer_size`: the memtable size (`max_memtable_size`);
//! - `--block_size`, `--block_restart_interval`: the data blocks of every level;
//! - `--bloom_bits` (when given): N bits per key in every level (0: no filters);
//! - `--compression_type` (when given): none or lz4 in every level (fjall has no other);
//! - `--max_background_jobs`: fjall's worker threads;
//! - `--sync` and synced writes: the journal is persisted (`PersistMode::SyncAll`) before
//!   the write returns.

use std::collections::VecDeque;
use std::ops::Bound;

use anyhow::{anyhow, bail, Context, Result};
use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    RestartIntervalPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable};

use super::chunked::{ChunkSource, ChunkedCursor, Entry};
use super::{Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, ReadOpts, WriteOpts};
use crate::config::{Compression, Config};

// Flags applied here, benchmarks fjall cannot run: `crate::engine_kind` (`FJALL_*`).

/// The fjall release this binary is built with (the crate's version in `Cargo.lock`; a test
/// keeps the two equal).
pub const VERSION: &str = "3.1.13";

/// The one keyspace the benchmark uses.
const KEYSPACE: &str = "default";

/// How often [`Engine::wait_for_compaction`] looks at the background work.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// The keyspace options of the flags, over fjall's defaults (see the module comment).
pub fn keyspace_options(cfg: &Config) -> Result<KeyspaceCreateOptions> {
    let f = &cfg.flags;
    let mut o = KeyspaceCreateOptions::default();
    o = o.max_memtable_size(
        u64::try_from(f.write_buffer_size).ok().filter(|&v| v > 0).ok_or_else(|| {
            anyhow!("--write_buffer_size={}: must be positive", f.write_buffer_size)
        })?,
    );
    // fjall panics outside 1 KiB..1 MiB: refused here with the bounds instead.
    let block = u32::try_from(f.block_size)
        .ok()
        .filter(|b| (1024..=1 << 20).contains(b))
        .ok_or_else(|| anyhow!("--block_size={}: fjall takes 1024..1048576 bytes", f.block_size))?;
    o = o.data_block_size_policy(BlockSizePolicy::all(block));
    let restart =
        u8::try_from(f.block_restart_interval).ok().filter(|&r| r >= 1).ok_or_else(|| {
            anyhow!("--block_restart_interval={}: fjall takes 1..255", f.block_restart_interval)
        })?;
    // db_bench's default (16) leaves fjall's own policy (10 in L0, 16 below) in place.
    if cfg.set.contains("block_restart_interval") {
        o = o.data_block_restart_interval_policy(RestartIntervalPolicy::all(restart));
    }
    if cfg.set.contains("bloom_bits") {
        o = o.filter_policy(if f.bloom_bits > 0 {
            FilterPolicy::all(FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(
                f.bloom_bits as f32,
            )))
        } else {
            FilterPolicy::disabled()
        });
    }
    if cfg.set.contains("compression_type") {
        o = o.data_block_compression_policy(match cfg.compression {
            Compression::None => CompressionPolicy::disabled(),
            Compression::Lz4 => CompressionPolicy::all(CompressionType::Lz4),
            other => bail!(
                "--compression_type={}: fjall compresses with lz4 or not at all ({other:?} is \
                 not available)",
                f.compression_type
            ),
        });
    }
    Ok(o)
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    let f = &cfg.flags;
    let opts = keyspace_options(cfg)?;
    if cfg.use_existing_db && !cfg.db.join("version").is_file() {
        bail!("--use_existing_db: no fjall database at {}", cfg.db.display());
    }
    let mut b = Database::builder(&cfg.db);
    if f.cache_size > 0 {
        b = b.cache_size(f.cache_size as u64);
    }
    // fjall panics below one worker.
    let workers =
        usize::try_from(f.max_background_jobs).ok().filter(|&n| n >= 1).ok_or_else(|| {
            anyhow!("--max_background_jobs={}: must be at least 1", f.max_background_jobs)
        })?;
    let db = b
        .worker_threads(workers)
        .open()
        .with_context(|| format!("cannot open fjall database at {}", cfg.db.display()))?;
    let ks = db.keyspace(KEYSPACE, move || opts).context("cannot open fjall keyspace")?;
    Ok(Box::new(FjallEngine { db, ks }))
}

struct FjallEngine {
    db: Database,
    ks: Keyspace,
}

impl FjallEngine {
    fn after_write(&self, wo: WriteOpts) -> Result<()> {
        if wo.sync {
            self.db.persist(PersistMode::SyncAll).context("fjall persist")?;
        }
        Ok(())
    }
}

impl Drop for FjallEngine {
    /// The next process must find every write (steps of a suite run in separate processes):
    /// the journal is persisted before the database closes. fjall does this itself on drop;
    /// done here too so that a failure is printed, not lost.
    fn drop(&mut self) {
        if let Err(e) = self.db.persist(PersistMode::SyncAll) {
            eprintln!("strata-bench: fjall persist at close failed: {e}");
        }
    }
}

impl Engine for FjallEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        self.ks.insert(key, value).context("fjall insert")?;
        self.after_write(*wo)
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        self.ks.remove(key).context("fjall remove")?;
        self.after_write(*wo)
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _wo: &WriteOpts) -> Result<()> {
        bail!("fjall has no merge operator")
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut b = self.db.batch();
        if wo.sync {
            b = b.durability(Some(PersistMode::SyncAll));
        }
        for (op, k, v) in batch.iter() {
            match op {
                BatchOp::Put => b.insert(&self.ks, k, v),
                BatchOp::Delete => b.remove(&self.ks, k),
                BatchOp::Merge => bail!("fjall has no merge operator"),
                BatchOp::DeleteRange => bail!("fjall has no range deletion"),
            }
        }
        b.commit().context("fjall batch commit")
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        Ok(super::copy_found(self.ks.get(key).context("fjall get")?, out))
    }

    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        Ok(Box::new(Source { snapshot: self.db.snapshot(), ks: &self.ks }))
    }

    fn new_iterator<'a>(
        &'a self,
        _ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        let src = Source { snapshot: self.db.snapshot(), ks: &self.ks };
        Ok(Box::new(ChunkedCursor::new(src, bounds)))
    }

    /// Seals the memtable and waits until it is written out.
    fn flush(&self) -> Result<()> {
        self.ks.rotate_memtable_and_wait().context("fjall flush")
    }

    /// fjall's major compaction (everything into the last level), blocking until done.
    fn compact_range(&self) -> Result<()> {
        self.ks.major_compact().context("fjall major compaction")
    }

    /// Polls until no flush or compaction is queued or running.
    fn wait_for_compaction(&self) -> Result<()> {
        while self.db.outstanding_flushes() > 0 || self.db.active_compactions() > 0 {
            std::thread::sleep(WAIT_POLL);
        }
        Ok(())
    }

    fn property(&self, name: &str) -> Result<Option<String>> {
        Ok(match super::strip_rocksdb_prefix(name) {
            "num-files-at-level0" => Some(self.ks.l0_table_count().to_string()),
            "total-sst-files-size" | "live-sst-files-size" => {
                Some(self.ks.disk_space().to_string())
            }
            "block-cache-usage" => Some(self.db.cache_size().to_string()),
            "block-cache-capacity" => Some(self.db.cache_capacity().to_string()),
            _ => None,
        })
    }

    fn stats_text(&self) -> Result<String> {
        Ok(format!(
            "** fjall {VERSION}: {} tables ({} in L0), {:.2} MB on disk, {} journals, {} \
             compactions done, {:.1} s compacting, block cache {:.2} of {:.2} MB **\n",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.db.disk_space().context("fjall disk space")? as f64 / 1_048_576.0,
            self.db.journal_count(),
            self.db.compactions_completed(),
            self.db.time_compacting().as_secs_f64(),
            self.db.cache_size() as f64 / 1_048_576.0,
            self.db.cache_capacity() as f64 / 1_048_576.0,
        ))
    }

    fn level_stats_text(&self) -> Result<String> {
        bail!("fjall exposes no per-level statistics")
    }

    fn sstables_text(&self) -> Result<String> {
        bail!("fjall exposes no table file listing")
    }
}

/// Chunks of a cursor, all read at the snapshot taken when it was created.
struct Source<'a> {
    snapshot: fjall::Snapshot,
    ks: &'a Keyspace,
}

impl EngineSnapshot for Source<'_> {
    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        Ok(super::copy_found(self.snapshot.get(self.ks, key).context("fjall get")?, out))
    }
}

impl ChunkSource for Source<'_> {
    fn fetch(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        n: usize,
        out: &mut VecDeque<Entry>,
    ) -> Result<()> {
        let range = self.snapshot.range::<&[u8], _>(self.ks, (lo, hi));
        super::chunked::take_ends(range, forward, n, |g: fjall::Guard| {
            let (k, v) = g.into_inner().context("fjall range")?;
            out.push_back((k.to_vec(), v.to_vec()));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_matches_the_locked_crate() {
        assert_eq!(crate::engine::tests::locked_version("fjall"), super::VERSION);
    }
}
