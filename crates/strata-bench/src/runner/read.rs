//! Point reads and scans: readseq, readreverse, readtocache, readrandom, readrandomsmall,
//! readmissing, readhot, readrandomfast, readtorowcache, multireadrandom, newiterator,
//! approximatesizerandom, readrandomoperands, readrandomentity, multireadentity,
//! approximatememtablestats
//! (`docs/db_bench.md` §5.3).

use anyhow::{bail, Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::catalog::Read;
use crate::engine::{Bounds, Operands};
use crate::histogram::Histogram;
use crate::keys::random_read_key;
use crate::stats::OpType;

pub(super) fn run(kind: Read, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Read::Seq { reverse } => scan(reverse, cx, ts),
        Read::Random { hot } => random(hot, cx, ts),
        Read::RandomFast => random_fast(cx, ts),
        Read::EveryKey => every_key(cx, ts),
        Read::Multi => multi(cx, ts),
        Read::NewIterator => new_iterators(cx, ts),
        Read::ApproximateSizes => approximate_sizes(cx, ts),
        Read::Operands => random_operands(cx, ts),
        Read::Entity => random_entities(cx, ts),
        Read::MultiEntity => multi_with(cx, ts, |cx, keys, ks, _| {
            cx.engine.multi_get_entity(keys, ks, &cx.p.ro).context("MultiGetEntity error")
        }),
        Read::MemtableStats => memtable_stats(cx, ts),
    }
}

/// One iterator from one end: `--reads` entries per thread, or fewer if the DB ends first.
fn scan(reverse: bool, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    let mut it = cx.engine.new_iterator(&p.ro, Bounds::default())?;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    cx.ops(p.reads, 1, false).read_limited(1024).run(ts, |_| {
        if !it.valid() {
            return Ok(Step::Stop);
        }
        let bytes = (it.key().len() + it.value().len()) as u64;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
        Ok(Step::Did(OpType::Read, bytes))
    })?;
    it.status().context("iterator error")
}

/// `--reads` gets of random keys per thread (`hot`: from the first 1% of the key space).
pub(super) fn random(hot: bool, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    let exp_range = cx.flags().read_random_exp_range;
    let hot_range = p.flags_num.div_ceil(100).max(1);
    let key = |ts: &mut Worker<'_>| {
        if hot {
            ts.rand.next_u64() % hot_range
        } else {
            random_read_key(&mut ts.rand, p.flags_num, exp_range)
        }
    };
    gets(cx, ts, p.reads, true, key, value)
}

/// A get's lookup for [`gets`]: the value's bytes when found.
fn value(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<Option<u64>> {
    Ok(cx.get(ts)?.then_some(ts.scratch.len() as u64))
}

/// db_bench's `readtorowcache`: gets of keys 0 to `--num` - 1 in order on each thread (with
/// `--use_existing_keys`, every key of the DB); `--duration` is not read.
fn every_key(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let mut next = 0u64;
    let key = |_: &mut Worker<'_>| {
        next += 1;
        next - 1
    };
    gets(cx, ts, cx.p.flags_num, false, key, value)
}

