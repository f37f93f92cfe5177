//! `--engine=sqlite` (cargo feature `sqlite`): SQLite (rusqlite, bundled) tuned as LevelDB's
//! published comparison tuned it: write-ahead logging, exclusive locking, asynchronous writes
//! (`synchronous=OFF`, FULL for sync writes), one `kv(k BLOB PRIMARY KEY, v BLOB)` table
//! without rowids. One connection, behind a mutex: operations are serialised.
//!
//! Iterators re-query from the last key they returned, fetching rows in chunks.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use anyhow::{anyhow, bail, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::{Batch, BatchOp, Bounds, Engine, EngineIter, ReadOpts, WriteOpts};
use crate::config::Config;

// Flags applied here, benchmarks SQLite cannot run: `crate::engine_kind` (`SQLITE_*`).

pub fn version() -> &'static str {
    rusqlite::version()
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(&cfg.db)?;
    let conn = Connection::open(cfg.db.join("dbbench_sqlite3.db"))?;
    let f = &cfg.flags;
    let cache_kib = if f.cache_size > 0 { f.cache_size / 1024 } else { 0 };
    conn.execute_batch(&format!(
        "PRAGMA page_size = {};
         PRAGMA locking_mode = EXCLUSIVE;
         PRAGMA journal_mode = WAL;
         PRAGMA synchronous = OFF;
         PRAGMA cache_size = -{cache_kib};
         CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;",
        f.block_size.clamp(512, 65536)
    ))?;
    Ok(Box::new(SqliteEngine { conn: Mutex::new(State { conn, sync: false }) }))
}

struct State {
    conn: Connection,
    sync: bool,
}

impl State {
    fn set_sync(&mut self, sync: bool) -> Result<()> {
        if self.sync != sync {
            let mode = if sync { "FULL" } else { "OFF" };
            self.conn.execute_batch(&format!("PRAGMA synchronous = {mode};"))?;
            self.sync = sync;
        }
        Ok(())
    }
}

struct SqliteEngine {
    conn: Mutex<State>,
}

impl SqliteEngine {
    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.conn.lock().map_err(|_| anyhow!("sqlite connection lock poisoned"))
    }
}

const PUT: &str = "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)";
const DEL: &str = "DELETE FROM kv WHERE k = ?1";
const GET: &str = "SELECT v FROM kv WHERE k = ?1";

impl Engine for SqliteEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        let mut s = self.lock()?;
        s.set_sync(wo.sync)?;
        s.conn.prepare_cached(PUT)?.execute(params![key, value])?;
        Ok(())
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        let mut s = self.lock()?;
        s.set_sync(wo.sync)?;
        s.conn.prepare_cached(DEL)?.execute(params![key])?;
        Ok(())
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _wo: &WriteOpts) -> Result<()> {
        bail!("SQLite has no merge operator")
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut s = self.lock()?;
        s.set_sync(wo.sync)?;
        let tx = s.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(PUT)?;
            let mut del = tx.prepare_cached(DEL)?;
            for (op, k, v) in batch.iter() {
                match op {
                    BatchOp::Put => put.execute(params![k, v])?,
                    BatchOp::Delete => del.execute(params![k])?,
                    BatchOp::Merge => bail!("SQLite has no merge operator"),
                    BatchOp::DeleteRange => bail!("SQLite has no range deletion here"),
                };
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let s = self.lock()?;
        let mut stmt = s.conn.prepare_cached(GET)?;
        let found = stmt
            .query_row(params![key], |row| {
                let v = row.get_ref(0)?.as_blob()?;
                out.clear();
                out.extend_from_slice(v);
                Ok(())
            })
            .optional()?;
        Ok(found.is_some())
    }

    fn new_iterator<'a>(
        &'a self,
        _ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        Ok(Box::new(SqliteIter {
            engine: self,
            lower: bounds.lower.map(<[u8]>::to_vec),
            upper: bounds.upper.map(<[u8]>::to_vec),
            rows: VecDeque::new(),
            forward: true,
            error: None,
        }))
    }

    fn flush(&self) -> Result<()> {
        let s = self.lock()?;
        s.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(())
    }

    fn compact_range(&self) -> Result<()> {
        bail!("SQLite has no LSM compaction")
    }

    fn wait_for_compaction(&self) -> Result<()> {
        bail!("SQLite has no LSM compaction")
    }

    fn property(&self, _name: &str) -> Result<Option<String>> {
        Ok(None)
    }

    fn stats_text(&self) -> Result<String> {
        let s = self.lock()?;
        let pages: i64 = s.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let page_size: i64 = s.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok(format!(
            "** SQLite {}: {pages} pages of {page_size} bytes ({:.2} MB) **\n",
            version(),
            (pages * page_size) as f64 / 1048576.0
        ))
    }

    fn level_stats_text(&self) -> Result<String> {
        bail!("SQLite has no LSM levels")
    }

    fn sstables_text(&self) -> Result<String> {
        bail!("SQLite has no table files")
    }
}

