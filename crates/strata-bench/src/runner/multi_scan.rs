//! Multi-range scans: db_bench's `multiscan` and `multiscanrandom` (`docs/db_bench.md` §5.4).
//! Each multi-scan is one operation (`Microseconds per multiscan`); the loop ends once
//! `--reads` keys were scanned per thread (or after `--duration` seconds), each multi-scan
//! adding the keys it yielded (at least one), as db_bench's.

use anyhow::{bail, Context, Result};

use super::op_loop::{Ctx, Deadline, Step, Worker};
use crate::engine::{scan_with_iterator, MultiScanSettings};
use crate::stats::OpType;

/// Entries of a `multiscanrandom` range at most: 1 MiB of keys and values.
const MAX_RANGE_BYTES: u64 = 1 << 20;
/// Ranges of a `multiscanrandom` scan at most.
const MAX_BATCH: u64 = 64;

fn settings(cx: &Ctx<'_>) -> MultiScanSettings {
    let f = cx.flags();
    MultiScanSettings {
        coalesce: f.multiscan_coalesce_threshold,
        max_prefetch: f.multiscan_max_prefetch_size,
        async_io: f.multiscan_use_async_io,
        reverse: f.reverse_iterator,
    }
}

/// Runs `scan` (which returns the keys it yielded) until the thread has scanned `--reads`
/// keys or `--duration` seconds passed; `--benchmark_read_rate_limit` is asked one grant per
/// multi-scan.
fn scan_loop(
    cx: &Ctx<'_>,
    ts: &mut Worker<'_>,
    mut scan: impl FnMut(&mut Worker<'_>) -> Result<u64>,
) -> Result<u64> {
    let p = cx.p;
    let every = cx.flags().ops_between_duration_checks as u64;
    let mut deadline = Deadline::new(p.duration, p.reads, every);
    let (mut last, mut scans) = (1u64, 0u64);
    cx.until_stopped().run(ts, |ts| {
        if deadline.done(last) {
            return Ok(Step::Stop);
        }
        last = scan(ts)?.max(1);
        if let Some(rl) = cx.shared.read_limiter() {
            rl.request(1);
        }
        scans += 1;
        Ok(Step::Did(OpType::MultiScan, 0))
    })?;
    Ok(scans)
}

/// db_bench's `multiscan`: from a random key, `--multiscan_size` ranges of `--seek_nexts`
/// keys (50 when 0), each starting `--multiscan_stride` keys after the end of the one before.
/// Message: `(multiscans:<n>)`.
pub(super) fn multi_scan(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f) = (cx.p, cx.flags());
    let scan_size = if f.seek_nexts > 0 { f.seek_nexts as u64 } else { 50 };
    let (size, stride) = (f.multiscan_size as u64, f.multiscan_stride as u64);
    eprintln!("multiscan_stride = {stride}");
    eprintln!("multiscan_size = {size}");
    eprintln!("seek_nexts = {}", f.seek_nexts);
    eprintln!("multiscan_max_prefetch_size = {}", f.multiscan_max_prefetch_size);
    eprintln!("reverse_iterator = {}", f.reverse_iterator);
    let span = (scan_size + stride).saturating_mul(size);
    if size == 0 || span >= p.flags_num {
        bail!(
            "multiscan: --multiscan_size={size} ranges of {scan_size} keys, {stride} apart, \
             need more than {span} keys and at least one range; --num is {}",
            p.flags_num
        );
    }
    let settings = settings(cx);
    let ks = p.key.key_size;
    let mut ranges = vec![0u8; 2 * ks * size as usize];
    let scans = scan_loop(cx, ts, |ts| {
        let mut at = ts.rand.next_u64() % (p.flags_num - span);
        for r in ranges.chunks_mut(2 * ks) {
            p.key.encode(at, p.flags_num, &mut ts.key);
            r[..ks].copy_from_slice(&ts.key);
            p.key.encode(at + scan_size, p.flags_num, &mut ts.key);
            r[ks..].copy_from_slice(&ts.key);
            at += scan_size + stride;
        }
        cx.engine.multi_scan(&ranges, ks, &settings, &p.ro).context("multiscan error")
    })?;
    ts.stats.add_message(&format!("(multiscans:{scans})"));
    Ok(())
}

