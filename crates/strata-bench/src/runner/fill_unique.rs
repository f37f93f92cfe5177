//! filluniquerandom's two variants (`docs/db_bench.md` §5.2): overwrites of recent keys
//! (`--overwrite_probability`, `--overwrite_window_size`) and fillanddeleteuniquerandom's
//! disposable keys (`--disposable_entries_*`, `--persistent_entries_*`).
//!
//! Disposable keys, as db_bench writes them: the shuffled key order is cut into sets of
//! `D + P` keys (`D` = `--disposable_entries_batch_size`, `P` =
//! `--persistent_entries_batch_size`). The writer puts a set's first `D` keys (values of
//! `--disposable_entries_value_size` bytes), then, once `--disposable_entries_delete_delay`
//! microseconds have passed since the last of them, its `P` persistent keys (values of
//! `--persistent_entries_value_size` bytes) and then deletes its `D` disposable keys; while a
//! set's delay runs it goes on with the next set's disposable keys. Every put and every
//! delete is one operation; values are printable random bytes. db_bench finds a set's end by
//! the key index modulo `D` and `D + P`, which keeps to these sets only when `P` is a
//! multiple of `D` (with other sizes its later sets overlap); here the sets are as described
//! for every size.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::engine::Batch;
use crate::keys::{KeyGenerator, WriteMode};
use crate::random::{Lehmer, MinStdRand0, Mt64};
use crate::stats::OpType;

/// Whether a filluniquerandom run needs this file rather than the plain fill.
pub(super) fn applies(cx: &Ctx<'_>) -> bool {
    let f = cx.flags();
    f.overwrite_probability > 0.0 || disposable_sets(f).is_some()
}

/// `(D, P)` when disposable keys are asked for.
fn disposable_sets(f: &crate::flags::Flags) -> Option<(u64, u64)> {
    (f.disposable_entries_batch_size > 0)
        .then_some((f.disposable_entries_batch_size, f.persistent_entries_batch_size))
}

/// What the next record of a batch is.
enum Record {
    Put { key: u64, value: Value },
    Delete(u64),
}

/// The value a put writes.
#[derive(Clone, Copy)]
enum Value {
    /// From the value generator (`--value_size`, `--compression_ratio`).
    Generated,
    /// `--disposable_entries_value_size` printable random bytes.
    Disposable,
    /// `--persistent_entries_value_size` printable random bytes.
    Persistent,
}

/// The key plan of one writer.
struct Plan {
    keys: KeyGenerator,
    /// Overwrites: the chance, the draws (libstdc++'s `default_random_engine` and a 64-bit
    /// Mersenne twister, both seeded with the seed base, as db_bench's) and the latest new keys.
    overwrite: f64,
    window_size: usize,
    window: VecDeque<u64>,
    coin: MinStdRand0,
    pick: Mt64,
    overwrites: u64,
    /// Disposable sets: `(D, P)`, the next disposable index, the sets whose deletes are due
    /// at or after their instant (with the index of their first key), and how far the oldest
    /// due set has got through its `P` puts and `D` deletes.
    sets: Option<(u64, u64)>,
    delay: Duration,
    next_disposable: u64,
    set_first: u64,
    due: VecDeque<(Instant, u64)>,
    done_of_due: u64,
    deletes: u64,
}

impl Plan {
    fn next(&mut self, rand: &mut Mt64) -> Record {
        if let Some((d, p)) = self.sets {
            return self.next_disposable(d, p);
        }
        if self.overwrite > 0.0 && !self.window.is_empty() && self.coin.bernoulli(self.overwrite) {
            self.overwrites += 1;
            let i = self.pick.next_u64() % self.window.len() as u64;
            return Record::Put { key: self.window[i as usize], value: Value::Generated };
        }
        let key = self.keys.next(rand);
        if self.overwrite > 0.0 {
            if self.window.len() == self.window_size {
                self.window.pop_front();
            }
            self.window.push_back(key);
        }
        Record::Put { key, value: Value::Generated }
    }

