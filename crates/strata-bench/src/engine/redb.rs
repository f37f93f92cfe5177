//! `--engine=redb` (cargo feature `redb`): redb, a copy-on-write B-tree in Rust, one file
//! with one `&[u8] -> &[u8]` table, configured as redb's documentation recommends: its
//! defaults (4 KiB pages, no compression, exclusive access), `--cache_size` as its page
//! cache.
//!
//! Every write (a put, a delete, a `--batch_size` batch) is one write transaction, as a user
//! writing one record at a time would do. Durability follows the db_bench mode:
//! - asynchronous writes (the default): `Durability::None`, redb's mode for commits that may
//!   be lost on a crash until a later durable commit. (redb has no mode that hands each commit
//!   to the OS without an fsync, LevelDB's and db_bench's asynchronous mode: `None` is the
//!   nearest, and it writes less than that mode does.)
//! - synced writes (`--sync`, fillsync): `Durability::Immediate`, an fsync per commit.
//!
//! Closing the engine commits once with `Durability::Immediate`, so the next process (the
//! next step of a suite) finds every write.

use std::collections::VecDeque;
use std::ops::Bound;

use anyhow::{bail, Context, Result};
use redb::{
    Database, Durability, ReadOnlyTable, ReadableDatabase, TableDefinition, WriteTransaction,
};

use super::chunked::{ChunkSource, ChunkedCursor, Entry};
use super::{Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, ReadOpts, WriteOpts};
use crate::config::{Compression, Config};

// Flags applied here, benchmarks redb cannot run: `crate::engine_kind` (`REDB_*`).

/// The redb release this binary is built with (the crate's version in `Cargo.lock`; a test
/// keeps the two equal).
pub const VERSION: &str = "4.6.0";

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("dbbench");

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    let f = &cfg.flags;
    // Given explicitly, only "none" describes redb; the tool's default (snappy) is not a
    // request.
    if cfg.set.contains("compression_type") && cfg.compression != Compression::None {
        bail!(
            "--compression_type={}: redb does not compress (use none, or leave the flag out)",
            f.compression_type
        );
    }
    std::fs::create_dir_all(&cfg.db)
        .with_context(|| format!("cannot create {}", cfg.db.display()))?;
    let mut b = Database::builder();
    if f.cache_size > 0 {
        b.set_cache_size(usize::try_from(f.cache_size)?);
    }
    let path = cfg.db.join(super::REDB_FILE);
    let db = b.create(&path).with_context(|| format!("cannot open redb at {}", path.display()))?;
    // The table exists from the start, so that readers of an empty DB find it.
    let w = db.begin_write()?;
    w.open_table(TABLE)?;
    w.commit()?;
    Ok(Box::new(RedbEngine { db }))
}

struct RedbEngine {
    db: Database,
}

impl RedbEngine {
    /// A write transaction with the durability of `wo`.
    fn begin(&self, wo: WriteOpts) -> Result<WriteTransaction> {
        let mut w = self.db.begin_write()?;
        w.set_durability(if wo.sync { Durability::Immediate } else { Durability::None })?;
        Ok(w)
    }

    /// The table in a new read transaction: a view of the last commit, held as long as it.
    fn source(&self) -> Result<Source> {
        Ok(Source(self.db.begin_read()?.open_table(TABLE)?))
    }

    /// A commit with `Durability::Immediate`: everything before it survives a crash.
    fn durable_commit(&self) -> Result<()> {
        let w = self.db.begin_write()?;
        w.commit()?;
        Ok(())
    }
}

impl Drop for RedbEngine {
    fn drop(&mut self) {
        if let Err(e) = self.durable_commit() {
            eprintln!("strata-bench: redb's closing durable commit failed: {e:#}");
        }
    }
}

impl Engine for RedbEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        let w = self.begin(*wo)?;
        w.open_table(TABLE)?.insert(key, value)?;
        w.commit()?;
        Ok(())
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let w = self.begin(*wo)?;
        w.open_table(TABLE)?.remove(key)?;
        w.commit()?;
        Ok(())
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _wo: &WriteOpts) -> Result<()> {
        bail!("redb has no merge operator")
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let w = self.begin(*wo)?;
        {
            let mut t = w.open_table(TABLE)?;
            for (op, k, v) in batch.iter() {
                match op {
                    BatchOp::Put => {
                        t.insert(k, v)?;
                    }
                    BatchOp::Delete => {
                        t.remove(k)?;
                    }
                    BatchOp::Merge => bail!("redb has no merge operator"),
                    BatchOp::DeleteRange => bail!("redb has no range deletion here"),
                }
            }
        }
        w.commit()?;
        Ok(())
    }

    /// A get in a read transaction of its own.
    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        self.source()?.get(key, ro, out)
    }

    /// A read transaction's table, kept open.
    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        Ok(Box::new(self.source()?))
    }

    fn new_iterator<'a>(
        &'a self,
        _ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        Ok(Box::new(ChunkedCursor::new(self.source()?, bounds)))
    }

    /// A durable commit: what redb has of writing its in-memory state out.
    fn flush(&self) -> Result<()> {
        self.durable_commit()
    }

    fn compact_range(&self) -> Result<()> {
        bail!("redb is a B-tree: it has no LSM compaction")
    }

    fn wait_for_compaction(&self) -> Result<()> {
        bail!("redb is a B-tree: it has no LSM compaction")
    }

    fn property(&self, _name: &str) -> Result<Option<String>> {
        Ok(None)
    }

    fn stats_text(&self) -> Result<String> {
        let w = self.db.begin_write()?;
        let s = w.stats()?;
        w.abort()?;
        Ok(format!(
            "** redb {VERSION}: tree height {}, {} pages of {} bytes allocated ({} leaf, {} \
             branch), {:.2} MB stored, {:.2} MB metadata, {:.2} MB fragmented **\n",
            s.tree_height(),
            s.allocated_pages(),
            s.page_size(),
            s.leaf_pages(),
            s.branch_pages(),
            s.stored_bytes() as f64 / 1_048_576.0,
            s.metadata_bytes() as f64 / 1_048_576.0,
            s.fragmented_bytes() as f64 / 1_048_576.0,
        ))
    }

    fn level_stats_text(&self) -> Result<String> {
        bail!("redb has no LSM levels")
    }

    fn sstables_text(&self) -> Result<String> {
        bail!("redb has no table files")
    }
}

/// Chunks of a cursor, all read from the read transaction the table was opened in (one
/// snapshot).
struct Source(ReadOnlyTable<&'static [u8], &'static [u8]>);

impl EngineSnapshot for Source {
    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        Ok(super::copy_found(self.0.get(key)?.as_ref().map(|v| v.value()), out))
    }
}

impl ChunkSource for Source {
    fn fetch(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        n: usize,
        out: &mut VecDeque<Entry>,
    ) -> Result<()> {
        let range = self.0.range::<&[u8]>((lo, hi))?;
        super::chunked::take_ends(range, forward, n, |r: Result<_, redb::StorageError>| {
            let (k, v): (redb::AccessGuard<'_, &[u8]>, redb::AccessGuard<'_, &[u8]>) = r?;
            out.push_back((k.value().to_vec(), v.value().to_vec()));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_matches_the_locked_crate() {
        assert_eq!(crate::engine::tests::locked_version("redb"), super::VERSION);
    }
}
