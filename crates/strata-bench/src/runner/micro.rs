//! CPU micro-benchmarks that do not touch the DB: crc32c, xxhash, xxhash64, xxh3, compress,
//! compressreject, uncompress, acquireload (`docs/db_bench.md` §5.7).

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Result};

use super::op_loop::{Ctx, Step, Worker};
use crate::catalog::{HashKind, Micro};
use crate::config::Compression;
use crate::stats::OpType;

pub(super) fn run(kind: Micro, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    match kind {
        Micro::Crc32c | Micro::Hash(_) => checksum(kind, cx, ts),
        Micro::Compress => compress(cx, ts),
        Micro::CompressReject => compress_reject(cx, ts),
        Micro::Uncompress => uncompress(cx, ts),
        Micro::AcquireLoad => acquire_load(cx, ts),
    }
}

fn block_size(cx: &Ctx<'_>) -> usize {
    cx.flags().block_size.max(1) as usize
}

/// Checksums of one `--block_size` block of `x`, 5000 MiB in all.
fn checksum(kind: Micro, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let size = block_size(cx);
    let data = vec![b'x'; size];
    let op = if kind == Micro::Crc32c { OpType::Crc } else { OpType::Hash };
    let mut acc = 0u64;
    cx.bytes(5000 << 20).run(ts, |_| {
        acc ^= match kind {
            Micro::Crc32c => u64::from(crc32c::crc32c(&data)),
            Micro::Hash(HashKind::Xxh32) => u64::from(xxhash_rust::xxh32::xxh32(&data, 0)),
            Micro::Hash(HashKind::Xxh64) => xxhash_rust::xxh64::xxh64(&data, 0),
            _ => xxhash_rust::xxh3::xxh3_64(&data),
        };
        Ok(Step::Did(op, size as u64))
    })?;
    std::hint::black_box(acc);
    ts.stats.add_message(&format!("({size} per op)"));
    Ok(())
}

/// The `--block_size` block of generated values both compression benchmarks work on.
fn input_block(cx: &Ctx<'_>) -> Vec<u8> {
    cx.values().generate_len(block_size(cx)).to_vec()
}

/// Compresses the block with `--compression_type`, 3 GiB of input in all.
fn compress(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let input = input_block(cx);
    let mut out = Vec::new();
    let mut produced = 0u64;
    cx.bytes(3 << 30).run(ts, |_| {
        compress_block(cx, &input, &mut out)?;
        produced += out.len() as u64;
        Ok(Step::Did(OpType::Compress, input.len() as u64))
    })?;
    let bytes = ts.stats.bytes();
    ts.stats.add_message(&format!("(output: {:.1}%)", produced as f64 * 100.0 / bytes as f64));
    Ok(())
}

/// Compresses the block into an output budget 10 points of the input below
/// `--compression_ratio` (at least one byte), so that, the values compressing to about that
/// ratio, every attempt is rejected; 3 GiB of input in all. ZSTD stops when its output would
/// overflow the budget, as RocksDB's compressor does; Snappy and LZ4 (whose Rust encoders
/// refuse an output buffer below the worst case before any work) compress in full and their
/// output is compared, which costs LZ4 more than RocksDB's early stop.
/// An attempt that fits fails the run, as db_bench's does; without compression there is
/// nothing to run.
fn compress_reject(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    if cx.cfg.compression == Compression::None {
        // As db_bench: no compressor, nothing to reject.
        ts.stats.add_message("(compression type not supported)");
        return Ok(());
    }
    let input = input_block(cx);
    let fraction = (cx.flags().compression_ratio - 0.10).max(0.0);
    let budget = ((fraction * input.len() as f64) as usize).max(1);
    let percent = budget as f64 * 100.0 / input.len() as f64;
    let mut out = Vec::new();
    let mut zstd = match cx.cfg.compression {
        Compression::Zstd => Some(zstd::bulk::Compressor::new(zstd_level(cx))?),
        _ => None,
    };
    cx.bytes(3 << 30).run(ts, |_| {
        let fits = match cx.cfg.compression {
            Compression::Snappy | Compression::Lz4 => {
                compress_block(cx, &input, &mut out)?;
                out.len() <= budget
            }
            Compression::Zstd => {
                out.resize(budget, 0);
                let z = zstd.as_mut().expect("made for zstd above");
                z.compress_to_buffer(&input, &mut out[..]).is_ok()
            }
            other => bail!("compression {other:?} is not available in strata-bench"),
        };
        if fits {
            bail!(
                "compressreject: the block compressed into {budget} bytes ({percent:.1}% of its \
                 {}), so it was not rejected; try a smaller --compression_ratio",
                input.len()
            );
        }
        Ok(Step::Did(OpType::Compress, input.len() as u64))
    })?;
    ts.stats.add_message(&format!("(rejected; output buffer {percent:.1}% of input)"));
    Ok(())
}

/// `--compression_level` for ZSTD (32767: ZSTD's default, 3).
fn zstd_level(cx: &Ctx<'_>) -> i32 {
    match cx.flags().compression_level {
        32767 => 3,
        l => l as i32,
    }
}

/// Uncompresses the compressed block, 20 GiB of output in all.
fn uncompress(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let input = input_block(cx);
    let mut compressed = Vec::new();
    compress_block(cx, &input, &mut compressed)?;
    let mut out = Vec::with_capacity(input.len());
    cx.bytes(20 << 30).run(ts, |_| {
        uncompress_block(cx, &compressed, input.len(), &mut out)?;
        Ok(Step::Did(OpType::Uncompress, input.len() as u64))
    })?;
    std::hint::black_box(&out);
    Ok(())
}

/// 100,000 ops of 1000 atomic acquire loads each.
fn acquire_load(cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let target = AtomicU64::new(1);
    ts.stats.add_message("(each op is 1000 loads)");
    cx.ops(100_000, 1, false).run(ts, |_| {
        for _ in 0..1000 {
            std::hint::black_box(target.load(Ordering::Acquire));
        }
        Ok(Step::Did(OpType::Others, 0))
    })
}

fn compress_block(cx: &Ctx<'_>, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    match cx.cfg.compression {
        Compression::None => out.extend_from_slice(input),
        Compression::Snappy => {
            out.resize(snap::raw::max_compress_len(input.len()), 0);
            let n = snap::raw::Encoder::new().compress(input, out)?;
            out.truncate(n);
        }
        Compression::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(input)),
        Compression::Zstd => out.extend_from_slice(&zstd::bulk::compress(input, zstd_level(cx))?),
        other => bail!("compression {other:?} is not available in strata-bench"),
    }
    Ok(())
}

fn uncompress_block(cx: &Ctx<'_>, input: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    match cx.cfg.compression {
        Compression::None => {
            out.clear();
            out.extend_from_slice(input);
        }
        Compression::Snappy => {
            out.resize(raw_len, 0);
            snap::raw::Decoder::new().decompress(input, out)?;
        }
        Compression::Lz4 => {
            out.resize(raw_len, 0);
            lz4_flex::block::decompress_into(input, out)?;
        }
        Compression::Zstd => {
            out.resize(raw_len, 0);
            zstd::bulk::decompress_to_buffer(input, out)?;
        }
        other => bail!("compression {other:?} is not available in strata-bench"),
    }
    Ok(())
}
