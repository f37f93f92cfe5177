//! `--engine=rocksdb` with `--transaction_db` or `--optimistic_transaction_db` (cargo feature
//! `rocksdb`): RocksDB's `TransactionDB` or `OptimisticTransactionDB` through the `rocksdb`
//! crate, opened with the options `rocks.rs` builds from the flags, as db_bench opens them.
//!
//! Besides transactions (`randomtransaction`), the DB takes the plain operations every
//! benchmark needs (a `TransactionDB`'s own writes lock their keys). What the crate does not
//! wrap for these DB kinds is refused: several column families, and for a `TransactionDB`
//! `compact` (no CompactRange) and the table-file benchmarks.

use anyhow::{bail, Result};
use rocksdb::{
    ColumnFamilyDescriptor, DBRawIteratorWithThreadMode, ErrorKind, MultiThreaded,
    OptimisticTransactionDB, OptimisticTransactionOptions, Options, ReadOptions, Transaction,
    TransactionDB, TransactionDBOptions, TransactionOptions, WaitForCompactOptions,
    WriteBatchWithTransaction, WriteOptions,
};

use super::{Batch, BatchOp, Bounds, Engine, EngineIter, EngineTxn, ReadOpts, TxnKind, WriteOpts};
use crate::config::Config;

/// Multi-threaded: the `rocksdb` crate gives that mode the property getters.
type PessimisticDb = TransactionDB<MultiThreaded>;

enum TxnDb {
    Pessimistic(PessimisticDb),
    Optimistic(OptimisticTransactionDB),
}

/// Runs `$body` with `$db` bound to whichever DB it is (the two types share method names).
macro_rules! with_db {
    ($self:expr, $db:ident => $body:expr) => {
        match &$self.db {
            TxnDb::Pessimistic($db) => $body,
            TxnDb::Optimistic($db) => $body,
        }
    };
}

pub(super) struct RocksTxnEngine {
    db: TxnDb,
    opts: Options,
    ro: ReadOptions,
    /// Prebuilt write options, indexed by `sync * 2 + disable_wal`.
    wo: [WriteOptions; 4],
    /// `--transaction_lock_timeout`.
    lock_timeout: i64,
}

/// Opens the DB `cfg` asks for with `opts` and `families` (from `rocks::options_and_families`).
pub(super) fn open(
    cfg: &Config,
    opts: Options,
    families: Vec<ColumnFamilyDescriptor>,
) -> Result<Box<dyn Engine>> {
    let f = &cfg.flags;
    if super::num_column_families(cfg)? > 1 {
        bail!("--num_column_families > 1 with transactions: not wired for --engine=rocksdb");
    }
    let db = if f.transaction_db {
        let t = TransactionDBOptions::default();
        TxnDb::Pessimistic(PessimisticDb::open_cf_descriptors(&opts, &t, &cfg.db, families)?)
    } else {
        TxnDb::Optimistic(OptimisticTransactionDB::open_cf_descriptors(&opts, &cfg.db, families)?)
    };
    Ok(Box::new(RocksTxnEngine {
        db,
        opts,
        ro: super::rocks::read_options(cfg),
        wo: super::rocks::write_options(),
        lock_timeout: f.transaction_lock_timeout,
    }))
}

impl RocksTxnEngine {
    fn wo(&self, w: WriteOpts) -> &WriteOptions {
        &self.wo[usize::from(w.sync) * 2 + usize::from(w.disable_wal)]
    }
}

struct TxnIter<'a, D: rocksdb::DBAccess> {
    it: DBRawIteratorWithThreadMode<'a, D>,
}

raw_iterator_adapter!(TxnIter<'_, PessimisticDb>);
raw_iterator_adapter!(TxnIter<'_, OptimisticTransactionDB>);

/// A transaction's error as `randomtransaction` sees it: `Ok` for a conflict.
fn conflict_or(e: rocksdb::Error) -> Result<()> {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain | ErrorKind::Expired => Ok(()),
        _ => Err(e.into()),
    }
}

struct RocksTxn<'a, D> {
    txn: Transaction<'a, D>,
    /// Reads at the transaction's snapshot (pessimistic, as db_bench's inserter).
    at_snapshot: bool,
}

impl<D> EngineTxn for RocksTxn<'_, D> {
    fn get(&mut self, key: &[u8], for_update: bool, out: &mut Vec<u8>) -> Result<Option<bool>> {
        let snap = self.txn.snapshot();
        let mut ro = ReadOptions::default();
        if self.at_snapshot {
            ro.set_snapshot(&snap);
        }
        let r = if for_update {
            self.txn.get_pinned_for_update_opt(key, true, &ro)
        } else {
            self.txn.get_pinned_opt(key, &ro)
        };
        super::txn_read(r, out, conflict_or)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        super::txn_step(self.txn.put(key, value), conflict_or)
    }

    fn prepare(&mut self) -> Result<()> {
        Ok(self.txn.prepare()?)
    }

    fn commit(self: Box<Self>) -> Result<bool> {
        super::txn_step(self.txn.commit(), conflict_or)
    }

    fn rollback(self: Box<Self>) -> Result<()> {
        Ok(self.txn.rollback()?)
    }
}