    fn next_disposable(&mut self, d: u64, p: u64) -> Record {
        if let Some(&(at, first)) = self.due.front() {
            if at <= Instant::now() {
                let done = self.done_of_due;
                self.done_of_due += 1;
                if self.done_of_due == d + p {
                    self.due.pop_front();
                    self.done_of_due = 0;
                }
                return if done < p {
                    Record::Put { key: self.keys.fetch(first + d + done), value: Value::Persistent }
                } else {
                    self.deletes += 1;
                    Record::Delete(self.keys.fetch(first + done - p))
                };
            }
        }
        let key = self.keys.fetch(self.next_disposable);
        self.next_disposable += 1;
        if self.next_disposable - self.set_first == d {
            // The set's disposable keys are all written: its persistent keys and deletes
            // are due after the delay; the next set starts after its persistent keys.
            self.due.push_back((Instant::now() + self.delay, self.set_first));
            self.next_disposable += p;
            self.set_first = self.next_disposable;
        }
        Record::Put { key, value: Value::Disposable }
    }
}

/// `--writes` records in `--batch_size` batches (one thread).
pub(super) fn put(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f, engine) = (cx.p, cx.flags(), cx.engine);
    let seed = cx.cfg.seed_base;
    let mut plan = Plan {
        keys: KeyGenerator::new(WriteMode::UniqueRandom, p.num, seed as u32),
        overwrite: f.overwrite_probability.min(1.0),
        window_size: f.overwrite_window_size.max(1) as usize,
        window: VecDeque::new(),
        coin: MinStdRand0::with_seed(seed as u32),
        pick: Mt64::new(seed),
        overwrites: 0,
        sets: disposable_sets(f),
        delay: Duration::from_micros(f.disposable_entries_delete_delay),
        next_disposable: 0,
        set_first: 0,
        due: VecDeque::new(),
        done_of_due: 0,
        deletes: 0,
    };
    let mut text = Lehmer::new(seed as u32);
    let mut random_value = Vec::new();
    let mut gen = cx.values();
    let mut batch = Batch::default();
    let mut written = 0u64;
    let mut sine = cx.sine_write();
    cx.ops(p.writes, p.batch, false).run(ts, |ts| {
        if let Some(s) = sine.as_mut() {
            cx.follow_sine(s);
        }
        batch.clear();
        let mut bytes = 0u64;
        for _ in 0..p.batch {
            match plan.next(&mut ts.rand) {
                Record::Delete(k) => {
                    p.key.encode(k, p.flags_num, &mut ts.key);
                    batch.delete(&ts.key);
                    bytes += ts.key.len() as u64;
                }
                Record::Put { key, value } => {
                    p.key.encode(key, p.flags_num, &mut ts.key);
                    // The sizes are checked non-negative in `crate::config`.
                    let size = match value {
                        Value::Generated => None,
                        Value::Disposable => Some(f.disposable_entries_value_size as usize),
                        Value::Persistent => Some(f.persistent_entries_value_size as usize),
                    };
                    let v = match size {
                        Some(n) => {
                            random_value.clear();
                            random_value.extend((0..n).map(|_| b' ' + text.uniform(95) as u8));
                            &random_value[..]
                        }
                        None => gen.generate(),
                    };
                    bytes += (ts.key.len() + v.len()) as u64;
                    batch.put(&ts.key, v);
                    written += 1;
                }
            }
        }
        cx.throttle_write(ts, bytes);
        engine.write(&batch, &p.wo).context("put error")?;
        Ok(Step::Did(OpType::Write, bytes))
    })?;
    if plan.overwrite > 0.0 {
        ts.stats.add_message(&format!(
            "(overwrites: {}, unique keys: {})",
            plan.overwrites,
            written - plan.overwrites
        ));
    }
    if plan.sets.is_some() {
        ts.stats.add_message(&format!(
            "(unique keys put: {written}, disposable keys deleted: {})",
            plan.deletes
        ));
    }
    Ok(())
}
