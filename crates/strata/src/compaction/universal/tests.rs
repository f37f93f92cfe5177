//! Golden-file tests of the universal picker (`testdata/universal/`), in the leveled picker's
//! notation (`compaction/picker/tests.rs`) with `style=universal`; each expectation lists the
//! sorted runs (level:size, `*` = busy) and the pick. `STRATA_UPDATE_GOLDEN=1` rewrites them.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::*;
use crate::compaction::picker::tests::{describe_plan, parse_shape, run_golden_dir};
use crate::compaction::style::CompactionStyle;

fn describe(shape: &str) -> String {
    let (v, o, busy) = parse_shape(shape);
    assert_eq!(o.style, CompactionStyle::Universal, "universal shapes set style=universal");
    let runs = sorted_runs(&v, &busy);
    let mut s = String::new();
    let r: Vec<String> = runs
        .iter()
        .map(|r| format!("L{}:{}{}", r.level, r.size, if r.busy { "*" } else { "" }))
        .collect();
    let _ = writeln!(s, "runs: [{}]", r.join(" "));
    let _ = writeln!(s, "pending: {}", estimated_pending_compaction_bytes(&v, &o));
    s.push_str(&describe_plan(pick_universal(&v, &o, &busy).as_ref()));
    s
}

#[test]
fn golden_shapes() {
    run_golden_dir("universal", describe);
}

/// Applies the plan as the job would (outputs: one file per plan holding the inputs' range,
/// at the output level) and checks that the runs stay in age order: every run's data is newer
/// than every run after it.
#[test]
fn repeated_picks_keep_runs_in_age_order_and_bound_size_amplification() {
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};
    use crate::version::edit::{FileMetaData, VersionEdit};
    let mut o = PickerOptions::for_tests(7, 4);
    o.style = CompactionStyle::Universal;
    let mut v = Version::new(7, crate::comparator::KeyOrder::Bytewise);
    let mut next = 1u64;
    let mut seq = 1u64;
    let busy = HashSet::new();
    let flush = 100u64;
    for _ in 0..400 {
        // A flush: a new L0 file, newer than everything.
        let mut e = VersionEdit::default();
        e.new_files.push((
            0,
            FileMetaData {
                number: FileNumber(next),
                file_size: flush,
                smallest: make_internal_key(b"a", SeqNo(seq), ValueType::Value),
                largest: make_internal_key(b"z", SeqNo(seq + 9), ValueType::Value),
                smallest_seqno: SeqNo(seq),
                largest_seqno: SeqNo(seq + 9),
                num_entries: 10,
                ..FileMetaData::default()
            },
        ));
        next += 1;
        seq += 10;
        v = v.apply(&e).unwrap();
        while let Some(p) = pick_universal(&v, &o, &busy) {
            // Overwrites: a merge's output is as large as its largest input plus a tenth of the
            // rest (most keys are duplicates).
            let sizes: Vec<u64> = p.all_inputs().map(|(_, f)| f.file_size).collect();
            let largest = *sizes.iter().max().unwrap();
            let out_size = largest + (sizes.iter().sum::<u64>() - largest) / 10;
            let lo = p.all_inputs().map(|(_, f)| f.smallest_seqno).min().unwrap();
            let hi = p.all_inputs().map(|(_, f)| f.largest_seqno).max().unwrap();
            let mut e = VersionEdit::default();
            for (l, f) in p.all_inputs() {
                e.deleted_files.push((l, f.number));
            }
            e.new_files.push((
                p.output_level,
                FileMetaData {
                    number: FileNumber(next),
                    file_size: out_size,
                    smallest: make_internal_key(b"a", hi, ValueType::Value),
                    largest: make_internal_key(b"z", lo, ValueType::Value),
                    smallest_seqno: lo,
                    largest_seqno: hi,
                    num_entries: 10,
                    ..FileMetaData::default()
                },
            ));
            next += 1;
            v = v.apply(&e).unwrap();
        }
        let runs = sorted_runs(&v, &busy);
        for w in runs.windows(2) {
            let newer = w[0].files.iter().map(|f| f.smallest_seqno).min().unwrap();
            let older = w[1].files.iter().map(|f| f.largest_seqno).max().unwrap();
            assert!(newer > older, "runs out of age order: {runs:?}");
        }
        assert!(runs.len() <= o.level0_file_num_compaction_trigger, "{runs:?}");
        // The size-amplification rule holds after each round: the runs above the oldest are
        // below the bound, or fewer than the trigger exist (nothing may be picked then).
        let (oldest, newer) = runs.split_last().unwrap();
        let newer: u64 = newer.iter().map(|r| r.size).sum();
        assert!(
            newer * 100 < 200 * oldest.size || runs.len() < o.level0_file_num_compaction_trigger,
            "size amplification over the bound: {runs:?}"
        );
    }
}

