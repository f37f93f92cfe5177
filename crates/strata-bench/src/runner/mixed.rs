//! Reads mixed with writes: readwhilewriting, readwhilemerging, seekrandomwhilewriting,
//! seekrandomwhilemerging, multireadwhilewriting, newiteratorwhilewriting (a background writer
//! on thread 0), readwhilescanning (a background scan on thread 0), readrandomwriterandom
//! (`docs/db_bench.md` §5.5) and mixgraph (§5.12, its model in `crate::mixgraph`).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use super::range_tombstones::RangeTombstones;
use super::{read, seek};
use crate::catalog::{Mixed, Reader};
use crate::engine::{Batch, Bounds};
use crate::keys::random_read_key;
use crate::mixgraph::{add_noise, sine_rate, Model, Query};
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
        Mixed::MixGraph => mix_graph(cx, ts),
        Mixed::RandomWithVerify => random_with_verify(cx, ts),
        Mixed::TimeSeries => super::timeseries::run(cx, ts),
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
    let mut ranges = RangeTombstones::new(f);
    let mut deletion = Batch::default();
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
        if let Some(r) = ranges.as_mut().filter(|r| r.due(written)) {
            deletion.clear();
            r.add(ts.rand.next_u64() % p.flags_num, &p.key, p.flags_num, &mut deletion);
            engine.write(&deletion, &p.wo).context("deleterange error")?;
        }
        Ok(Step::Did(OpType::Write, n))
    })?;
    if let Some(r) = &ranges {
        r.report();
    }
    Ok(())
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

/// db_bench's `mixgraph`: `--reads` operations per thread (or `--duration` seconds), each a
/// get, a put or a seek with a scan as [`Model`] draws it. A get counts its key and value
/// when found; a seek (a new iterator each) counts the entries its scan copies out; puts
/// count no bytes, as in db_bench. The read limiter is asked for 100 operations every 100
/// gets and seeks, the write limiter every 100 puts; under `--sine_mix_rate` the thread sets
/// both to the sine's rate, shared by the ratios, every interval. Message:
/// `( Gets:<g> Puts:<p> Seek:<s>, reads <found> in <gets + seeks> found, avg size: <v> value,
/// <l> scan)` and a newline.
fn mix_graph(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let model = Model::new(f, p.flags_num as i64).context("mixgraph")?;
    let num = p.flags_num;
    let mut gen = cx.values();
    let mut copy = vec![0u8; model.value_max as usize];
    let (mut gets, mut puts, mut seeks, mut found) = (0u64, 0u64, 0u64, 0u64);
    let (mut value_bytes, mut scanned) = (0u64, 0u64);
    let interval = Duration::from_millis(f.sine_mix_rate_interval_milliseconds);
    let start = Instant::now();
    let mut last_change = start;
    cx.ops(p.reads, 1, true).run(ts, |ts| {
        let r = random_read_key(&mut ts.rand, num, f.read_random_exp_range);
        let u = r as f64 / num as f64;
        p.key.encode(model.key(r as i64), num, &mut ts.key);
        if p.sine_mix && last_change.elapsed() > interval {
            last_change = Instant::now();
            let t = (last_change - start).as_secs_f64();
            let draw = ts.rand.next_u64();
            let rate = add_noise(sine_rate(f, t), f.sine_mix_rate_noise, f.sine_a, draw);
            let [get, put, seek] = model.queries.ratios;
            for (limiter, share) in
                [(cx.shared.read_limiter(), get + seek), (cx.shared.write_limiter(), put)]
            {
                if let Some(rl) = limiter.filter(|_| rate * share > 0.0) {
                    rl.set_rate(rate * share);
                }
            }
        }
        match model.queries.pick(r as i64) {
            Query::Get => {
                gets += 1;
                let mut bytes = 0;
                if cx.get(ts)? {
                    found += 1;
                    bytes = (ts.key.len() + ts.scratch.len()) as u64;
                }
                if (gets + seeks).is_multiple_of(100) {
                    if let Some(rl) = cx.shared.read_limiter() {
                        rl.request(100);
                    }
                }
                Ok(Step::Did(OpType::Read, bytes))
            }
            Query::Put => {
                puts += 1;
                let size = model.value_size(u, f);
                value_bytes += size as u64;
                engine.put(&ts.key, gen.generate_len(size), &p.wo).context("put error")?;
                if puts.is_multiple_of(100) {
                    if let Some(rl) = cx.shared.write_limiter() {
                        rl.request(100);
                    }
                }
                Ok(Step::Did(OpType::Write, 0))
            }
            Query::Seek => {
                let mut it = engine.new_iterator(&p.ro, Bounds::default())?;
                it.seek(&ts.key);
                seeks += 1;
                if it.valid() && it.key() == ts.key.as_slice() {
                    found += 1;
                }
                let (mut bytes, mut j) = (0u64, 0u64);
                let len = model.scan_len(u, f);
                while j < len && it.valid() {
                    let v = it.value();
                    let n = v.len().min(copy.len());
                    copy[..n].copy_from_slice(&v[..n]);
                    bytes += (it.key().len() + v.len()) as u64;
                    it.next();
                    j += 1;
                }
                it.status().context("iterator error")?;
                std::hint::black_box(&copy);
                scanned += j;
                Ok(Step::Did(OpType::Seek, bytes))
            }
        }
    })?;
    ts.stats.add_message(&format!(
        "( Gets:{gets} Puts:{puts} Seek:{seeks}, reads {found} in {} found, avg size: {} value, \
         {} scan)\n",
        gets + seeks,
        crate::printf::fixed1(value_bytes as f64 / puts as f64),
        crate::printf::fixed1(scanned as f64 / seeks as f64),
    ));
    Ok(())
}

