//! The plan: a benchmark name -> its catalog row, the parameters it runs with and its thread
//! count (`docs/db_bench.md` §2.2, §6).

use anyhow::{anyhow, Result};

use crate::catalog::{self, Benchmark, Mixed, Tweak, Workload};
use crate::config::Config;
use crate::engine::{ReadOpts, WriteOpts};
use crate::keys::KeyFormat;
use crate::values::ValueSize;

/// Parameters of one benchmark, reset before each (db_bench's `num_`, `reads_`, ...).
#[derive(Clone, Debug)]
pub struct Params {
    /// Key range of writers (`num_`: `--num`, divided by 1000 for fillsync/fill100K).
    pub num: u64,
    /// `--num` (key range of readers and the prefix computation).
    pub flags_num: u64,
    pub reads: u64,
    pub writes: u64,
    pub deletes: u64,
    pub readwrites: u64,
    pub merge_keys: u64,
    pub key: KeyFormat,
    pub value_size: ValueSize,
    pub batch: u64,
    pub wo: WriteOpts,
    pub ro: ReadOpts,
    pub duration: u64,
    /// mixgraph with `--sine_mix_rate`: the run's read and write limiters follow the sine.
    pub sine_mix: bool,
}

impl Params {
    /// The parameters before any [`Tweak`]: counts of -1 mean `--num`.
    pub fn new(cfg: &Config) -> Params {
        let f = &cfg.flags;
        let num = cfg.num;
        let or_num = |v: i64| if v < 0 { num } else { v as u64 };
        let readwrites =
            if f.writes < 0 && f.reads < 0 { num } else { (f.writes.max(f.reads)).max(0) as u64 };
        Params {
            num,
            flags_num: num,
            reads: or_num(f.reads),
            writes: or_num(f.writes),
            deletes: or_num(f.deletes),
            readwrites,
            merge_keys: or_num(f.merge_keys),
            key: cfg.key.clone(),
            value_size: cfg.value_size,
            batch: f.batch_size as u64,
            wo: WriteOpts { sync: f.sync, disable_wal: f.disable_wal },
            ro: ReadOpts {
                verify_checksums: f.verify_checksum,
                fill_cache: true,
                // Checked non-negative in `crate::config`.
                readahead_size: f.readahead_size as usize,
                total_order_seek: f.total_order_seek,
                prefix_same_as_start: f.prefix_same_as_start,
                auto_prefix_mode: f.auto_prefix_mode,
            },
            duration: f.duration as u64,
            sine_mix: false,
        }
    }
}

/// How one benchmark runs.
pub(super) struct Plan {
    pub bench: &'static Benchmark,
    pub threads: usize,
    pub params: Params,
}

/// Looks `name` up in the catalog and applies its tweaks.
pub(super) fn plan(cfg: &Config, name: &str) -> Result<Plan> {
    let bench = catalog::find(name).ok_or_else(|| anyhow!("unknown benchmark '{name}'"))?;
    let mut p = Params::new(cfg);
    let mut threads = cfg.flags.threads as usize;
    for tweak in bench.tweaks {
        match tweak {
            Tweak::KeyRangeDiv1000 => p.num /= 1000,
            Tweak::Sync => p.wo.sync = true,
            Tweak::Values100K => p.value_size = ValueSize::Fixed(100_000),
            Tweak::Batch1000 => p.batch = 1000,
            Tweak::OneThreadWithNote => {
                if threads > 1 {
                    eprintln!("{name} multithreaded not supported, use 1 thread");
                    threads = 1;
                }
            }
            Tweak::OneThreadReadAll => {
                threads = 1;
                p.reads = p.num;
            }
            Tweak::ReadsDiv1000 => p.reads /= 1000,
            Tweak::LongerKeys => p.key.key_size += 1,
            Tweak::WritesNum => p.writes = p.num,
        }
    }
    p.sine_mix = bench.workload == Workload::Mixed(Mixed::MixGraph) && cfg.flags.sine_mix_rate;
    if bench.workload.extra_background_thread() {
        threads += 1;
    }
    Ok(Plan { bench, threads, params: p })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(args: &[&str]) -> Config {
        Config::from_args(args).expect("config")
    }

    #[test]
    fn every_catalog_name_is_accepted_and_planned() {
        // readtorowcache needs flags of its own (existing keys, a row cache: its refusal
        // without them is tested in `tests/cli/catalog.rs`).
        for b in catalog::BENCHMARKS.iter().filter(|b| b.name != "readtorowcache") {
            let c = cfg(&[
                &format!("--benchmarks={}", b.name),
                "--db=/tmp/x",
                "--seed=1",
                "--backup_dir=/tmp/b",
                "--restore_dir=/tmp/r",
            ]);
            assert_eq!(c.benchmarks[0].name, b.name);
            let plan = plan(&c, b.name).expect("plan");
            assert_eq!(plan.bench.name, b.name);
        }
        assert!(plan(&cfg(&["--db=/tmp/x"]), "nosuch").is_err());
    }

    #[test]
    fn tweaks() {
        let c = cfg(&["--num=5000", "--threads=3", "--db=/tmp/x", "--seed=1"]);
        let p = plan(&c, "fillsync").expect("plan");
        assert_eq!((p.params.num, p.params.flags_num, p.params.wo.sync), (5, 5000, true));
        let p = plan(&c, "fill100K").expect("plan");
        assert_eq!((p.params.num, p.params.value_size), (5, ValueSize::Fixed(100_000)));
        assert_eq!(plan(&c, "fillbatch").expect("plan").params.batch, 1000);
        assert_eq!(plan(&c, "filluniquerandom").expect("plan").threads, 1);
        let p = plan(&c, "readtocache").expect("plan");
        assert_eq!((p.threads, p.params.reads), (1, 5000));
        assert_eq!(plan(&c, "readrandomsmall").expect("plan").params.reads, 5);
        assert_eq!(plan(&c, "readmissing").expect("plan").params.key.key_size, 17);
        assert_eq!(plan(&c, "readwhilewriting").expect("plan").threads, 4);
        assert_eq!(plan(&c, "readwhilescanning").expect("plan").threads, 4);
        assert_eq!(plan(&c, "fillseekseq").expect("plan").params.writes, 5000);
        assert_eq!(plan(&c, "readrandom").expect("plan").threads, 3);
    }
}
