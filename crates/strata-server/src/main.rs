//! The `strata-server` binary: see [`strata_server::config`] for its flags.

use clap::Parser;
use std::io::Write as _;

/// See the `mimalloc` feature in Cargo.toml.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let flags = strata_server::config::Flags::parse();
    let cfg = match strata_server::config::Config::resolve(flags) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("strata-server: {e}");
            std::process::exit(2);
        }
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cfg.io_threads {
        rt.worker_threads(n);
    }
    let rt = match rt.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("strata-server: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let res = rt.block_on(strata_server::run(cfg));
    // Connection tasks still running after the DB is closed are abandoned, not waited for.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let _ = std::io::stdout().flush();
    if let Err(e) = res {
        eprintln!("strata-server: {e}");
        std::process::exit(1);
    }
}
