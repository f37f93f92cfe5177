//! Puts and deletes: fillseq, fillrandom, filluniquerandom, overwrite, fillsync, fill100K,
//! fillbatch, deleteseq, deleterandom, randomreplacekeys, ingestexternalfile
//! (`docs/db_bench.md` §5.2); the variants of filluniquerandom are in `fill_unique.rs`, the
//! range deletions among the writes in `range_tombstones.rs`.

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use super::range_tombstones::RangeTombstones;
use crate::engine::Batch;
use crate::keys::{KeyGenerator, WriteMode};
use crate::random::{MinStdRand0, Normal};
use crate::stats::OpType;

/// `--writes` puts per thread in `--batch_size` batches; `--duration` bounds only random
/// writes. A batch of one is a plain put.
pub(super) fn put(mode: WriteMode, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    if mode == WriteMode::UniqueRandom && super::fill_unique::applies(cx) {
        return super::fill_unique::put(cx, ts);
    }
    put_count(mode, cx.p.writes, cx, ts)
}

/// `writes` puts as [`put`] makes them (db_bench's `DoWrite` with its `writes_`).
pub(super) fn put_count(
    mode: WriteMode,
    writes: u64,
    cx: &Ctx<'_>,
    ts: &mut Worker<'_>,
) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut ranges = RangeTombstones::new(cx.flags());
    // As db_bench: the key space grows by the range deletions' first keys, drawn from it.
    let space = p.num + RangeTombstones::max(cx.flags());
    let mut keys = KeyGenerator::new(mode, space, cx.cfg.seed_base as u32);
    let mut gen = cx.values();
    let mut batch = Batch::default();
    let mut written = 0u64;
    let mut sine = cx.sine_write();
    if p.num != p.flags_num {
        ts.stats.add_message(&format!("({} ops)", p.num));
    }
    cx.ops(writes, p.batch, mode == WriteMode::Random).run(ts, |ts| {
        if let Some(s) = sine.as_mut() {
            cx.follow_sine(s);
        }
        let bytes = if p.batch == 1 && ranges.is_none() {
            p.key.encode(keys.next(&mut ts.rand), p.flags_num, &mut ts.key);
            let v = gen.generate();
            let n = (ts.key.len() + v.len()) as u64;
            cx.throttle_write(ts, n);
            engine.put(&ts.key, v, &p.wo).context("put error")?;
            n
        } else {
            batch.clear();
            let mut n = 0u64;
            for _ in 0..p.batch {
                p.key.encode(keys.next(&mut ts.rand), p.flags_num, &mut ts.key);
                let v = gen.generate();
                n += (ts.key.len() + v.len()) as u64;
                batch.put(&ts.key, v);
                written += 1;
                if let Some(r) = ranges.as_mut().filter(|r| r.due(written)) {
                    r.add(keys.next(&mut ts.rand), &p.key, p.flags_num, &mut batch);
                }
            }
            cx.throttle_write(ts, n);
            engine.write(&batch, &p.wo).context("put error")?;
            n
        };
        Ok(Step::Did(OpType::Write, bytes))
    })?;
    if let Some(r) = &ranges {
        r.report();
    }
    Ok(())
}

/// `--deletes` deletes per thread in `--batch_size` batches; `--duration` bounds only random
/// deletes.
pub(super) fn delete(seq: bool, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut batch = Batch::default();
    let mut i = 0u64;
    cx.ops(p.deletes, p.batch, !seq).run(ts, |ts| {
        batch.clear();
        for j in 0..p.batch {
            let k = if seq { i + j } else { ts.rand.next_u64() % p.flags_num };
            p.key.encode(k, p.flags_num, &mut ts.key);
            if p.batch == 1 {
                engine.delete(&ts.key, &p.wo).context("del error")?;
            } else {
                batch.delete(&ts.key);
            }
        }
        if p.batch > 1 {
            engine.write(&batch, &p.wo).context("del error")?;
        }
        i += p.batch;
        Ok(Step::Did(OpType::Delete, 0))
    })
}