impl Engine for RocksTxnEngine {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        with_db!(self, db => Ok(db.put_opt(key, value, self.wo(*wo))?))
    }

    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        with_db!(self, db => Ok(db.delete_opt(key, self.wo(*wo))?))
    }

    fn merge(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()> {
        with_db!(self, db => Ok(db.merge_opt(key, value, self.wo(*wo))?))
    }

    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()> {
        let mut b = WriteBatchWithTransaction::<true>::default();
        for (op, k, v) in batch.iter() {
            match op {
                BatchOp::Put => b.put(k, v),
                BatchOp::Delete => b.delete(k),
                BatchOp::Merge => b.merge(k, v),
                BatchOp::DeleteRange => {
                    bail!("RocksDB's transaction DB takes no range deletion in a batch")
                }
            }
        }
        with_db!(self, db => Ok(db.write_opt(b, self.wo(*wo))?))
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        let value = with_db!(self, db => db.get_pinned_opt(key, &self.ro)?.map(|v| v.to_vec()));
        match value {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn new_iterator<'a>(
        &'a self,
        ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        let mut o = ReadOptions::default();
        o.set_verify_checksums(ro.verify_checksums);
        o.fill_cache(ro.fill_cache);
        if let Some(l) = bounds.lower {
            o.set_iterate_lower_bound(l);
        }
        if let Some(u) = bounds.upper {
            o.set_iterate_upper_bound(u);
        }
        Ok(match &self.db {
            TxnDb::Pessimistic(db) => Box::new(TxnIter { it: db.raw_iterator_opt(o) }),
            TxnDb::Optimistic(db) => Box::new(TxnIter { it: db.raw_iterator_opt(o) }),
        })
    }

    fn flush(&self) -> Result<()> {
        with_db!(self, db => Ok(db.flush()?))
    }

    fn compact_range(&self) -> Result<()> {
        match &self.db {
            TxnDb::Optimistic(db) => {
                db.compact_range(None::<&[u8]>, None::<&[u8]>);
                Ok(())
            }
            TxnDb::Pessimistic(_) => {
                bail!("compact: the rocksdb crate's TransactionDB has no CompactRange")
            }
        }
    }

    fn wait_for_compaction(&self) -> Result<()> {
        match &self.db {
            TxnDb::Optimistic(db) => Ok(db.wait_for_compact(&WaitForCompactOptions::default())?),
            TxnDb::Pessimistic(db) => loop {
                let busy = |p: &str| db.property_int_value(p).map(|v| v.unwrap_or(0) > 0);
                if !busy("rocksdb.compaction-pending")? && !busy("rocksdb.num-running-compactions")?
                {
                    return Ok(());
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            },
        }
    }

    fn property(&self, name: &str) -> Result<Option<String>> {
        with_db!(self, db => Ok(db.property_value(name)?))
    }

    fn stats_text(&self) -> Result<String> {
        super::rocks::property_text(self, "rocksdb.stats")
    }

    fn level_stats_text(&self) -> Result<String> {
        super::rocks::property_text(self, "rocksdb.levelstats")
    }

    fn sstables_text(&self) -> Result<String> {
        super::rocks::property_text(self, "rocksdb.sstables")
    }

    fn statistics_text(&self) -> Result<Option<String>> {
        Ok(self.opts.get_statistics())
    }

    fn transaction_kind(&self) -> Option<TxnKind> {
        Some(match self.db {
            TxnDb::Pessimistic(_) => TxnKind::Pessimistic,
            TxnDb::Optimistic(_) => TxnKind::Optimistic,
        })
    }

    fn begin_transaction(&self, wo: &WriteOpts, name: &str) -> Result<Box<dyn EngineTxn + '_>> {
        let w = self.wo(*wo);
        match &self.db {
            TxnDb::Pessimistic(db) => {
                let mut o = TransactionOptions::default();
                o.set_snapshot(true);
                o.set_lock_timeout(self.lock_timeout);
                let txn = db.transaction_opt(w, &o);
                txn.set_name(name.as_bytes())?;
                Ok(Box::new(RocksTxn { txn, at_snapshot: true }))
            }
            TxnDb::Optimistic(db) => {
                let txn = db.transaction_opt(w, &OptimisticTransactionOptions::default());
                Ok(Box::new(RocksTxn { txn, at_snapshot: false }))
            }
        }
    }
}