/// Rows are fetched in chunks: the first after a seek is small (a seek usually reads a few
/// rows), later ones larger (a scan).
const SEEK_CHUNK: usize = 16;
const SCAN_CHUNK: usize = 256;

struct SqliteIter<'a> {
    engine: &'a SqliteEngine,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// Buffered rows in iteration order; the front is the current one.
    rows: VecDeque<(Vec<u8>, Vec<u8>)>,
    forward: bool,
    error: Option<anyhow::Error>,
}

impl SqliteIter<'_> {
    /// Loads up to `n` rows after (`forward`) or before `from` (inclusive or not).
    fn fetch(&mut self, from: Option<&[u8]>, inclusive: bool, forward: bool, n: usize) {
        self.forward = forward;
        self.rows.clear();
        let r = (|| -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            let s = self.engine.lock()?;
            let mut conds: Vec<String> = Vec::new();
            let mut args: Vec<Vec<u8>> = Vec::new();
            if let Some(k) = from {
                let op = match (forward, inclusive) {
                    (true, true) => ">=",
                    (true, false) => ">",
                    (false, true) => "<=",
                    (false, false) => "<",
                };
                args.push(k.to_vec());
                conds.push(format!("k {op} ?{}", args.len()));
            }
            if let Some(l) = &self.lower {
                args.push(l.clone());
                conds.push(format!("k >= ?{}", args.len()));
            }
            if let Some(u) = &self.upper {
                args.push(u.clone());
                conds.push(format!("k < ?{}", args.len()));
            }
            let where_ = if conds.is_empty() {
                String::new()
            } else {
                format!("WHERE {}", conds.join(" AND "))
            };
            let order = if forward { "ASC" } else { "DESC" };
            let sql = format!("SELECT k, v FROM kv {where_} ORDER BY k {order} LIMIT {n}");
            let mut stmt = s.conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |row| {
                Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Vec<u8>>(1)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })();
        match r {
            Ok(v) => self.rows.extend(v),
            Err(e) => self.error = Some(e),
        }
    }

    fn step(&mut self, forward: bool) {
        let Some((cur, _)) = self.rows.pop_front() else { return };
        if forward != self.forward {
            self.fetch(Some(&cur), false, forward, SEEK_CHUNK);
        } else if self.rows.is_empty() {
            self.fetch(Some(&cur), false, forward, SCAN_CHUNK);
        }
    }
}

impl EngineIter for SqliteIter<'_> {
    fn seek_to_first(&mut self) {
        self.fetch(None, true, true, SCAN_CHUNK);
    }

    fn seek_to_last(&mut self) {
        self.fetch(None, true, false, SCAN_CHUNK);
    }

    fn seek(&mut self, key: &[u8]) {
        self.fetch(Some(key), true, true, SEEK_CHUNK);
    }

    fn next(&mut self) {
        self.step(true);
    }

    fn prev(&mut self) {
        self.step(false);
    }

    fn valid(&self) -> bool {
        !self.rows.is_empty()
    }

    fn key(&self) -> &[u8] {
        self.rows.front().map_or(&[], |(k, _)| k.as_slice())
    }

    fn value(&self) -> &[u8] {
        self.rows.front().map_or(&[], |(_, v)| v.as_slice())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(anyhow!("{e:#}")),
            None => Ok(()),
        }
    }
}
