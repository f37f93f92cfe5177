//! Seeks and short range scans: seekrandom, fillseekseq, and the readers of
//! seekrandomwhilewriting / seekrandomwhilemerging (`docs/db_bench.md` §5.4).

use anyhow::{bail, Context, Result};

use super::fill;
use super::op_loop::{Ctx, Step, Worker};
use crate::catalog::Seek;
use crate::engine::{Bounds, EngineIter, WriteOpts};
use crate::keys::WriteMode;
use crate::stats::OpType;

pub(super) fn run(kind: Seek, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Seek::Random => seek_random(cx, ts),
        Seek::FillThenSeekSeq => fill_then_seek_seq(cx, ts),
        Seek::MultiScan => super::multi_scan::multi_scan(cx, ts),
        Seek::MultiScanRandom => super::multi_scan::multi_scan_random(cx, ts),
    }
}

/// db_bench's `fillseekseq` (`WriteSeqSeekSeq`): keys 0 to `--num` - 1 put in order, then, with
/// the statistics started again, one iterator seeks key 0, steps `--seek_nexts` keys forward,
/// seeks the key it stands on, and goes on from the next key until every key has been visited;
/// each seek and each step is one seek operation. Every position is checked against the key
/// it must hold (db_bench asserts it in debug builds only): a missing or extra key is an
/// error naming both. `--reverse_iterator` is refused, since stepping backward leaves the keys
/// this walk visits (db_bench's asserts fail there).
fn fill_then_seek_seq(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f) = (cx.p, cx.flags());
    if f.reverse_iterator {
        bail!("fillseekseq visits the keys upward: --reverse_iterator is not supported with it");
    }
    fill::put(WriteMode::Sequential, cx, ts)?;
    ts.stats.restart();
    let mut it = cx.engine.new_iterator(&p.ro, Bounds::default())?;
    let nexts = f.seek_nexts.max(0) as u64;
    let at = |it: &dyn EngineIter, want: &[u8], what: &str| -> Result<()> {
        it.status().context("iterator error")?;
        if !it.valid() {
            bail!("fillseekseq: {what} key {} found no key", show(want));
        }
        if it.key() != want {
            bail!("fillseekseq: {what} key {} stands on key {}", show(want), show(it.key()));
        }
        Ok(())
    };
    let mut i = 0u64;
    while i < p.num {
        p.key.encode(i, p.flags_num, &mut ts.key);
        it.seek(&ts.key);
        at(it.as_ref(), &ts.key, "a seek to")?;
        ts.stats.finished_ops(1, OpType::Seek);
        let mut j = 0;
        while j < nexts && i + 1 < p.num {
            it.next();
            i += 1;
            p.key.encode(i, p.flags_num, &mut ts.key);
            at(it.as_ref(), &ts.key, "a step to")?;
            ts.stats.finished_ops(1, OpType::Seek);
            j += 1;
        }
        it.seek(&ts.key);
        at(it.as_ref(), &ts.key, "a seek to")?;
        ts.stats.finished_ops(1, OpType::Seek);
        i += 1;
    }
    Ok(())
}

/// A key for an error message: printable bytes as they are, others escaped.
fn show(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

/// `--reads` seeks to random keys per thread, each followed by up to `--seek_nexts` steps
/// (backward with `--reverse_iterator`), bounded `--max_scan_distance` keys from the seek key;
/// a new iterator per seek unless `--use_tailing_iterator`, then `--seek_nexts_to_delete`
/// further keys deleted. Message: `(found of read found)`.
pub(super) fn seek_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let nexts = f.seek_nexts as u64;
    // Checked non-negative in `crate::config`.
    let to_delete = f.seek_nexts_to_delete as u64;
    let reverse = f.reverse_iterator;
    let step = |it: &mut dyn EngineIter| if reverse { it.prev() } else { it.next() };
    let distance = f.max_scan_distance as u64;
    let mut bound = Vec::with_capacity(p.key.key_size);
    let mut value_buf = [0u8; 256];
    let (mut read, mut found) = (0u64, 0u64);
    let mut tail_iter = if f.use_tailing_iterator {
        Some(engine.new_iterator(&p.ro, Bounds::default())?)
    } else {
        None
    };
    cx.ops(p.reads, 1, true).read_limited(256).run(ts, |ts| {
        let pos = ts.rand.next_u64() % p.flags_num;
        p.key.encode(pos, p.flags_num, &mut ts.key);
        if f.seek_missing_prefix && ts.key.len() > 8 {
            ts.key[8] = b'1';
        }
        let mut bounds = Bounds::default();
        if distance > 0 {
            if reverse {
                p.key.encode(pos.saturating_sub(distance), p.flags_num, &mut bound);
                bounds.lower = Some(&bound);
            } else {
                p.key.encode(p.flags_num.min(pos + distance), p.flags_num, &mut bound);
                bounds.upper = Some(&bound);
            }
        }
        let mut fresh_iter;
        let it: &mut dyn EngineIter = match &mut tail_iter {
            Some(t) => t.as_mut(),
            None => {
                fresh_iter = engine.new_iterator(&p.ro, bounds)?;
                fresh_iter.as_mut()
            }
        };
        it.seek(&ts.key);
        read += 1;
        if it.valid() && it.key() == ts.key.as_slice() {
            found += 1;
        }
        let mut bytes = 0u64;
        let mut j = 0;
        while j < nexts && it.valid() {
            let v = it.value();
            let n = v.len().min(value_buf.len());
            value_buf[..n].copy_from_slice(&v[..n]);
            bytes += (it.key().len() + v.len()) as u64;
            step(it);
            j += 1;
        }
        // `--seek_nexts_to_delete`: the keys after the scan deleted, one by one in the scan's
        // direction, with default write options as db_bench's (a run of point tombstones).
        let mut j = 0;
        while j < to_delete && it.valid() {
            engine.delete(it.key(), &WriteOpts::default()).context("delete error")?;
            step(it);
            j += 1;
        }
        it.status().context("iterator error")?;
        std::hint::black_box(&value_buf);
        Ok(Step::Did(OpType::Seek, bytes))
    })?;
    ts.stats.add_message(&format!("({found} of {read} found)\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::runner::run_args as run;

    #[test]
    fn fillseekseq_checks_every_position_and_refuses_to_walk_backward() {
        let base = ["--engine=memory", "--num=50", "--seek_nexts=3", "--seed=1"];
        let mut args = base.to_vec();
        args.extend(["--db=/mem/fss", "--benchmarks=fillseekseq"]);
        run(&args).expect("a DB holding just the keys written walks clean");
        // A key between two written ones is found by the walk and named.
        let mut args = base.to_vec();
        args.extend(["--db=/mem/fss-extra", "--benchmarks=fillseekseq", "--key_size=17"]);
        run(&args).expect("fill a DB with longer keys");
        let mut args = base.to_vec();
        args.extend(["--db=/mem/fss-extra", "--benchmarks=fillseekseq", "--use_existing_db=1"]);
        let e = format!("{:#}", run(&args).expect_err("the longer keys sit between"));
        assert!(e.contains("fillseekseq: a step to key") && e.contains("stands on key"), "{e}");
        let mut args = base.to_vec();
        args.extend(["--db=/mem/fss-rev", "--benchmarks=fillseekseq", "--reverse_iterator=1"]);
        let e = format!("{:#}", run(&args).expect_err("reverse"));
        assert!(e.contains("--reverse_iterator is not supported"), "{e}");
    }
}