/// `max` lookups per thread (or `--duration` seconds when `timed`) of the key numbers `key`
/// draws, one operation each: `lookup` reads `ts.key` and gives the bytes it found beside the
/// key (a value, operands, columns), `None` when the key is missing; the bytes are the key's
/// and those. Message: `(found of read found)`, ending in a newline as db_bench's does.
fn gets(
    cx: &Ctx<'_>,
    ts: &mut Worker<'_>,
    max: u64,
    timed: bool,
    mut key: impl FnMut(&mut Worker<'_>) -> u64,
    mut lookup: impl FnMut(&Ctx<'_>, &mut Worker<'_>) -> Result<Option<u64>>,
) -> Result<()> {
    let p = cx.p;
    let (mut read, mut found) = (0u64, 0u64);
    cx.ops(max, 1, timed).read_limited(256).run(ts, |ts| {
        let k = key(ts);
        p.key.encode(k, p.flags_num, &mut ts.key);
        read += 1;
        let mut bytes = 0;
        if let Some(b) = lookup(cx, ts)? {
            found += 1;
            bytes = ts.key.len() as u64 + b;
        }
        Ok(Step::Did(OpType::Read, bytes))
    })?;
    ts.stats.add_message(&format!("({found} of {read} found)\n"));
    Ok(())
}

/// db_bench's `readrandomoperands`: `readrandom` through GetMergeOperands, the bytes those of
/// the key and its operands. Room is made for 8 operands at first; a key with more than any
/// before is asked again with room for all of its (db_bench's retry after `Incomplete`), and
/// the room grows to it.
fn random_operands(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, exp_range) = (cx.p, cx.flags().read_random_exp_range);
    let mut room = 8;
    let mut operands = Vec::new();
    let key = |ts: &mut Worker<'_>| random_read_key(&mut ts.rand, p.flags_num, exp_range);
    gets(cx, ts, p.reads, true, key, |cx, ts| {
        let e = cx.engine;
        let mut got = e.get_merge_operands(&ts.key, &p.ro, room, &mut operands);
        if matches!(got, Ok(Operands::MoreThanMax)) {
            got = e.get_merge_operands(&ts.key, &p.ro, 0, &mut operands);
            room = room.max(operands.len());
        }
        let found = got.context("GetMergeOperands error")? == Operands::Found;
        Ok(found.then(|| operands.iter().map(|o| o.len() as u64).sum()))
    })
}

/// db_bench's `readrandomentity`: `readrandom` through GetEntity, the bytes those of the key
/// and of every column's name and value.
fn random_entities(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, exp_range) = (cx.p, cx.flags().read_random_exp_range);
    let key = |ts: &mut Worker<'_>| random_read_key(&mut ts.rand, p.flags_num, exp_range);
    gets(cx, ts, p.reads, true, key, |cx, ts| {
        cx.engine.get_entity(&ts.key, &p.ro).context("GetEntity error")
    })
}

/// db_bench's `readrandomfast`: gets in steps of 100 of keys drawn below the power of two at
/// or above `--num` by masking (no division), so up to half of them are beyond the key space
/// and missing; no bytes counted. Message: `(found of read found, issued N non-exist keys)`.
fn random_fast(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    const STEP: u64 = 100;
    let p = cx.p;
    let mask = p.flags_num.next_power_of_two() - 1;
    let (mut read, mut found, mut beyond) = (0u64, 0u64, 0u64);
    cx.ops(p.reads, STEP, true).read_limited(STEP).run(ts, |ts| {
        for _ in 0..STEP {
            let k = ts.rand.next_u64() & mask;
            p.key.encode(k, p.flags_num, &mut ts.key);
            read += 1;
            found += u64::from(cx.get(ts)?);
            beyond += u64::from(k >= p.flags_num);
        }
        Ok(Step::Did(OpType::Read, 0))
    })?;
    ts.stats.add_message(&format!("({found} of {read} found, issued {beyond} non-exist keys)\n"));
    Ok(())
}

/// `--reads` iterators per thread (or `--duration` seconds), each made and dropped without a
/// seek: what setting up an iterator costs (db_bench's `IteratorCreation`).
pub(super) fn new_iterators(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    cx.ops(p.reads, 1, true).run(ts, |_| {
        let it = cx.engine.new_iterator(&p.ro, Bounds::default())?;
        drop(std::hint::black_box(it));
        Ok(Step::Did(OpType::Others, 0))
    })
}

/// db_bench's `approximatesizerandom`: `--reads` calls per thread (or `--duration` seconds),
/// each asking the approximate sizes of `--batch_size` ranges between two random keys (the
/// smaller first) and counting `--batch_size` operations. Message: `(Avg approx size=<s>)`,
/// the mean over every range, as C's `%g` prints it.
fn approximate_sizes(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    eprintln!("entries_per_batch = {}", p.batch);
    let exp_range = cx.flags().read_random_exp_range;
    let ks = p.key.key_size;
    let mut ranges = vec![0u8; 2 * ks * p.batch as usize];
    let mut sizes = Vec::new();
    let (mut sum, mut count) = (0u64, 0u64);
    cx.ops(p.reads, 1, true).counted_as(p.batch).run(ts, |ts| {
        for range in ranges.chunks_mut(2 * ks) {
            let a = random_read_key(&mut ts.rand, p.flags_num, exp_range);
            let b = random_read_key(&mut ts.rand, p.flags_num, exp_range);
            let (lo, hi) = (a.min(b), a.max(b));
            p.key.encode(lo, p.flags_num, &mut ts.key);
            range[..ks].copy_from_slice(&ts.key);
            p.key.encode(hi, p.flags_num, &mut ts.key);
            range[ks..].copy_from_slice(&ts.key);
        }
        cx.engine.approximate_sizes(&ranges, ks, &mut sizes).context("approximate sizes")?;
        sum += sizes.iter().sum::<u64>();
        count += p.batch;
        Ok(Step::Did(OpType::Others, 0))
    })?;
    ts.stats
        .add_message(&format!("(Avg approx size={})", crate::printf::g(sum as f64 / count as f64)));
    Ok(())
}

