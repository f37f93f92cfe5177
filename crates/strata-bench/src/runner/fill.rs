//! Puts and deletes: fillseq, fillrandom, filluniquerandom, overwrite, fillsync, fill100K,
//! fillbatch, deleteseq, deleterandom (`docs/db_bench.md` §5.2).

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::engine::Batch;
use crate::keys::{KeyGenerator, WriteMode};
use crate::stats::OpType;

/// `--writes` puts per thread in `--batch_size` batches; `--duration` bounds only random
/// writes. A batch of one is a plain put.
pub(super) fn put(mode: WriteMode, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut keys = KeyGenerator::new(mode, p.num, cx.cfg.seed_base as u32);
    let mut gen = cx.values();
    let mut batch = Batch::default();
    if p.num != p.flags_num {
        ts.stats.add_message(&format!("({} ops)", p.num));
    }
    cx.ops(p.writes, p.batch, mode == WriteMode::Random).run(ts, |ts| {
        let bytes = if p.batch == 1 {
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
            }
            cx.throttle_write(ts, n);
            engine.write(&batch, &p.wo).context("put error")?;
            n
        };
        Ok(Step::Did(OpType::Write, bytes))
    })
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
