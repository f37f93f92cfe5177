//! A short kill -9 crash loop (`docs/contract.md` rule 2: acknowledged writes survive a killed
//! process), running the real `strata-stress` binary. `STRATA_STRESS_SECS` (default 10) and
//! `STRATA_STRESS_SEED` (default 1) change the run.

use std::process::Command;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn kill_9_crash_loop() {
    let secs = env_or("STRATA_STRESS_SECS", 10);
    let seed = env_or("STRATA_STRESS_SEED", 1);
    let dir = std::env::temp_dir().join(format!("strata-crash-loop-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_strata-stress"))
        .args(["--mode", "kill", "--duration", &secs.to_string(), "--seed", &seed.to_string()])
        .args(["--keys", "2000", "--threads", "4", "--min-cycle-ms", "50", "--max-cycle-ms", "700"])
        .arg("--dir")
        .arg(&dir)
        .output()
        .expect("run strata-stress");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "crash loop failed:\n{stdout}");
    assert!(stdout.contains("acknowledged writes lost:    0"));
    let cycles: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("cycles:"))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    assert!(cycles >= 5, "only {cycles} cycles ran");
}
