//! Read-modify-write and merges: updaterandom, xorupdaterandom, appendrandom, mergerandom,
//! readrandommergerandom, getmergeoperands (`docs/db_bench.md` §5.6).

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::catalog::Merge;
use crate::engine::Operands;
use crate::stats::OpType;

pub(super) fn run(kind: Merge, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Merge::Update => update_random(cx, ts),
        Merge::XorUpdate => xor_update_random(cx, ts),
        Merge::Append => append_random(cx, ts),
        Merge::MergeRandom => merge_random(cx, ts),
        Merge::ReadRandomMergeRandom => read_random_merge_random(cx, ts),
        Merge::GetMergeOperands => get_merge_operands(cx, ts),
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

/// Get, then put of the value read XORed byte by byte with a new value of the same length
/// (db_bench's `XORUpdateRandom`, RocksDB's `BytesXOROperator` on the client's side). A key not
/// found is written with the new value of length 0, as db_bench does. Counted as db_bench
/// counts it: one operation of no named kind and no bytes.
fn xor_update_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut gen = cx.values();
    let mut found = 0u64;
    let mut new_value = Vec::new();
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, p.flags_num);
        if cx.get(ts)? {
            found += 1;
        } else {
            ts.scratch.clear();
        }
        let operand = gen.generate_len(ts.scratch.len());
        xor_into(&ts.scratch, operand, &mut new_value);
        engine.put(&ts.key, &new_value, &p.wo).context("put error")?;
        Ok(Step::Did(OpType::Others, 0))
    })?;
    ts.stats.add_message(&format!("( updates:{} found:{found})", p.readwrites));
    Ok(())
}

/// `existing` XOR `operand` over their common length, then the longer one's tail (the
/// `bytesxor` merge operator's result).
fn xor_into(existing: &[u8], operand: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(existing.iter().zip(operand).map(|(a, b)| a ^ b));
    let common = out.len();
    let longer = if existing.len() > operand.len() { existing } else { operand };
    out.extend_from_slice(&longer[common..]);
}

