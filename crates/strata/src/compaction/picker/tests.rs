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

fn parse_shape(text: &str) -> (Version, PickerOptions, HashSet<FileNumber>) {
    let mut o = PickerOptions {
        num_levels: 7,
        level0_file_num_compaction_trigger: 4,
        max_bytes_for_level_base: 256 << 20,
        max_bytes_for_level_multiplier: 10.0,
        dynamic_level_bytes: true,
        target_file_size_base: 64 << 20,
        target_file_size_multiplier: 1,
        max_compaction_bytes: 25 * (64 << 20),
    };
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
                        "trigger" => o.level0_file_num_compaction_trigger = v.parse().unwrap(),
                        "base" => o.max_bytes_for_level_base = v.parse().unwrap(),
                        "mult" => o.max_bytes_for_level_multiplier = v.parse().unwrap(),
                        "dynamic" => o.dynamic_level_bytes = v.parse().unwrap(),
                        "target" => {
                            o.target_file_size_base = v.parse().unwrap();
                            o.max_compaction_bytes = 25 * o.target_file_size_base;
                        }
                        other => panic!("unknown option {other}"),
                    }
                }
            }
            "busy" => busy.extend(rest.split_whitespace().map(|n| FileNumber(n.parse().unwrap()))),
            level if level.starts_with('L') => {
                let l: usize = level[1..].parse().unwrap();
                for f in rest.split_whitespace() {
                    let parts: Vec<&str> = f.split(':').collect();
                    let number: u64 = parts[0].parse().unwrap();
                    let (lo, hi) = parts[1].split_once('-').unwrap();
                    let size: u64 = parts[2].parse().unwrap();
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
                        },
                    ));
                }
            }
            other => panic!("unknown line {other}"),
        }
    }
    let v = Version::new(o.num_levels).apply(&edit).expect("valid shape");
    (v, o, busy)
}

fn names(files: &[Arc<TableFile>]) -> String {
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
