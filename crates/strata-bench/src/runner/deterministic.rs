//! fillseqdeterministic and filluniquerandomdeterministic (`docs/db_bench.md` §5.2): an LSM of
//! a known shape, built as db_bench's `DoDeterministicCompact` builds it.
//!
//! With automatic compactions off (required), rounds of puts each become a sorted run of L0
//! files: the first round in the benchmark's order (sequential or unique random), the later
//! ones unique random (a prefix of the same shuffled order), each round's count the last one's
//! divided by `--max_bytes_for_level_multiplier` (universal: times `100 / (size_ratio + 200)`).
//! The rounds end when one adds no file, has nothing to write, flushes into a single file, or
//! (leveled) the runs fill every level above the bottom, the last run then leaving its newest
//! third in L0. Each run is then compacted with CompactFiles into its level: the first (the
//! largest) into the bottom level, the next one level up, and so on (universal: the runs past
//! the top into L0). FIFO: rounds until L0 holds the FIFO size budget, then one full
//! compaction.

use std::collections::HashSet;

use anyhow::{bail, Result};

use super::op_loop::{Ctx, Worker};
use crate::engine::Engine;
use crate::keys::WriteMode;

/// RocksDB's default `compaction_options_fifo.max_table_files_size` (1 GiB), the budget when
/// `--fifo_compaction_max_table_files_size_mb` is 0.
const FIFO_DEFAULT_BYTES: u64 = 1 << 30;

/// RocksDB's default universal `size_ratio`, when `--universal_size_ratio` is 0.
const UNIVERSAL_DEFAULT_RATIO: u64 = 1;

/// The number a table file's name carries (`000123.sst`, `/000123.sst`): newer files have
/// larger ones.
fn file_number(name: &str) -> u64 {
    let stem = name.rsplit('/').next().unwrap_or(name);
    let digits: String = stem.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// The L0 files not in `seen`, newest first (the order RocksDB lists L0 in).
fn new_l0_files(engine: &dyn Engine, seen: &HashSet<String>) -> Result<Vec<String>> {
    let mut files: Vec<String> = engine
        .live_files()?
        .into_iter()
        .filter(|f| f.level == 0 && !seen.contains(&f.name))
        .map(|f| f.name)
        .collect();
    files.sort_by_key(|n| std::cmp::Reverse(file_number(n)));
    Ok(files)
}

pub(super) fn run(mode: WriteMode, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let f = cx.flags();
    if !f.disable_auto_compactions {
        bail!("Please disable_auto_compactions in FillDeterministic benchmark");
    }
    let engine = cx.engine;
    let num_levels = usize::try_from(f.num_levels).unwrap_or(0);
    match f.compaction_style {
        0 | 1 if num_levels < 2 => bail!("num_levels should be larger than 1"),
        0 | 1 => {}
        // db_bench also wants --num_levels=1 here; the engine judges its level count (Strata
        // keeps at least two, a FIFO DB's tables all in L0 either way).
        2 => return fifo(mode, cx, ts),
        _ => bail!("None compaction is not supported"),
    }
    let leveled = f.compaction_style == 0;
    let output_level = num_levels - 1;
    let mut writes = cx.p.writes;
    let mut seen = HashSet::new();
    let mut runs: Vec<Vec<String>> = Vec::new();
    loop {
        let m = if runs.is_empty() { mode } else { WriteMode::UniqueRandom };
        super::fill::put_count(m, writes, cx, ts)?;
        engine.flush()?;
        let run = new_l0_files(engine, &seen)?;
        if run.is_empty() || writes == 0 {
            break;
        }
        seen.extend(run.iter().cloned());
        let single = run.len() == 1;
        runs.push(run);
        if single {
            break;
        }
        if leveled && runs.len() == output_level {
            // The newest third of the run stays in L0.
            let last = runs.last_mut().expect("a run was just pushed");
            let keep_in_l0 = last.len() / 3;
            last.drain(..keep_in_l0);
            break;
        }
        writes = if leveled {
            // db_bench divides by the multiplier cast to an integer.
            writes / (f.max_bytes_for_level_multiplier as u64).max(1)
        } else {
            let ratio = u64::try_from(f.universal_size_ratio)
                .ok()
                .filter(|&r| r > 0)
                .unwrap_or(UNIVERSAL_DEFAULT_RATIO);
            writes * 100 / (ratio + 200)
        };
    }
    let needed = if leveled { num_levels - 1 } else { num_levels };
    if runs.len() < needed {
        bail!("n is too small to fill {num_levels} levels");
    }
    for (j, run) in runs.iter().enumerate() {
        if leveled {
            println!("{}", run.len());
        }
        let level = output_level.saturating_sub(j);
        engine.compact_files(run, level)?;
    }
    Ok(())
}

/// FIFO: rounds of puts, each flushed, until L0 holds the size budget; then one compaction
/// of the whole range.
fn fifo(mode: WriteMode, cx: &Ctx<'_>, ts: &mut Worker<'_>) -> Result<()> {
    let engine = cx.engine;
    let budget = match cx.flags().fifo_compaction_max_table_files_size_mb {
        0 => FIFO_DEFAULT_BYTES,
        mb => mb << 20,
    };
    let mut first = true;
    loop {
        let m = if first { mode } else { WriteMode::UniqueRandom };
        first = false;
        let before = engine.live_files()?.len();
        super::fill::put_count(m, cx.p.writes, cx, ts)?;
        engine.flush()?;
        let files = engine.live_files()?.len();
        let bytes: u64 = engine
            .property("rocksdb.total-sst-files-size")?
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if bytes >= budget {
            break;
        }
        if files == before {
            bail!(
                "the writes added no table file before L0 reached the FIFO budget of {budget} \
                 bytes"
            );
        }
    }
    engine.compact_range()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_numbers_order_names_of_either_engine() {
        assert_eq!(file_number("000123.sst"), 123);
        assert_eq!(file_number("/000009.sst"), 9);
        assert_eq!(file_number("x.sst"), 0);
    }
}