/// No accepted configuration stops writes for good: with as many sorted runs as the sanitized
/// slowdown (so also stop) trigger, whatever their sizes, the picker picks a merge.
#[test]
fn sanitized_stall_triggers_are_run_counts_the_picker_always_reduces() {
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};
    use crate::version::edit::{FileMetaData, VersionEdit};
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for trigger in 1..6 {
        for min_merge_width in 2..5 {
            let opts = crate::Options {
                compaction_style: CompactionStyle::Universal,
                level0_file_num_compaction_trigger: trigger,
                level0_slowdown_writes_trigger: 0,
                level0_stop_writes_trigger: 0,
                compaction_options_universal: crate::UniversalCompactionOptions {
                    min_merge_width,
                    ..Default::default()
                },
                ..crate::Options::default()
            }
            .sanitized();
            let o = opts.picker_options();
            for _ in 0..20 {
                let mut e = VersionEdit::default();
                for i in 0..opts.level0_slowdown_writes_trigger as u64 {
                    let size = 10u64.pow(rng.gen_range(0..6));
                    e.new_files.push((
                        0,
                        FileMetaData {
                            number: FileNumber(i + 1),
                            file_size: size,
                            smallest: make_internal_key(b"a", SeqNo(i + 1), ValueType::Value),
                            largest: make_internal_key(b"z", SeqNo(i + 1), ValueType::Value),
                            smallest_seqno: SeqNo(i + 1),
                            largest_seqno: SeqNo(i + 1),
                            ..FileMetaData::default()
                        },
                    ));
                }
                let v = Version::new(7, crate::comparator::KeyOrder::Bytewise).apply(&e).unwrap();
                assert!(
                    pick_universal(&v, &o, &HashSet::new()).is_some(),
                    "trigger {trigger} width {min_merge_width}: {:?}",
                    sorted_runs(&v, &HashSet::new())
                );
            }
        }
    }
}

