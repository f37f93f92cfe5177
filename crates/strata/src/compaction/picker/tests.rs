//! Golden-file tests of the picker. Each file in `testdata/picker/` holds an LSM shape in a
//! small notation, a `---` line, and the expected targets, scores and pick. Run with
//! `STRATA_UPDATE_GOLDEN=1` to rewrite the expectations after an intended change.
//!
//! ```text
//! options: levels=4 trigger=4 base=1000 mult=10 dynamic=true target=100
//! L0: 7:a-c:50 8:b-d:50          # file number : smallest-largest user key : size
//! L3: 1:a-m:5000
//! busy: 8                         # files already being compacted
//! ```

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::*;
use crate::key::make_internal_key;
use crate::types::{SeqNo, ValueType};
use crate::version::edit::FileMetaData;
use crate::version::edit::VersionEdit;

/// Parses a shape. Besides the leveled options, `options:` takes
/// `style=universal|fifo|tiered`, universal's `ratio min_merge max_merge max_amp comp_pct
/// trivial stop=similar`, FIFO's `fifo_max ttl intra wbs`, tiered's `fan_in max_runs t_amp`;
/// a file may end in `:t=<secs>`, its data time; a `now: <secs>` line is read by
/// [`parse_now`].
pub(crate) fn parse_shape(text: &str) -> (Version, PickerOptions, HashSet<FileNumber>) {
    let mut o = PickerOptions::for_tests(7, 4);
    let mut edit = VersionEdit::default();
    let mut busy = HashSet::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (head, rest) = line.split_once(':').expect("line with ':'");
        match head {
            "options" => {
                for kv in rest.split_whitespace() {
                    let (k, v) = kv.split_once('=').expect("option k=v");
                    match k {
                        "levels" => o.num_levels = v.parse().unwrap(),
                        "trigger" => {
                            o.level0_file_num_compaction_trigger = v.parse().unwrap();
                            o.level0_batch_files = o.level0_file_num_compaction_trigger;
                        }
                        "batch" => o.level0_batch_files = v.parse().unwrap(),
                        "carry" => o.level0_carry_over = v.parse().unwrap(),
                        "drain" => o.level0_drain = v.parse().unwrap(),
                        "slowdown" => o.level0_slowdown_writes_trigger = v.parse().unwrap(),
                        "base" => o.max_bytes_for_level_base = v.parse().unwrap(),
                        "mult" => o.max_bytes_for_level_multiplier = v.parse().unwrap(),
                        "dynamic" => o.dynamic_level_bytes = v.parse().unwrap(),
                        "target" => {
                            o.target_file_size_base = v.parse().unwrap();
                            o.max_compaction_bytes = 25 * o.target_file_size_base;
                        }
                        "style" => {
                            o.style = match v {
                                "universal" => CompactionStyle::Universal,
                                "fifo" => CompactionStyle::Fifo,
                                "tiered" => CompactionStyle::Tiered,
                                "leveled" => CompactionStyle::Leveled,
                                other => panic!("unknown style {other}"),
                            }
                        }
                        "ratio" => o.universal.size_ratio = v.parse().unwrap(),
                        "min_merge" => o.universal.min_merge_width = v.parse().unwrap(),
                        "max_merge" => o.universal.max_merge_width = v.parse().unwrap(),
                        "max_amp" => {
                            o.universal.max_size_amplification_percent = v.parse().unwrap();
                        }
                        "comp_pct" => o.universal.compression_size_percent = v.parse().unwrap(),
                        "trivial" => o.universal.allow_trivial_move = v.parse().unwrap(),
                        "incremental" => o.universal.incremental = v.parse().unwrap(),
                        "max_comp" => o.max_compaction_bytes = v.parse().unwrap(),
                        "stop" => {
                            o.universal.stop_style = match v {
                                "similar" => {
                                    crate::compaction::style::CompactionStopStyle::SimilarSize
                                }
                                _ => crate::compaction::style::CompactionStopStyle::TotalSize,
                            }
                        }
                        "fifo_max" => o.fifo.max_table_files_size = v.parse().unwrap(),
                        "ttl" => o.fifo.ttl_secs = v.parse().unwrap(),
                        "intra" => o.fifo.allow_compaction = v.parse().unwrap(),
                        "wbs" => o.write_buffer_size = v.parse().unwrap(),
                        "fan_in" => o.tiered.fan_in = v.parse().unwrap(),
                        "max_runs" => o.tiered.max_sorted_runs = v.parse().unwrap(),
                        "t_amp" => {
                            o.tiered.max_size_amplification_percent = v.parse().unwrap();
                        }
                        other => panic!("unknown option {other}"),
                    }
                }
            }
            "now" => {}
            "busy" => busy.extend(rest.split_whitespace().map(|n| FileNumber(n.parse().unwrap()))),
            level if level.starts_with('L') => {
                let l: usize = level[1..].parse().unwrap();
                for f in rest.split_whitespace() {
                    let parts: Vec<&str> = f.split(':').collect();
                    let number: u64 = parts[0].parse().unwrap();
                    let (lo, hi) = parts[1].split_once('-').unwrap();
                    let size: u64 = parts[2].parse().unwrap();
                    let data_time: u64 = parts
                        .get(3)
                        .and_then(|t| t.strip_prefix("t="))
                        .map_or(0, |t| t.parse().unwrap());
                    edit.new_files.push((
                        l,
                        FileMetaData {
                            number: FileNumber(number),
                            file_size: size,
                            smallest: make_internal_key(
                                lo.as_bytes(),
                                SeqNo(number),
                                ValueType::Value,
                            ),
                            largest: make_internal_key(
                                hi.as_bytes(),
                                SeqNo(number),
                                ValueType::Value,
                            ),
                            smallest_seqno: SeqNo(number),
                            largest_seqno: SeqNo(number),
                            num_entries: 1,
                            num_deletions: 0,
                            data_time,
                            global_seqno: SeqNo::ZERO,
                            path_id: 0,
                            blob_refs: Vec::new(),
                            file_checksum: None,
                        },
                    ));
                }
            }
            other => panic!("unknown line {other}"),
        }
    }
    let v = Version::new(o.num_levels, crate::comparator::KeyOrder::Bytewise)
        .apply(&edit)
        .expect("valid shape");
    (v, o, busy)
}

