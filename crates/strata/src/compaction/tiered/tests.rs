//! Golden-file tests of the tiered picker (`testdata/tiered/`), in the leveled picker's
//! notation (`compaction/picker/tests.rs`) with `style=tiered`; each expectation lists the
//! sorted runs (level:size, `*` = busy), the pending-bytes estimate and the pick.
//! `STRATA_UPDATE_GOLDEN=1` rewrites them.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::*;
use crate::compaction::picker::tests::{describe_plan, parse_shape, run_golden_dir};
use crate::compaction::style::CompactionStyle;
use crate::key::make_internal_key;
use crate::types::{SeqNo, ValueType};
use crate::version::edit::{FileMetaData, VersionEdit};

fn describe(shape: &str) -> String {
    let (v, o, busy) = parse_shape(shape);
    assert_eq!(o.style, CompactionStyle::Tiered, "tiered shapes set style=tiered");
    let runs = sorted_runs(&v, &busy);
    let mut s = String::new();
    let r: Vec<String> = runs
        .iter()
        .map(|r| format!("L{}:{}{}", r.level, r.size, if r.busy { "*" } else { "" }))
        .collect();
    let _ = writeln!(s, "runs: [{}]", r.join(" "));
    let _ = writeln!(s, "pending: {}", estimated_pending_compaction_bytes(&v, &o));
    s.push_str(&describe_plan(pick_tiered(&v, &o, &busy).as_ref()));
    s
}

#[test]
fn golden_shapes() {
    run_golden_dir("tiered", describe);
}

/// A flush of `size` bytes over keys a..z with seqnos `seq..seq+9`.
fn flush_file(number: u64, seq: u64, size: u64) -> FileMetaData {
    FileMetaData {
        number: FileNumber(number),
        file_size: size,
        smallest: make_internal_key(b"a", SeqNo(seq + 9), ValueType::Value),
        largest: make_internal_key(b"z", SeqNo(seq), ValueType::Value),
        smallest_seqno: SeqNo(seq),
        largest_seqno: SeqNo(seq + 9),
        num_entries: 10,
        ..FileMetaData::default()
    }
}

/// 600 flushes of overwrites, each followed by every compaction the picker asks for (an
/// output is its largest input plus a tenth of the rest: most keys are duplicates). After each
/// round: runs in age order, within the run budget, and within the space bound; the oldest run
/// is rewritten only by the space-bound rule; and the bytes written per flushed byte stay
/// within the cost model of the module doc (1 + log_T(P·N/B) + 1/P, with slack for the tiers
/// not being exact powers of T).
#[test]
fn repeated_picks_keep_the_budget_the_bound_and_the_cost_model() {
    let mut o = PickerOptions::for_tests(7, 4);
    o.style = CompactionStyle::Tiered;
    o.tiered.fan_in = 4;
    o.tiered.max_sorted_runs = 8;
    let mut v = Version::new(7, crate::comparator::KeyOrder::Bytewise);
    let (mut next, mut seq) = (1u64, 1u64);
    let busy = HashSet::new();
    let flush = 100u64;
    let (mut flushed, mut written) = (0u64, 0u64);
    for _ in 0..600 {
        let mut e = VersionEdit::default();
        e.new_files.push((0, flush_file(next, seq, flush)));
        next += 1;
        seq += 10;
        flushed += flush;
        written += flush;
        v = v.apply(&e).unwrap();
        while let Some(p) = pick_tiered(&v, &o, &busy) {
            let oldest = sorted_runs(&v, &busy).last().unwrap().files[0].number;
            if p.all_inputs().any(|(_, f)| f.number == oldest) {
                assert_eq!(p.reason, "tiered size amplification", "{p:?}");
            }
            let sizes: Vec<u64> = p.all_inputs().map(|(_, f)| f.file_size).collect();
            let largest = *sizes.iter().max().unwrap();
            let out_size = largest + (sizes.iter().sum::<u64>() - largest) / 10;
            let lo = p.all_inputs().map(|(_, f)| f.smallest_seqno).min().unwrap();
            let hi = p.all_inputs().map(|(_, f)| f.largest_seqno).max().unwrap();
            let mut e = VersionEdit::default();
            for (l, f) in p.all_inputs() {
                e.deleted_files.push((l, f.number));
            }
            let mut out = flush_file(next, lo.0, out_size);
            out.largest_seqno = hi;
            out.smallest = make_internal_key(b"a", hi, ValueType::Value);
            e.new_files.push((p.output_level, out));
            next += 1;
            written += out_size;
            v = v.apply(&e).unwrap();
        }
        let runs = sorted_runs(&v, &busy);
        for w in runs.windows(2) {
            let newer = w[0].files.iter().map(|f| f.smallest_seqno).min().unwrap();
            let older = w[1].files.iter().map(|f| f.largest_seqno).max().unwrap();
            assert!(newer > older, "runs out of age order: {runs:?}");
        }
        assert!(runs.len() <= 8, "over the run budget: {runs:?}");
        let (oldest, newer) = runs.split_last().unwrap();
        let newer: u64 = newer.iter().map(|r| r.size).sum();
        assert!(newer * 100 < 200 * oldest.size, "over the space bound: {runs:?}");
    }
    // Live data is the oldest run at most rounds; P = 2, T = 4.
    let live = sorted_runs(&v, &busy).last().unwrap().size as f64;
    let model = 1.0 + (2.0 * live / flush as f64).log(4.0) + 0.5;
    let w = written as f64 / flushed as f64;
    assert!(w <= model + 1.0, "write amplification {w:.2} above the model's {model:.2}");
}