/// db_bench's `ingestexternalfile`: `--ingest_external_file_num_batches` times (at least 1),
/// writes `--ingest_external_file_batch_size` (at least 1) table files into `<db>/ingest_tmp`,
/// each holding keys 0..`--num` in order with generated values (so the files overlap), and
/// ingests them in one call, moving them into the DB; one operation per batch, the bytes
/// those of every entry written. The time includes writing the files, as db_bench's does.
pub(super) fn ingest(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let files = f.ingest_external_file_batch_size.max(1) as usize;
    let batches = f.ingest_external_file_num_batches.max(1) as u64;
    let dir = cx.cfg.db.join("ingest_tmp");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut gen = cx.values();
    let mut batch = 0u64;
    let mut key = Vec::with_capacity(p.key.key_size);
    cx.ops(batches, 1, false).run(ts, |_| {
        let mut bytes = 0u64;
        let mut paths = Vec::with_capacity(files);
        for j in 0..files {
            let path = dir.join(format!("ingest_{batch}_{j}.sst"));
            engine
                .write_table_file(&path, &mut |put| {
                    for i in 0..p.num {
                        p.key.encode(i, p.num, &mut key);
                        let v = gen.generate();
                        bytes += (key.len() + v.len()) as u64;
                        put(&key, v)?;
                    }
                    Ok(())
                })
                .with_context(|| format!("writing {}", path.display()))?;
            paths.push(path);
        }
        engine.ingest_files(&paths).context("IngestExternalFile failed")?;
        for path in &paths {
            // Moved in by the ingestion; whatever is left is ours to remove.
            let _ = std::fs::remove_file(path);
        }
        batch += 1;
        Ok(Step::Did(OpType::Write, bytes))
    })?;
    let _ = std::fs::remove_dir(&dir);
    ts.stats.add_message(&format!(
        "({batches} batches x {files} files, {} keys/file, {} threads)",
        p.num, f.ingest_external_file_file_opening_threads
    ));
    Ok(())
}

/// Keys a slot of randomreplacekeys walks through before it starts again.
const REPLACE_SLOT: u64 = 50;

/// db_bench's `randomreplacekeys`: puts keys `i * 50` for `i` in `0..--numdistinct`, takes a
/// snapshot it holds for the rest of the run (so no tombstone below it can be dropped), then
/// `--num` times (or for `--duration` seconds) picks a slot by a normal distribution around
/// `--numdistinct / 2` of deviation `--stddev` (libstdc++'s `default_random_engine`, so every
/// thread and every run draws what db_bench draws), deletes the slot's current key
/// (`SingleDelete` with `--use_single_deletes`, the default) and puts the next key of the slot
/// (`i * 50 + 0..50`, round) with an empty value: one operation of no named kind.
pub(super) fn replace_keys(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let distinct = f.numdistinct.max(1) as u64;
    let mut gen = cx.values();
    for i in 0..distinct {
        p.key.encode(i * REPLACE_SLOT, p.flags_num, &mut ts.key);
        engine.put(&ts.key, gen.generate(), &p.wo).context("put error")?;
    }
    let _held = engine.snapshot().context("randomreplacekeys holds a snapshot")?;
    let mut counters = vec![0u64; distinct as usize];
    let (mut rng, mut normal) =
        (MinStdRand0::default(), Normal::new(distinct as f64 / 2.0, f.stddev));
    cx.ops(p.flags_num, 1, true).run(ts, |ts| {
        let slot = (normal.sample(&mut rng) as i64).clamp(0, distinct as i64 - 1) as usize;
        p.key.encode(slot as u64 * REPLACE_SLOT + counters[slot], p.flags_num, &mut ts.key);
        if f.use_single_deletes {
            engine.single_delete(&ts.key, &p.wo)
        } else {
            engine.delete(&ts.key, &p.wo)
        }
        .context("delete error")?;
        counters[slot] = (counters[slot] + 1) % REPLACE_SLOT;
        p.key.encode(slot as u64 * REPLACE_SLOT + counters[slot], p.flags_num, &mut ts.key);
        engine.put(&ts.key, &[], &p.wo).context("put error")?;
        Ok(Step::Did(OpType::Others, 0))
    })?;
    ts.stats.add_message(&format!(
        "use single deletes: {}, standard deviation: {:.6}\n",
        u8::from(f.use_single_deletes),
        f.stddev
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::engine::{Bounds, ReadOpts};
    use crate::runner::Runner;

    #[test]
    fn randomreplacekeys_keeps_one_key_per_slot() {
        let args = [
            "--engine=memory",
            "--db=/mem/replace",
            "--benchmarks=randomreplacekeys",
            "--num=3000",
            "--numdistinct=40",
            "--stddev=8",
            "--seed=1",
        ];
        let cfg = Config::from_args(&args).expect("config");
        Runner::new(cfg.clone()).run().expect("run");
        let engine = cfg.engine.open(&cfg).expect("open");
        let mut it = engine.new_iterator(&ReadOpts::default(), Bounds::default()).expect("iter");
        it.seek_to_first();
        let mut slots = Vec::new();
        while it.valid() {
            let n = u64::from_be_bytes(it.key()[..8].try_into().expect("8 bytes"));
            slots.push(n / super::REPLACE_SLOT);
            it.next();
        }
        assert_eq!(slots, (0..40).collect::<Vec<u64>>(), "one key per slot, every slot");
    }
}
