//! Reads mixed with writes: readwhilewriting, readwhilemerging, seekrandomwhilewriting,
//! seekrandomwhilemerging, multireadwhilewriting, newiteratorwhilewriting (a background writer
//! on thread 0), readwhilescanning (a background scan on thread 0) and readrandomwriterandom
//! (`docs/db_bench.md` §5.5).

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use super::{read, seek};
use crate::catalog::{Mixed, Reader};
use crate::engine::Bounds;
use crate::rate_limiter::RateLimiter;
use crate::stats::OpType;

pub(super) fn run(kind: Mixed, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Mixed::WhileWriting { merge, .. } if ts.tid == 0 => background_writer(merge, cx, ts),
        Mixed::WhileWriting { reader, .. } => match reader {
            Reader::Get => read::random(false, cx, ts),
            Reader::Seek => seek::seek_random(cx, ts),
            Reader::MultiGet => read::multi(cx, ts),
            Reader::NewIterator => read::new_iterators(cx, ts),
        },
        Mixed::WhileScanning if ts.tid == 0 => background_scan(cx, ts),
        Mixed::WhileScanning => read::random(false, cx, ts),
        Mixed::ReadRandomWriteRandom => read_random_write_random(cx, ts),
    }
}

/// Thread 0 of the *while* benchmarks: puts (or merges) random keys of `--bgwriter_num` until
/// the readers finish (with `--finish_after_writes`, until it has done `--writes`), at
/// `--benchmark_write_rate_limit` bytes/s of its own. Excluded from the result line.
fn background_writer(merge: bool, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    ts.stats.set_exclude_from_merge();
    let limiter =
        (f.benchmark_write_rate_limit > 0).then(|| RateLimiter::new(f.benchmark_write_rate_limit));
    let space = if f.bgwriter_num > 0 { f.bgwriter_num as u64 } else { p.flags_num };
    let mut gen = cx.values();
    let mut written = 0u64;
    let mut hint_printed = false;
    cx.until_stopped().run(ts, |ts| {
        if f.finish_after_writes && written == p.writes {
            eprintln!("Exiting the writer after {written} writes...");
            return Ok(Step::Stop);
        }
        if cx.shared.others_done() {
            if !f.finish_after_writes {
                return Ok(Step::Stop);
            }
            if !hint_printed {
                eprintln!(
                    "Reads are finished. Have {} more writes to do",
                    p.writes.saturating_sub(written)
                );
                hint_printed = true;
            }
        }
        p.key.encode(ts.rand.next_u64() % space, p.flags_num, &mut ts.key);
        let v = gen.generate();
        if merge { engine.merge(&ts.key, v, &p.wo) } else { engine.put(&ts.key, v, &p.wo) }
            .context("put or merge error")?;
        written += 1;
        let n = (ts.key.len() + v.len()) as u64;
        if let Some(rl) = &limiter {
            rl.request(n);
        }
        Ok(Step::Did(OpType::Write, n))
    })
}

/// Thread 0 of readwhilescanning (db_bench's `BGScan`): one iterator, made once, stepped
/// forward `--reads` times (or for `--duration` seconds) and sought to the first key again
/// whenever it runs off the end. Each step is a seek in the result line, as db_bench counts
/// it; an iterator error ends the benchmark with that error.
fn background_scan(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    eprintln!("num reads to do {}", p.reads);
    let mut it = cx.engine.new_iterator(&p.ro, Bounds::default())?;
    cx.ops(p.reads, 1, true).run(ts, |_| {
        if it.valid() {
            it.next();
        } else {
            it.status().context("iterator error")?;
            it.seek_to_first();
        }
        Ok(Step::Did(OpType::Seek, 0))
    })?;
    it.status().context("iterator error")
}

/// Gets and puts of random keys, `--readwritepercent` of every 100 operations gets.
fn read_random_write_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let pct = cx.flags().readwritepercent as u64;
    let mut gen = cx.values();
    let (mut found, mut gets_left, mut puts_left, mut reads, mut writes) = (0u64, 0, 0, 0u64, 0u64);
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, p.flags_num);
        if gets_left == 0 && puts_left == 0 {
            gets_left = pct;
            puts_left = 100 - pct;
        }
        if gets_left > 0 {
            if cx.get(ts)? {
                found += 1;
            }
            gets_left -= 1;
            reads += 1;
            Ok(Step::Did(OpType::Read, 0))
        } else {
            engine.put(&ts.key, gen.generate(), &p.wo).context("put error")?;
            puts_left -= 1;
            writes += 1;
            Ok(Step::Did(OpType::Write, 0))
        }
    })?;
    ts.stats.add_message(&format!(
        "( reads:{reads} writes:{writes} total:{} found:{found})",
        p.readwrites
    ));
    Ok(())
}
