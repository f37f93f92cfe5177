//! A short in-process power-loss loop (`docs/contract.md` rules 1 and 2: after power loss the
//! DB is an exact prefix of the acknowledged history holding every synced write). Its own test
//! binary: the kill point configuration is process-global. `STRATA_STRESS_SECS` (default 10) and
//! `STRATA_STRESS_SEED` (default 1) change the run.

use std::time::Duration;

use strata_testkit::power::{run, PowerConfig};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn power_loss_loop() {
    let cfg = PowerConfig {
        seed: env_or("STRATA_STRESS_SEED", 1),
        duration: Duration::from_secs(env_or("STRATA_STRESS_SECS", 10)),
        ..PowerConfig::default()
    };
    let s = run(&cfg);
    println!("{}", s.render());
    assert!(s.passed(), "power-loss loop failed:\n{}", s.render());
    assert!(s.cycles >= 5, "only {} cycles ran", s.cycles);
    assert!(s.acked_sync > 0 && s.acked_nosync > 0);
}
