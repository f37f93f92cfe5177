//! `cache_bench`: RocksDB's cache micro-benchmark for Strata's caches
//! (`strata_bench::cache_bench`).

use std::process::ExitCode;

use strata_bench::cache_bench::{run, CacheBenchFlags};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flags = match CacheBenchFlags::parse(&args) {
        Ok(Some(f)) => f,
        Ok(None) => {
            print!("{}", CacheBenchFlags::usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}