/// db_bench's `approximatememtablestats`: `--reads` calls per thread (or `--duration`
/// seconds) of the engine's `GetApproximateMemTableStats` over `--batch_size` keys from a
/// random one below `--num - --batch_size`, one operation each; the message is the counts'
/// histogram, headed by the count expected.
fn memtable_stats(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let p = cx.p;
    if p.flags_num < p.batch {
        bail!("approximatememtablestats: --num={} is below --batch_size={}", p.flags_num, p.batch);
    }
    let range = (p.flags_num - p.batch).max(1);
    let mut start = Vec::new();
    let mut counts = Histogram::new();
    cx.ops(p.reads, 1, true).run(ts, |ts| {
        let first = ts.rand.next_u64() % range;
        p.key.encode(first, p.flags_num, &mut start);
        p.key.encode(first + p.batch, p.flags_num, &mut ts.key);
        let (count, _) = cx.engine.approximate_memtable_stats(&start, &ts.key)?;
        counts.add(count);
        Ok(Step::Did(OpType::Others, 0))
    })?;
    ts.stats.add_message(&format!(
        "\nReported entry count stats (expected {}):\n{}",
        p.batch,
        counts.to_text()
    ));
    Ok(())
}

/// MultiGet of `--batch_size` keys: random, or `--multiread_stride` apart from a random first.
pub(super) fn multi(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    multi_with(cx, ts, |cx, keys, ks, ts| {
        let mut value_bytes = 0u64;
        let hits = cx
            .engine
            .multi_get(keys, ks, &cx.p.ro, &mut ts.scratch, &mut value_bytes)
            .context("multiget error")?;
        Ok((hits, value_bytes))
    })
}

/// [`multi`]'s batches of keys (`keys`, `ks` bytes each) through `lookup`, which gives how
/// many it found and the bytes it found beside their keys (db_bench's `multireadrandom` and,
/// through MultiGetEntity, `multireadentity`).
fn multi_with(
    cx: &Ctx<'_>,
    ts: &mut Worker<'_>,
    mut lookup: impl FnMut(&Ctx<'_>, &[u8], usize, &mut Worker<'_>) -> Result<(u64, u64)>,
) -> Result<()> {
    let p = cx.p;
    eprintln!("entries_per_batch = {}", p.batch);
    let stride = cx.flags().multiread_stride as u64;
    let exp_range = cx.flags().read_random_exp_range;
    let ks = p.key.key_size;
    let mut keys = vec![0u8; ks * p.batch as usize];
    let (mut read, mut found) = (0u64, 0u64);
    cx.ops(p.reads, p.batch, true).run(ts, |ts| {
        let mut base = random_read_key(&mut ts.rand, p.flags_num, exp_range);
        if stride > 0 && base + (p.batch - 1) * stride >= p.flags_num {
            base = p.flags_num.saturating_sub(p.batch * stride);
        }
        for (i, slot) in keys.chunks_mut(ks).enumerate() {
            let k = if stride > 0 {
                base + i as u64 * stride
            } else if i == 0 {
                base
            } else {
                random_read_key(&mut ts.rand, p.flags_num, exp_range)
            };
            p.key.encode(k, p.flags_num, &mut ts.key);
            slot.copy_from_slice(&ts.key);
        }
        let (hits, value_bytes) = lookup(cx, &keys, ks, ts)?;
        found += hits;
        read += p.batch;
        Ok(Step::Did(OpType::Read, hits * ks as u64 + value_bytes))
    })?;
    ts.stats.add_message(&format!("({found} of {read} found)"));
    Ok(())
}