/// The DB runs several merges at once, each picked with the files of those running marked
/// busy, and they finish in any order, between flushes. Every finishing edit must apply (no
/// two files of a level >= 1 overlap: a merge's output level holds nothing but its own
/// inputs until it finishes) and the runs must stay in age order. Outputs span their inputs'
/// whole key range (the widest a real output can be), cut into up to three files outside L0.
#[test]
fn concurrent_merges_finish_in_any_order_without_overlap_or_reordering() {
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};
    use crate::version::edit::{FileMetaData, VersionEdit};
    use rand::{Rng, SeedableRng};
    const MB: u64 = 1 << 20;
    let key = |n: u32| format!("k{n:04}").into_bytes();
    let file = |number: u64, size: u64, lo: u32, hi: u32, seqs: (u64, u64)| FileMetaData {
        number: FileNumber(number),
        file_size: size,
        smallest: make_internal_key(&key(lo), SeqNo(seqs.1), ValueType::Value),
        largest: make_internal_key(&key(hi), SeqNo(seqs.0), ValueType::Value),
        smallest_seqno: SeqNo(seqs.0),
        largest_seqno: SeqNo(seqs.1),
        num_entries: 10,
        ..FileMetaData::default()
    };
    let key_no = |ikey: &[u8]| -> u32 {
        std::str::from_utf8(&user_key(ikey)[1..]).unwrap().parse().unwrap()
    };
    let (mut concurrent, mut trivial, mut incremental) = (0, 0, 0);
    for seed in 0..120 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut o = PickerOptions::for_tests(7, rng.gen_range(2..6));
        o.style = CompactionStyle::Universal;
        o.max_compaction_bytes = 96 * MB;
        o.target_file_size_base = 32 * MB;
        o.universal.incremental = rng.gen_bool(0.5);
        o.universal.allow_trivial_move = rng.gen_bool(0.5);
        o.universal.size_ratio = rng.gen_range(0..30);
        o.universal.max_size_amplification_percent = [25, 100, 200][rng.gen_range(0..3)];
        let mut v = Version::new(7, crate::comparator::KeyOrder::Bytewise);
        let (mut next, mut seq) = (1u64, 1u64);
        let mut running: Vec<CompactionPlan> = Vec::new();
        for _ in 0..250 {
            match rng.gen_range(0..3) {
                0 => {
                    let lo = rng.gen_range(0..900);
                    let hi = lo + rng.gen_range(0..100);
                    let size = rng.gen_range(1..=48) * MB;
                    let mut e = VersionEdit::default();
                    e.new_files.push((0, file(next, size, lo, hi, (seq, seq + 9))));
                    next += 1;
                    seq += 10;
                    v = v.apply(&e).unwrap();
                }
                1 if running.len() < 3 => {
                    let busy: HashSet<FileNumber> = running
                        .iter()
                        .flat_map(|p| p.all_inputs().map(|(_, f)| f.number))
                        .collect();
                    if let Some(p) = pick_universal(&v, &o, &busy) {
                        assert!(
                            p.all_inputs().all(|(_, f)| !busy.contains(&f.number)),
                            "seed {seed}: a pick took a busy file"
                        );
                        concurrent += usize::from(!running.is_empty());
                        trivial += usize::from(p.trivial_move);
                        incremental += usize::from(p.reason.contains("incremental"));
                        running.push(p);
                    }
                }
                _ if !running.is_empty() => {
                    let p = running.swap_remove(rng.gen_range(0..running.len()));
                    let mut e = VersionEdit::default();
                    for (l, f) in p.all_inputs() {
                        e.deleted_files.push((l, f.number));
                    }
                    if p.trivial_move {
                        for (_, f) in p.all_inputs() {
                            e.new_files.push((p.output_level, f.meta.clone()));
                        }
                    } else {
                        let lo = p.all_inputs().map(|(_, f)| key_no(&f.smallest)).min().unwrap();
                        let hi = p.all_inputs().map(|(_, f)| key_no(&f.largest)).max().unwrap();
                        let s0 = p.all_inputs().map(|(_, f)| f.smallest_seqno.0).min().unwrap();
                        let s1 = p.all_inputs().map(|(_, f)| f.largest_seqno.0).max().unwrap();
                        let size = p.input_bytes() * 9 / 10;
                        let pieces = if p.output_level == 0 { 1 } else { rng.gen_range(1..=3) };
                        let mut cuts: Vec<u32> =
                            (1..pieces).map(|_| rng.gen_range(lo..=hi)).collect();
                        cuts.sort_unstable();
                        cuts.dedup();
                        let mut from = lo;
                        for to in cuts.into_iter().chain([hi + 1]).filter(|&c| c > lo) {
                            e.new_files.push((
                                p.output_level,
                                file(next, size / pieces, from, to - 1, (s0, s1)),
                            ));
                            next += 1;
                            from = to;
                        }
                    }
                    if let Err(err) = v.apply(&e) {
                        panic!("seed {seed}: {} finished into {:?}: {err}", p.reason, v.levels);
                    }
                    v = v.apply(&e).unwrap();
                }
                _ => {}
            }
            // An incremental merge moves a key range of the second oldest run into the oldest:
            // then the order holds per key, not per run (what is left of the second oldest run
            // is newer than the oldest run only where their keys meet), which these outputs,
            // carrying all their inputs' sequence numbers, cannot show.
            if o.universal.incremental {
                continue;
            }
            let runs = sorted_runs(&v, &HashSet::new());
            for w in runs.windows(2) {
                let newer = w[0].files.iter().map(|f| f.smallest_seqno).min().unwrap();
                let older = w[1].files.iter().map(|f| f.largest_seqno).max().unwrap();
                assert!(newer > older, "seed {seed}: runs out of age order: {runs:?}");
            }
        }
    }
    // The walk exercised what it is about.
    assert!(concurrent > 100, "{concurrent} picks made while others ran");
    assert!(trivial > 0 && incremental > 0, "{trivial} trivial moves, {incremental} incremental");
}
