//! `strata-bench`: db_bench-compatible benchmark driver. See the crate docs.

use std::process::ExitCode;

use strata_bench::config::Config;
use strata_bench::flags;
use strata_bench::runner::Runner;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match flags::parse(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if parsed.help {
        print!("{}", flags::usage());
        return ExitCode::SUCCESS;
    }
    if parsed.version {
        println!("strata-bench version {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    // As db_bench: like --version, nothing else is done.
    if parsed.flags.build_info {
        print!("{}", strata_bench::engine_kind::EngineKind::build_info());
        return ExitCode::SUCCESS;
    }
    let cfg = match Config::from_parsed(parsed) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut runner = Runner::new(cfg);
    match runner.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
