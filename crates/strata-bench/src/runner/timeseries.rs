//! db_bench's `timeseries` (`docs/db_bench.md` §5.5): thread 0 writes time series entries
//! and reports its own `timeseries write` line; the other threads, until it is done, read
//! (or with `--expire_style=delete`, the first `--num_deletion_threads` of them delete) by
//! id.
//!
//! A key is the key of an id (a random number below `--key_id_range`, laid out as any key
//! number) whose bytes 8..16 (fewer when the key is shorter) hold, big-endian, the write's
//! timestamp: a counter of the run's writes, one per put. An entry is expired once the
//! counter has gone more than `--time_range` past its timestamp; `--expire_style` says who
//! removes such entries: nobody (`none`), a compaction filter (`compaction_filter`, installed
//! when the DB is opened for the benchmark and kept for the rest of the run, as db_bench
//! keeps it) or the deleting threads (`delete`).
//!
//! A reader seeks the key of a random id with its last 8 bytes zeroed and steps while the
//! entries start with those whole bytes, as db_bench does; with 16-byte keys only an entry
//! of timestamp 0 does, so a read is mostly one seek. A deleter steps the same way, deleting
//! expired entries until it meets one that is not.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::engine::Bounds;
use crate::expiry::{expired, stamp};
use crate::rate_limiter::RateLimiter;
use crate::stats::OpType;

pub(super) fn run(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let clock = cx.cfg.time_series_clock.clone().context("timeseries runs without its clock")?;
    if ts.tid == 0 {
        write(cx, ts, &clock)
    } else {
        let f = cx.flags();
        let delete = f.expire_style == "delete" && ts.tid as i64 <= f.num_deletion_threads;
        read_or_delete(cx, ts, &clock, delete)
    }
}

/// `--writes` puts (or `--duration` seconds) at `--benchmark_write_rate_limit` of its own.
fn write(cx: &Ctx<'_>, ts: &mut Worker<'_>, clock: &AtomicU64) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    ts.stats.set_exclude_from_merge();
    let limiter =
        (f.benchmark_write_rate_limit > 0).then(|| RateLimiter::new(f.benchmark_write_rate_limit));
    let ids = f.key_id_range as u64;
    let mut gen = cx.values();
    cx.ops(p.writes, 1, true).run(ts, |ts| {
        p.key.encode(ts.rand.next_u64() % ids, p.flags_num, &mut ts.key);
        stamp(&mut ts.key, clock.fetch_add(1, Ordering::AcqRel));
        let v = gen.generate();
        engine.put(&ts.key, v, &p.wo).context("put error")?;
        let n = (ts.key.len() + v.len()) as u64;
        if let Some(rl) = &limiter {
            rl.request(n);
        }
        Ok(Step::Did(OpType::Write, n))
    })?;
    ts.stats.stop();
    ts.stats.report("timeseries write");
    Ok(())
}

/// Until the writer is done: seeks by id, reading (or deleting expired) entries.
fn read_or_delete(
    cx: &Ctx<'_>,
    ts: &mut Worker<'_>,
    clock: &AtomicU64,
    delete: bool,
) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let ids = f.key_id_range as u64;
    let time_range = f.time_range;
    let mut tail = if f.use_tailing_iterator {
        Some(engine.new_iterator(&p.ro, Bounds::default())?)
    } else {
        None
    };
    let mut value_buf = [0u8; 256];
    let (mut read, mut found) = (0u64, 0u64);
    cx.until_stopped().run(ts, |ts| {
        if cx.shared.any_done() {
            return Ok(Step::Stop);
        }
        let mut fresh;
        let it = match &mut tail {
            Some(t) => t.as_mut(),
            None => {
                fresh = engine.new_iterator(&p.ro, Bounds::default())?;
                fresh.as_mut()
            }
        };
        p.key.encode(ts.rand.next_u64() % ids, p.flags_num, &mut ts.key);
        let len = ts.key.len();
        ts.key[len.saturating_sub(8)..].fill(0);
        read += 1;
        let (mut hit, mut steps, mut bytes, mut deleted) = (false, 0u64, 0u64, 0u64);
        it.seek(&ts.key);
        while it.valid() && it.key().starts_with(&ts.key) {
            hit = true;
            if delete {
                bytes += it.key().len() as u64;
                if !expired(clock.load(Ordering::Acquire), it.key(), time_range) {
                    break;
                }
                engine.delete(it.key(), &p.wo).context("delete error")?;
                deleted += 1;
            } else {
                let v = it.value();
                let n = v.len().min(value_buf.len());
                value_buf[..n].copy_from_slice(&v[..n]);
                bytes += (it.key().len() + v.len()) as u64;
                steps += 1;
            }
            it.next();
        }
        it.status().context("iterator error")?;
        found += u64::from(hit);
        std::hint::black_box(&value_buf);
        if let Some(rl) = cx.shared.read_limiter() {
            rl.request(1);
        }
        // As db_bench: each entry read or deleted is one operation; a seek that finds
        // nothing is none.
        Ok(if delete {
            Step::DidN(OpType::Delete, deleted, bytes)
        } else {
            Step::DidN(OpType::Read, steps, bytes)
        })
    })?;
    ts.stats.add_message(&format!("({found} of {read} found)"));
    Ok(())
}