/// The `now:` line of a shape (0 without one).
pub(crate) fn parse_now(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("now:"))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Runs every golden file of `testdata/<dir>`: its expectation is `describe` of its shape.
/// With `STRATA_UPDATE_GOLDEN` set, rewrites the expectations instead.
pub(crate) fn run_golden_dir(dir: &str, describe: impl Fn(&str) -> String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata").join(dir);
    let update = std::env::var_os("STRATA_UPDATE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 5, "golden files missing in {}", dir.display());
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let (shape, expected) = text.split_once("\n---\n").unwrap_or((text.as_str(), ""));
        let got = describe(shape);
        if update {
            std::fs::write(&path, format!("{shape}\n---\n{got}")).unwrap();
        } else if got != expected {
            failures.push(format!("{}:\n--- expected\n{expected}--- got\n{got}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One line describing a plan (or `pick: none`), the same for every style.
pub(crate) fn describe_plan(p: Option<&CompactionPlan>) -> String {
    let Some(p) = p else { return "pick: none\n".to_string() };
    let mut middle = String::new();
    for (l, fs) in &p.middle_inputs {
        let _ = write!(middle, " L{l}={}", names(fs));
    }
    format!(
        "pick: L{} -> L{} ({}) inputs={}{middle} output_inputs={} trivial_move={} deletion={} \
         compress={} bottommost={} target={}\n",
        p.start_level,
        p.output_level,
        p.reason,
        names(&p.inputs),
        names(&p.output_inputs),
        p.trivial_move,
        p.deletion,
        p.compress,
        p.bottommost,
        if p.target_file_size == u64::MAX {
            "none".to_string()
        } else {
            p.target_file_size.to_string()
        }
    )
}

pub(crate) fn names(files: &[Arc<TableFile>]) -> String {
    let mut v: Vec<u64> = files.iter().map(|f| f.number.0).collect();
    v.sort_unstable();
    format!("{v:?}")
}

fn describe(v: &Version, o: &PickerOptions, busy: &HashSet<FileNumber>) -> String {
    let t = level_targets(v, o);
    let scores = level_scores(v, o, busy, &t);
    let mut s = String::new();
    let _ = writeln!(s, "base_level: {}", t.base_level);
    let _ = writeln!(s, "targets: {:?}", &t.target[1..]);
    let sc: Vec<String> = scores.iter().map(|x| format!("{x:.2}")).collect();
    let _ = writeln!(s, "scores: [{}]", sc.join(", "));
    match pick_compaction(v, o, busy) {
        None => {
            let _ = writeln!(s, "pick: none");
        }
        Some(p) => {
            let _ = writeln!(
                s,
                "pick: L{} -> L{} inputs={} output_inputs={} grandparents={} trivial_move={} bottommost={}",
                p.start_level,
                p.output_level,
                names(&p.inputs),
                names(&p.output_inputs),
                names(&p.grandparents),
                p.trivial_move,
                p.bottommost
            );
        }
    }
    s
}

#[test]
fn golden_shapes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/picker");
    let update = std::env::var_os("STRATA_UPDATE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 8, "golden files missing in {}", dir.display());
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let (shape, expected) = text.split_once("\n---\n").unwrap_or((text.as_str(), ""));
        let (v, o, busy) = parse_shape(shape);
        let got = describe(&v, &o, &busy);
        if update {
            std::fs::write(&path, format!("{shape}\n---\n{got}")).unwrap();
        } else if got != expected {
            failures.push(format!("{}:\n--- expected\n{expected}--- got\n{got}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn busy_files_are_never_picked() {
    let (v, o, _) = parse_shape(
        "options: levels=4 trigger=2 base=100 mult=10 target=10\n\
         L0: 9:a-z:10 8:a-z:10\nL2: 1:a-f:60 2:g-p:60\nL3: 3:a-z:1000",
    );
    let busy: HashSet<FileNumber> = [FileNumber(9)].into();
    let p = pick_compaction(&v, &o, &busy);
    assert!(p.is_none_or(|p| p.all_inputs().all(|(_, f)| !busy.contains(&f.number))));
}
