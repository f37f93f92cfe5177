//! Read-modify-write and merges: updaterandom, mergerandom, readrandommergerandom
//! (`docs/db_bench.md` §5.6).

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::catalog::Merge;
use crate::stats::OpType;

pub(super) fn run(kind: Merge, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Merge::Update => update_random(cx, ts),
        Merge::MergeRandom => merge_random(cx, ts),
        Merge::ReadRandomMergeRandom => read_random_merge_random(cx, ts),
    }
}

/// Get then put of the same random key; the write rate limit counts the key and the value read.
fn update_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut gen = cx.values();
    let mut found = 0u64;
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, p.flags_num);
        let hit = cx.get(ts)?;
        let read_len = if hit { ts.scratch.len() } else { 0 };
        let mut bytes = 0u64;
        if hit {
            found += 1;
            bytes += (ts.key.len() + read_len) as u64;
        }
        cx.throttle_write_in_op((ts.key.len() + read_len) as u64);
        let v = gen.generate();
        engine.put(&ts.key, v, &p.wo).context("put error")?;
        bytes += (ts.key.len() + v.len()) as u64;
        Ok(Step::Did(OpType::Update, bytes))
    })?;
    ts.stats.add_message(&format!("( updates:{} found:{found})", p.readwrites));
    Ok(())
}

/// Merge operands to random keys of `--merge_keys`.
fn merge_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut gen = cx.values();
    let space = p.merge_keys.max(1);
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, space);
        let v = gen.generate();
        engine.merge(&ts.key, v, &p.wo).context("merge error")?;
        Ok(Step::Did(OpType::Merge, (ts.key.len() + v.len()) as u64))
    })?;
    ts.stats.add_message(&format!("( updates:{})", p.readwrites));
    Ok(())
}

/// Merges and gets of random keys of `--merge_keys`, `--mergereadpercent` of them merges.
fn read_random_merge_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let pct = cx.flags().mergereadpercent as u64;
    let mut gen = cx.values();
    let space = p.merge_keys.max(1);
    let (mut hits, mut gets, mut merges, mut max_len) = (0u64, 0u64, 0u64, 0usize);
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, space);
        if ts.rand.next_u64() % 100 < pct {
            engine.merge(&ts.key, gen.generate(), &p.wo).context("merge error")?;
            merges += 1;
            Ok(Step::Did(OpType::Merge, 0))
        } else {
            if cx.get(ts)? {
                hits += 1;
                max_len = max_len.max(ts.scratch.len());
            }
            gets += 1;
            Ok(Step::Did(OpType::Read, 0))
        }
    })?;
    ts.stats.add_message(&format!(
        "(reads:{gets} merges:{merges} total:{} hits:{hits} maxlength:{max_len})",
        p.readwrites
    ));
    Ok(())
}
