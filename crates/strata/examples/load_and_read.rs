//! Loads N keys of 16 bytes with 100-byte values in random order (db_bench's fillrandom
//! shape), then reads every key back in random order, and prints throughput.
//!
//! `cargo run --release -p strata --example load_and_read -- [NUM] [DIR]`

use std::time::Instant;

use strata::{Db, Options, WriteOptions};

/// db_bench's key for `n`: 8 big-endian bytes padded with '0' to 16 bytes.
fn key(n: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    k[..8].copy_from_slice(&n.to_be_bytes());
    k
}

/// A cheap deterministic permutation step (splitmix64).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn main() -> strata::Result<()> {
    let mut args = std::env::args().skip(1);
    let num: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join(format!("strata-load-{}", std::process::id())),
        std::path::PathBuf::from,
    );
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options::default();
    let db = Db::open(&opts, &dir)?;
    let mut value = [0u8; 100];
    let wo = WriteOptions::default();

    let start = Instant::now();
    for i in 0..num {
        let k = mix(i) % num;
        value[..8].copy_from_slice(&k.to_le_bytes());
        db.put_opt(key(k), value, &wo)?;
    }
    let secs = start.elapsed().as_secs_f64();
    report("fillrandom", num, secs, 116);

    let start = Instant::now();
    let mut found = 0u64;
    for i in 0..num {
        let k = mix(i ^ 0x5555) % num;
        if db.get(key(k))?.is_some() {
            found += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    report("readrandom", num, secs, 116);
    println!("({found} of {num} found)");

    db.flush()?;
    let start = Instant::now();
    for i in 0..num {
        let k = mix(i ^ 0x7777) % num;
        db.get(key(k))?;
    }
    let secs = start.elapsed().as_secs_f64();
    report("readrandom (after flush)", num, secs, 116);
    println!("{}", db.property_value("strata.levelstats")?.unwrap_or_default());
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn report(name: &str, ops: u64, secs: f64, bytes_per_op: u64) {
    println!(
        "{name:<26}: {:>9.3} micros/op {:>9.0} ops/sec {:>8.3} seconds {ops} operations; {:>6.1} MB/s",
        secs * 1e6 / ops as f64,
        ops as f64 / secs,
        secs,
        (ops * bytes_per_op) as f64 / secs / 1048576.0
    );
}
