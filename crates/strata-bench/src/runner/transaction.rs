//! db_bench's `randomtransaction` (`docs/db_bench.md` §5.11).
//!
//! Each operation picks an amount (1..100) and, for every one of the `--transaction_sets`
//! sets in a random order, a random key of `--num`: it reads the key (for update one time in
//! two), and writes it back increased by the amount. Keys are the set's number in four digits
//! (`0001`, ...) followed by the key's number in decimal; values are decimal numbers, a missing
//! key counting as 0. So every set always sums to the same total.
//!
//! - `--transaction_db`: each operation is a named pessimistic transaction reading at a snapshot
//!   taken when it begins (each lock waits at most `--transaction_lock_timeout` ms); nine in ten
//!   are prepared (two-phase commit) before they commit, and one in twenty is rolled back
//!   instead of committed.
//! - `--optimistic_transaction_db`: each operation is an optimistic transaction, checked when it
//!   commits.
//! - neither: the reads are plain gets and the writes one batch (no isolation: concurrent
//!   threads may lose updates, and nothing is checked after).
//!
//! A conflict (a lock timeout, a write conflict, a deadlock, an unverifiable commit) aborts the
//! transaction and counts as an abort, as db_bench counts failures. After the run, with
//! transactions, every set must sum to the same total (db_bench's RandomTransactionVerify):
//! `RandomTransactionVerify Success.` is printed, or the benchmark fails naming the sets.

use anyhow::{anyhow, bail, Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::engine::{Batch, Bounds, Engine, EngineTxn, ReadOpts, TxnKind};
use crate::stats::OpType;

/// The key of number `n` in set `set` (0-based).
fn set_key(set: u64, n: u64, out: &mut Vec<u8>) {
    use std::io::Write as _;
    out.clear();
    let _ = write!(out, "{:04}{n}", set + 1);
}

/// A stored value as a number (an unparsable one is an error naming the key).
fn parse_value(key: &[u8], v: &[u8]) -> Result<u64> {
    std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()).ok_or_else(|| {
        anyhow!(
            "key {:?} holds {:?}, not a decimal number (was the DB written by another benchmark?)",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(v)
        )
    })
}

pub(super) fn run(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let sets = cx.flags().transaction_sets.max(1) as u64;
    let num = p.flags_num.max(1);
    let kind = engine.transaction_kind();
    let (mut done, mut aborts, mut txn_id) = (0u64, 0u64, 0u64);
    let mut order: Vec<u64> = (0..sets).collect();
    let mut value = Vec::new();
    let mut batch = Batch::default();
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        let incr = ts.rand.next_u64() % 100 + 1;
        // A random order of the sets (Fisher-Yates).
        for i in (1..order.len()).rev() {
            order.swap(i, (ts.rand.next_u64() % (i as u64 + 1)) as usize);
        }
        let mut bytes = 0u64;
        let committed = match kind {
            None => {
                batch.clear();
                for &set in &order {
                    set_key(set, ts.rand.next_u64() % num, &mut ts.key);
                    let hit = engine.get(&ts.key, &p.ro, &mut ts.scratch).context("get error")?;
                    let old = if hit { parse_value(&ts.key, &ts.scratch)? } else { 0 };
                    value.clear();
                    value.extend_from_slice((old + incr).to_string().as_bytes());
                    batch.put(&ts.key, &value);
                    bytes += (ts.key.len() + value.len()) as u64;
                }
                engine.write(&batch, &p.wo).context("write error")?;
                true
            }
            Some(kind) => {
                txn_id += 1;
                let name = format!("txn{}-{txn_id}", ts.tid);
                let mut txn = engine.begin_transaction(&p.wo, &name)?;
                let mut ok = true;
                for &set in &order {
                    set_key(set, ts.rand.next_u64() % num, &mut ts.key);
                    let for_update = ts.rand.next_u64().is_multiple_of(2);
                    let Some(hit) = txn.get(&ts.key, for_update, &mut ts.scratch)? else {
                        ok = false;
                        break;
                    };
                    let old = if hit { parse_value(&ts.key, &ts.scratch)? } else { 0 };
                    value.clear();
                    value.extend_from_slice((old + incr).to_string().as_bytes());
                    if !txn.put(&ts.key, &value)? {
                        ok = false;
                        break;
                    }
                    bytes += (ts.key.len() + value.len()) as u64;
                }
                finish(kind, txn, ok, &mut ts.rand)?
            }
        };
        done += 1;
        if !committed {
            aborts += 1;
        }
        Ok(Step::Did(OpType::Others, bytes))
    })?;
    ts.stats.add_message(&match kind {
        Some(_) => format!("( transactions:{done} aborts:{aborts})"),
        None => format!("( batches:{done} )"),
    });
    Ok(())
}

/// Ends a transaction whose reads and writes went through (`ok`) or hit a conflict: prepares
/// nine in ten pessimistic ones first, rolls back one in twenty. Returns whether it committed.
fn finish(
    kind: TxnKind,
    mut txn: Box<dyn EngineTxn + '_>,
    ok: bool,
    rand: &mut crate::random::Mt64,
) -> Result<bool> {
    if !ok {
        txn.rollback()?;
        return Ok(false);
    }
    if kind == TxnKind::Pessimistic && !rand.next_u64().is_multiple_of(10) {
        txn.prepare()?;
    }
    if rand.next_u64().is_multiple_of(20) {
        txn.rollback()?;
        return Ok(true); // rolled back on purpose, not an abort
    }
    txn.commit()
}

/// db_bench's RandomTransactionVerify: with transactions, every set sums to the same total.
/// Pessimistic transactions guarantee it (a read at the snapshot, then a write that is refused
/// if the key changed since): a failure is an error. Optimistic ones without a snapshot do
/// not: a plain read is not checked, so a key written between it and the transaction's own
/// write loses that update (RocksDB's rule too); the failure is printed as db_bench does.
pub(super) fn verify(engine: &dyn Engine, sets: u64) -> Result<Option<String>> {
    let Some(kind) = engine.transaction_kind() else { return Ok(None) };
    let mut totals = Vec::new();
    let mut it = engine.new_iterator(&ReadOpts::default(), Bounds::default())?;
    for set in 0..sets {
        let prefix = format!("{:04}", set + 1);
        let mut total = 0u64;
        it.seek(prefix.as_bytes());
        while it.valid() && it.key().starts_with(prefix.as_bytes()) {
            total += parse_value(it.key(), it.value())?;
            it.next();
        }
        it.status()?;
        totals.push(total);
    }
    if let Some(i) = totals.iter().position(|t| *t != totals[0]) {
        let what = format!("set 1 sums to {}, set {} to {}", totals[0], i + 1, totals[i]);
        if kind == TxnKind::Pessimistic {
            bail!(
                "RandomTransactionVerify FAILED: {what} (a transaction was applied in part, or \
                 an update was lost)"
            );
        }
        return Ok(Some(format!(
            "RandomTransactionVerify FAILED!! {what} (optimistic transactions without a \
             snapshot do not check plain reads: an update read that way can be lost)\n"
        )));
    }
    Ok(Some("RandomTransactionVerify Success.\n".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_db_benchs() {
        let mut k = Vec::new();
        set_key(0, 7731, &mut k);
        assert_eq!(k, b"00017731");
        set_key(41, 0, &mut k);
        assert_eq!(k, b"00420");
        assert_eq!(parse_value(b"k", b"125").unwrap(), 125);
        let e = parse_value(b"0001", b"x1").unwrap_err().to_string();
        assert!(e.contains("\"0001\"") && e.contains("not a decimal number"), "{e}");
    }
}
