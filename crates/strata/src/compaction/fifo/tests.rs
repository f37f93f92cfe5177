//! Golden-file tests of the FIFO picker (`testdata/fifo/`), in the leveled picker's notation
//! with `style=fifo`, file data times (`:t=<secs>`) and a `now:` line.
//! `STRATA_UPDATE_GOLDEN=1` rewrites the expectations.

use super::*;
use crate::compaction::picker::tests::{describe_plan, parse_now, parse_shape, run_golden_dir};
use crate::compaction::style::CompactionStyle;

fn describe(shape: &str) -> String {
    let (v, o, busy) = parse_shape(shape);
    assert_eq!(o.style, CompactionStyle::Fifo, "FIFO shapes set style=fifo");
    let total: u64 = v.files().map(|(_, f)| f.file_size).sum();
    format!(
        "total: {total}\n{}",
        describe_plan(pick_fifo(&v, &o, &busy, parse_now(shape)).as_ref())
    )
}

#[test]
fn golden_shapes() {
    run_golden_dir("fifo", describe);
}