/// db_bench's `multiscanrandom`: 1 to 64 ranges of 1 to (1 MiB / entry size) keys at random
/// starts, sorted, each trimmed to start where the one before ends (one inside it dropped);
/// through the multi-scan API, or with `--use_multiscan=false` one iterator walking each
/// range (the last range first with `--reverse_iterator`). Message: `(multiscans:<n>
/// rows_scanned:<keys> rows_per_multiscan:<keys / n> max_range_keys:<m>)`.
pub(super) fn multi_scan_random(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let (p, f) = (cx.p, cx.flags());
    // db_bench sizes entries by the flags (a varying value size's flag too).
    let entry = (f.key_size.max(0) as u64 + f.value_size.max(0) as u64).max(1);
    let max_range_keys = (MAX_RANGE_BYTES / entry).max(1);
    eprintln!("multiscanrandom: batch_size=1..{MAX_BATCH}, max_range_keys={max_range_keys}");
    eprintln!("multiscan_max_prefetch_size = {}", f.multiscan_max_prefetch_size);
    eprintln!("multiscan_use_async_io = {}", f.multiscan_use_async_io);
    eprintln!("use_multiscan = {}", f.use_multiscan);
    eprintln!("reverse_iterator = {}", f.reverse_iterator);
    let settings = settings(cx);
    let ks = p.key.key_size;
    let mut specs: Vec<(u64, u64)> = Vec::with_capacity(MAX_BATCH as usize);
    let mut ranges = Vec::with_capacity(2 * ks * MAX_BATCH as usize);
    let mut rows = 0u64;
    let scans = scan_loop(cx, ts, |ts| {
        specs.clear();
        let batch = 1 + ts.rand.next_u64() % MAX_BATCH;
        for _ in 0..batch {
            let size = 1 + ts.rand.next_u64() % max_range_keys;
            let start = ts.rand.next_u64() % (p.flags_num.saturating_sub(size) + 1);
            specs.push((start, start + size));
        }
        specs.sort_unstable_by_key(|s| s.0);
        // Trimmed to start where the range before ends; one inside it dropped.
        let mut end = 0;
        specs.retain_mut(|s| {
            let keep = s.1 > end;
            s.0 = s.0.max(end);
            end = end.max(s.1);
            keep
        });
        if !f.use_multiscan && settings.reverse {
            specs.reverse();
        }
        ranges.clear();
        for &(start, end) in &specs {
            for k in [start, end] {
                p.key.encode(k, p.flags_num, &mut ts.key);
                ranges.extend_from_slice(&ts.key);
            }
        }
        let keys = if f.use_multiscan {
            cx.engine.multi_scan(&ranges, ks, &settings, &p.ro).context("multiscan error")?
        } else {
            scan_with_iterator(cx.engine, &ranges, ks, settings.reverse, &p.ro)
                .context("iterator error")?
        };
        rows += keys;
        Ok(keys)
    })?;
    let per = rows.checked_div(scans).unwrap_or(0);
    ts.stats.add_message(&format!(
        "(multiscans:{scans} rows_scanned:{rows} rows_per_multiscan:{per} \
         max_range_keys:{max_range_keys})"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::runner::run_args as run;

    #[test]
    fn multi_scans_run_on_an_engine_with_them_and_refuse_a_short_key_space() {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().join("db").display());
        let base = ["--engine=strata", "--num=3000", "--reads=2000", "--seed=3", db.as_str()];
        let mut args = base.to_vec();
        args.push("--benchmarks=fillrandom,flush,multiscan,multiscanrandom");
        run(&args).expect("multi-scans over a filled DB");
        for extra in
            ["--reverse_iterator=1", "--use_multiscan=0", "--multiscan_max_prefetch_size=4096"]
        {
            let mut args = base.to_vec();
            args.extend(["--use_existing_db=1", "--benchmarks=multiscan,multiscanrandom", extra]);
            run(&args).unwrap_or_else(|e| panic!("{extra}: {e:#}"));
        }
        let mut args = base.to_vec();
        args.extend(["--use_existing_db=1", "--benchmarks=multiscan", "--multiscan_stride=1000"]);
        let e = format!("{:#}", run(&args).expect_err("11,500 keys of ranges in 3,000"));
        assert!(e.contains("--num is 3000"), "{e}");
    }
}
