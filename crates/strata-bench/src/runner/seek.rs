//! Seeks and short range scans: seekrandom, and the readers of seekrandomwhilewriting /
//! seekrandomwhilemerging (`docs/db_bench.md` §5.4).

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::engine::{Bounds, EngineIter};
use crate::stats::OpType;

/// `--reads` seeks to random keys per thread, each followed by up to `--seek_nexts` steps
/// (backward with `--reverse_iterator`), bounded `--max_scan_distance` keys from the seek key;
/// a new iterator per seek unless `--use_tailing_iterator`. Message: `(found of read found)`.
pub(super) fn seek_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let nexts = f.seek_nexts as u64;
    let reverse = f.reverse_iterator;
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
            if reverse {
                it.prev();
            } else {
                it.next();
            }
            j += 1;
        }
        it.status().context("iterator error")?;
        std::hint::black_box(&value_buf);
        Ok(Step::Did(OpType::Seek, bytes))
    })?;
    ts.stats.add_message(&format!("({found} of {read} found)\n"));
    Ok(())
}
