//! `strata-stress`: Strata's crash loop, power-loss loop and corruption matrix.
//!
//! ```text
//! strata-stress [--mode kill|power|both|corruption] [--duration SECS] [--seed N]
//!               [--threads N] [--keys N] [--cycles N] [--dir PATH]
//!               [--kill-points auto|none|SPEC] [--min-cycle-ms N] [--max-cycle-ms N]
//!               [--samples N] [--verbose]
//! ```
//!
//! Exit code 0 when every check passed, 1 on any violation, 2 on bad arguments.
//! `--child` is the internal mode the kill loop starts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use strata_testkit::corruption::{self, MatrixConfig};
use strata_testkit::crash::{self, ChildArgs, KillConfig, KillPoints};
use strata_testkit::power::{self, PowerConfig};

const USAGE: &str = "usage: strata-stress [--mode kill|power|both|corruption] [--duration SECS] \
[--seed N] [--threads N] [--keys N] [--cycles N] [--dir PATH] [--kill-points auto|none|SPEC] \
[--min-cycle-ms N] [--max-cycle-ms N] [--samples N] [--verbose]";

struct Args {
    mode: String,
    duration: f64,
    seed: u64,
    threads: u32,
    keys: u32,
    cycles: u64,
    dir: Option<PathBuf>,
    kill_points: KillPoints,
    min_cycle_ms: u64,
    max_cycle_ms: u64,
    samples: u64,
    verbose: bool,
    child: bool,
    state: Option<PathBuf>,
    progress: Option<PathBuf>,
    hits: Option<PathBuf>,
    clean_close_ms: Option<u64>,
    wal_dir: Option<PathBuf>,
    db_paths: bool,
    key_order: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        mode: "both".into(),
        duration: 60.0,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        threads: 4,
        keys: 10_000,
        cycles: u64::MAX,
        dir: None,
        kill_points: KillPoints::Auto,
        min_cycle_ms: 100,
        max_cycle_ms: 2000,
        samples: 2000,
        verbose: false,
        child: false,
        state: None,
        progress: None,
        hits: None,
        clean_close_ms: None,
        wal_dir: None,
        db_paths: false,
        key_order: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|_| format!("{flag}: not a number: {s}"));
        match flag.as_str() {
            "--mode" => a.mode = val()?,
            "--duration" => {
                let v = val()?;
                a.duration = v.parse().map_err(|_| format!("--duration: not a number: {v}"))?;
            }
            "--seed" => a.seed = num(val()?)?,
            "--threads" => a.threads = num(val()?)?.clamp(1, 64) as u32,
            "--keys" => a.keys = num(val()?)?.clamp(16, 10_000_000) as u32,
            "--cycles" => a.cycles = num(val()?)?,
            "--dir" => a.dir = Some(PathBuf::from(val()?)),
            "--kill-points" => {
                a.kill_points = match val()?.as_str() {
                    "auto" => KillPoints::Auto,
                    "none" => KillPoints::None,
                    s => KillPoints::Spec(s.to_string()),
                }
            }
            "--min-cycle-ms" => a.min_cycle_ms = num(val()?)?,
            "--max-cycle-ms" => a.max_cycle_ms = num(val()?)?,
            "--samples" => a.samples = num(val()?)?,
            "--verbose" => a.verbose = true,
            "--child" => a.child = true,
            "--state" => a.state = Some(PathBuf::from(val()?)),
            "--progress" => a.progress = Some(PathBuf::from(val()?)),
            "--hits" => a.hits = Some(PathBuf::from(val()?)),
            "--clean-close-ms" => a.clean_close_ms = Some(num(val()?)?),
            "--wal-dir" => a.wal_dir = Some(PathBuf::from(val()?)),
            "--db-paths" => a.db_paths = true,
            "--key-order" => a.key_order = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    if a.min_cycle_ms > a.max_cycle_ms {
        a.max_cycle_ms = a.min_cycle_ms;
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if a.child {
        let (Some(dir), Some(state), Some(progress)) = (a.dir, a.state, a.progress) else {
            eprintln!("--child needs --dir, --state and --progress");
            return ExitCode::from(2);
        };
        let code = crash::child_main(&ChildArgs {
            dir,
            state,
            progress,
            hits: a.hits,
            seed: a.seed,
            threads: a.threads,
            max_life: a.clean_close_ms.map_or(Duration::from_secs(120), Duration::from_millis),
            clean_close: a.clean_close_ms.is_some(),
            wal_dir: a.wal_dir,
            db_paths: a.db_paths,
            key_order: a.key_order,
        });
        return ExitCode::from(code as u8);
    }
    let both = a.mode == "both";
    let secs = if both { a.duration / 2.0 } else { a.duration };
    let duration = Duration::from_secs_f64(secs.max(0.0));
    let mut ok = true;
    let mut ran = false;
    if a.mode == "kill" || both {
        ran = true;
        let exe = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("cannot find my own executable: {e}");
                return ExitCode::from(2);
            }
        };
        let dir = a.dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("strata-stress-{}-{}", std::process::id(), a.seed))
        });
        let s = crash::run(&KillConfig {
            seed: a.seed,
            duration,
            max_cycles: a.cycles,
            threads: a.threads,
            keys: a.keys,
            dir,
            exe,
            kill_points: a.kill_points.clone(),
            min_cycle_ms: a.min_cycle_ms,
            max_cycle_ms: a.max_cycle_ms,
            verbose: a.verbose,
        });
        print!("{}", s.render());
        ok &= s.passed();
    }
    if a.mode == "power" || both {
        ran = true;
        let s = power::run(&PowerConfig {
            seed: a.seed,
            duration,
            max_cycles: a.cycles,
            threads: a.threads,
            keys: a.keys.min(5000),
            max_cycle_ms: (a.max_cycle_ms / 10).max(5),
            kill_points: !matches!(a.kill_points, KillPoints::None),
            verbose: a.verbose,
        });
        print!("{}", s.render());
        ok &= s.passed();
    }
    if a.mode == "corruption" {
        ran = true;
        let m = corruption::run_large(&MatrixConfig { seed: a.seed, samples: a.samples });
        print!("{}", m.render());
        ok &= m.passed();
    }
    if !ran {
        eprintln!("unknown mode {}\n{USAGE}", a.mode);
        return ExitCode::from(2);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
