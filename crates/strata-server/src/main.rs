//! The `strata-server` binary: see [`strata_server::config`] for its flags.

use clap::Parser;
use std::io::Write as _;

/// See the `mimalloc` feature in Cargo.toml.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Freed memory stays with the allocator for 10 s before it goes back to the OS (jemalloc's
/// default decay, which redis-server runs with), unless `MIMALLOC_PURGE_DELAY` says otherwise.
/// mimalloc's own 1 s made the server fault in its memtables' and requests' pages again and
/// again: 30-40K page faults in 300K YCSB-A operations, about 1K with 10 s.
#[cfg(feature = "mimalloc")]
fn set_allocator_decay() {
    /// `mi_option_purge_delay` in `mimalloc.h` (v2 and v3; the enum keeps retired entries so
    /// that numbers never move).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options (an atomic store); any value is valid.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10_000) };
    }
}

/// `disable-thp yes` (Redis's setting and default): no transparent huge pages for this
/// process from here on (`PR_SET_THP_DISABLE`, as redis-server does at start). With them,
/// the first touch of each 2 MiB range the allocator or a memtable maps zeroes all of it,
/// where the server's short-lived buffers use a few pages (`docs/measurements.md`). A kernel
/// that refuses is reported and the server goes on with huge pages.
fn disable_thp() {
    // SAFETY: prctl with an integer option and integer arguments touches no memory of ours.
    let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if r != 0 {
        eprintln!(
            "strata-server: transparent huge pages stay on (disable-thp): prctl: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn main() {
    #[cfg(feature = "mimalloc")]
    set_allocator_decay();
    let flags = strata_server::config::Flags::parse();
    let cfg = match strata_server::config::Config::resolve(flags) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("strata-server: {e}");
            std::process::exit(2);
        }
    };
    if cfg.disable_thp {
        disable_thp();
    }
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