/// db_bench's `randomwithverify`: `--reads`/`--writes` operations per thread (the larger;
/// both unset: `--num`) on key triples `K0`, `K1`, `K2` of `--numdistinct` keys `K`, in
/// blocks of 100 operations: `--readwritepercent` gets first, then the puts, then
/// `--deletepercent` deletes. A put writes the three keys with one value in one batch, a
/// delete removes them in one batch, a get reads them at one snapshot; three values not all
/// equal (absent counts as empty) are printed as db_bench prints them, counted, and fail the
/// benchmark at its end (db_bench goes on without failing). Message:
/// `( get:<g> put:<p> del:<d> total:<n> found:<f>)`, *found* when the last of the three was.
fn random_with_verify(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let distinct = f.numdistinct.max(1) as u64;
    let mut gen = cx.values();
    let mut batch = crate::engine::Batch::default();
    let (mut gets, mut puts, mut dels, mut found, mut bad) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut get_left, mut put_left, mut del_left) = (0i64, 0i64, 0i64);
    let mut values: [Vec<u8>; 3] = Default::default();
    let mut key = Vec::new();
    cx.ops(p.readwrites, 1, false).run(ts, |ts| {
        if get_left == 0 && put_left == 0 && del_left == 0 {
            get_left = f.readwritepercent;
            del_left = f.deletepercent;
            put_left = 100 - get_left - del_left;
        }
        p.key.encode(ts.rand.next_u64() % distinct, distinct, &mut ts.key);
        let triple = |key: &mut Vec<u8>, base: &[u8], suffix: u8| {
            key.clear();
            key.extend_from_slice(base);
            key.push(suffix);
        };
        if get_left > 0 {
            let snap = engine.snapshot().context("randomwithverify reads at a snapshot")?;
            let mut last = false;
            for (i, v) in values.iter_mut().enumerate() {
                triple(&mut key, &ts.key, b'0' + i as u8);
                last = snap.get(&key, &p.ro, v).context("get error")?;
                if !last {
                    v.clear();
                }
            }
            drop(snap);
            if values[0] != values[1] || values[1] != values[2] {
                bad += 1;
                eprintln!(
                    "inconsistent values for key {}: {}, {}, {}",
                    ts.key.escape_ascii(),
                    values[0].escape_ascii(),
                    values[1].escape_ascii(),
                    values[2].escape_ascii()
                );
            }
            found += u64::from(last);
            get_left -= 1;
            gets += 1;
            Ok(Step::Did(OpType::Read, 0))
        } else if put_left > 0 {
            batch.clear();
            let v = gen.generate();
            for suffix in [b'2', b'1', b'0'] {
                triple(&mut key, &ts.key, suffix);
                batch.put(&key, v);
            }
            engine.write(&batch, &p.wo).context("putmany error")?;
            put_left -= 1;
            puts += 1;
            Ok(Step::Did(OpType::Write, 0))
        } else {
            batch.clear();
            for suffix in [b'1', b'2', b'0'] {
                triple(&mut key, &ts.key, suffix);
                batch.delete(&key);
            }
            engine.write(&batch, &p.wo).context("deletemany error")?;
            del_left -= 1;
            dels += 1;
            Ok(Step::Did(OpType::Delete, 0))
        }
    })?;
    ts.stats.add_message(&format!(
        "( get:{gets} put:{puts} del:{dels} total:{} found:{found})",
        p.readwrites
    ));
    if bad > 0 {
        anyhow::bail!("randomwithverify: {bad} of {gets} triples read with values not all equal");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::engine::WriteOpts;
    use crate::runner::{Params, Runner};

    #[test]
    fn randomwithverify_fails_on_a_triple_whose_values_differ() {
        let args = [
            "--engine=memory",
            "--db=/mem/verify",
            "--benchmarks=randomwithverify",
            "--use_existing_db=1",
            "--numdistinct=1",
            "--readwritepercent=100",
            "--deletepercent=0",
            "--num=10",
            "--seed=1",
        ];
        let cfg = Config::from_args(&args).expect("config");
        let engine = cfg.engine.open(&cfg).expect("open");
        let mut key = Vec::new();
        Params::new(&cfg).key.encode(0, 1, &mut key);
        for (suffix, value) in [(b'0', "a"), (b'1', "a"), (b'2', "b")] {
            let mut k = key.clone();
            k.push(suffix);
            engine.put(&k, value.as_bytes(), &WriteOpts::default()).expect("put");
        }
        drop(engine);
        let e = format!("{:#}", Runner::new(cfg).run().expect_err("a bad triple"));
        assert!(e.contains("randomwithverify: 10 of 10 triples"), "{e}");
    }
}