/// Get, then put of the value read with `,` and a new value appended, or of the new value
/// alone where the key is not found (db_bench's `AppendRandom`: the values grow by a value
/// per update, what a `stringappend` merge gives). Bytes are the value read plus the value
/// written.
fn append_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, engine) = (cx.p, cx.engine);
    let mut gen = cx.values();
    let mut found = 0u64;
    cx.ops(p.readwrites, 1, true).run(ts, |ts| {
        cx.random_key(ts, p.flags_num);
        let mut bytes = 0u64;
        if cx.get(ts)? {
            found += 1;
            bytes += (ts.key.len() + ts.scratch.len()) as u64;
            ts.scratch.push(b',');
        } else {
            ts.scratch.clear();
        }
        ts.scratch.extend_from_slice(gen.generate());
        engine.put(&ts.key, &ts.scratch, &p.wo).context("put error")?;
        bytes += (ts.key.len() + ts.scratch.len()) as u64;
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

/// db_bench's `getmergeoperands`: merges the integers 1 to 99,999 into `my_key` as 999 sorted
/// lists (the multiples of 100 left out), then looks for 1 in the key's value read by Get
/// (one list of all of them) and in its operands read by GetMergeOperands (the first list
/// holds it), printing what db_bench prints: whether it was found, the seconds each way took,
/// and the start of what each read. One operation, all of it. The merge operator must join
/// lists as lists (`stringappend`, as RocksDB's `sortlist` would).
fn get_merge_operands(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    const TOTAL: u64 = 100_000;
    const LIST: u64 = 100;
    const KEY: &[u8] = b"my_key";
    let (p, engine) = (cx.p, cx.engine);
    cx.ops(1, 1, false).run(ts, |_| {
        let mut list = String::new();
        for i in 1..TOTAL {
            if i % LIST == 0 {
                let operand = list.trim_end_matches(',').as_bytes();
                engine.merge(KEY, operand, &p.wo).context("merge error")?;
                list.clear();
            } else {
                let _ = write!(list, "{i},");
            }
        }
        let mut value = Vec::new();
        println!("--- Get API call --- ");
        let start = Instant::now();
        let found = engine.get(KEY, &p.ro, &mut value).context("get error")?
            && sorted_list(&value)?.binary_search(&1).is_ok();
        println!("Found key? {}", u8::from(found));
        println!("Get: {} seconds", start.elapsed().as_secs_f64());
        let head = &value[..value.len().min(10)];
        println!("Sample data from Get API call: {}", String::from_utf8_lossy(head));

        println!("--- GetMergeOperands API --- ");
        let start = Instant::now();
        let mut operands = Vec::new();
        let max = (TOTAL / LIST + 1) as usize;
        let got = engine
            .get_merge_operands(KEY, &p.ro, max, &mut operands)
            .context("GetMergeOperands error")?;
        if got == Operands::MoreThanMax {
            bail!("getmergeoperands: my_key has more than {max} operands (an existing DB?)");
        }
        let mut found = false;
        for o in &operands {
            if sorted_list(o)?.binary_search(&1).is_ok() {
                found = true;
                break;
            }
        }
        println!("Found key? {}", u8::from(found));
        println!("Get Merge operands: {} seconds ", start.elapsed().as_secs_f64());
        print!("Sample data from GetMergeOperands API call: ");
        for (i, o) in operands.iter().take(4).enumerate() {
            println!("List: {i} : {}", String::from_utf8_lossy(o));
        }
        Ok(Step::Did(OpType::Merge, 0))
    })
}

/// The integers of a comma-separated list (the `sortlist` operator's reading of one).
fn sorted_list(v: &[u8]) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    if strata::merge_operator::SortListOperator::numbers(v, &mut out).is_none() {
        let head = String::from_utf8_lossy(&v[..v.len().min(40)]);
        bail!(
            "getmergeoperands: {head:?} is not a comma-separated list of integers (the merge \
             operator must join lists: --merge_operator=sortlist or stringappend)"
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::xor_into;
    use crate::config::Config;
    use crate::runner::{Params, Runner};

    /// Runs `benchmarks` on the memory engine at `db` and returns the value of key 0.
    fn run_then_get(db: &str, benchmarks: &str, extra: &[&str]) -> Vec<u8> {
        let mut args = vec!["--engine=memory", "--num=1", "--value_size=10", "--threads=1"];
        args.extend_from_slice(extra);
        let (db, benchmarks) = (format!("--db={db}"), format!("--benchmarks={benchmarks}"));
        args.extend([db.as_str(), benchmarks.as_str(), "--seed=1"]);
        let cfg = Config::from_args(&args).expect("config");
        Runner::new(cfg.clone()).run().expect("run");
        let engine = cfg.engine.open(&cfg).expect("open");
        let p = Params::new(&cfg);
        let mut key = Vec::new();
        p.key.encode(0, 1, &mut key);
        let mut value = Vec::new();
        assert!(engine.get(&key, &p.ro, &mut value).expect("get"), "key 0 is there");
        value
    }

    #[test]
    fn xor_is_the_bytesxor_operators() {
        let mut out = Vec::new();
        xor_into(b"\x0f\xf0\x01", b"\xff\xff", &mut out);
        assert_eq!(out, b"\xf0\x0f\x01");
        xor_into(b"\x01", b"\x03\x07", &mut out);
        assert_eq!(out, b"\x02\x07");
        xor_into(b"", b"", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn xorupdaterandom_xors_the_value_read_with_one_of_its_length() {
        // fillseq's first value and xorupdaterandom's first operand are both the value
        // generator's first 10 bytes: their XOR is 10 zero bytes, and a second update puts the
        // generator's next 10 bytes.
        let once = run_then_get("/mem/xor1", "fillseq,xorupdaterandom", &["--writes=1"]);
        assert_eq!(once, vec![0u8; 10]);
        let plain = run_then_get("/mem/xor0", "fillseq", &["--writes=2"]);
        let twice = run_then_get("/mem/xor2", "fillseq,xorupdaterandom", &["--writes=2"]);
        assert_eq!(twice.len(), 10);
        assert_ne!(twice, plain, "the second operand is the generator's next 10 bytes");
    }

    #[test]
    fn appendrandom_appends_a_comma_and_a_value_per_update() {
        let plain = run_then_get("/mem/app0", "fillseq", &["--writes=3"]);
        let v = run_then_get("/mem/app1", "fillseq,appendrandom", &["--writes=3"]);
        assert_eq!(v.len(), 10 + 3 * 11, "{v:?}");
        assert_eq!(&v[..10], plain.as_slice(), "the value read comes first");
        assert_eq!((v[10], v[21], v[32]), (b',', b',', b','), "{v:?}");
    }
}
