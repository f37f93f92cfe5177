//! Range deletions among the writes of the fill benchmarks and of the *while* benchmarks'
//! background writer (`--writes_per_range_tombstone` and its companions, `docs/db_bench.md`
//! §5.2), as db_bench's `DoWrite` and `BGWriter` place them: after the `n`-th write with
//! `n > --writes_before_delete_range`, `n - before` a multiple of
//! `--writes_per_range_tombstone` and at most `--max_num_range_tombstones` such multiples,
//! the keys `b .. b + --range_tombstone_width` are deleted (`b` a key number the writer draws
//! as it draws its puts'), with one range deletion or, with `--expand_range_tombstones`, one
//! point delete per key.

use crate::engine::Batch;
use crate::flags::Flags;
use crate::keys::KeyFormat;
use crate::stats::print_flush;

/// The placement rule and the deletions made.
pub(super) struct RangeTombstones {
    before: u64,
    every: u64,
    width: u64,
    max: u64,
    expand: bool,
    made: u64,
    begin: Vec<u8>,
    end: Vec<u8>,
}

impl RangeTombstones {
    /// `None` unless `--writes_per_range_tombstone` is positive (the widths and counts are
    /// checked non-negative in `crate::config`).
    pub fn new(f: &Flags) -> Option<Self> {
        (f.writes_per_range_tombstone > 0).then(|| RangeTombstones {
            before: f.writes_before_delete_range as u64,
            every: f.writes_per_range_tombstone as u64,
            width: f.range_tombstone_width as u64,
            max: f.max_num_range_tombstones as u64,
            expand: f.expand_range_tombstones,
            made: 0,
            begin: Vec::new(),
            end: Vec::new(),
        })
    }

    /// The most deletions a writer makes: its key space grows by as many numbers, as
    /// db_bench's does, so that the unique-random order has one for each.
    pub fn max(f: &Flags) -> u64 {
        if f.writes_per_range_tombstone > 0 {
            f.max_num_range_tombstones as u64
        } else {
            0
        }
    }

    /// Whether a deletion follows the `written`-th write.
    pub fn due(&self, written: u64) -> bool {
        written > self.before
            && (written - self.before) / self.every <= self.max
            && (written - self.before).is_multiple_of(self.every)
    }

    /// Adds the deletion of the keys from number `first` on to `batch`.
    pub fn add(&mut self, first: u64, key: &KeyFormat, num: u64, batch: &mut Batch) {
        self.made += 1;
        if self.expand {
            for k in first..first + self.width {
                key.encode(k, num, &mut self.begin);
                batch.delete(&self.begin);
            }
        } else {
            key.encode(first, num, &mut self.begin);
            key.encode(first + self.width, num, &mut self.end);
            batch.delete_range(&self.begin, &self.end);
        }
    }

    /// db_bench's line after a writer's last write, when it made any.
    pub fn report(&self) {
        if self.made > 0 {
            print_flush(&format!("Number of range deletions: {}\n", self.made));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn rule(args: &[&str]) -> RangeTombstones {
        let cfg = Config::from_args(args).expect("config");
        RangeTombstones::new(&cfg.flags).expect("range deletions asked for")
    }

    #[test]
    fn placed_after_every_wth_write_past_the_first_b_up_to_the_most() {
        let r = rule(&[
            "--writes_per_range_tombstone=10",
            "--writes_before_delete_range=5",
            "--max_num_range_tombstones=3",
        ]);
        let at: Vec<u64> = (1..100).filter(|&n| r.due(n)).collect();
        assert_eq!(at, [15, 25, 35]);
        // db_bench's default of at most 0 makes none.
        let r = rule(&["--writes_per_range_tombstone=10"]);
        assert!(!(1..1000).any(|n| r.due(n)));
    }

    #[test]
    fn one_range_or_its_keys_one_by_one() {
        let key = KeyFormat::plain(16);
        let mut batch = Batch::default();
        let mut r = rule(&[
            "--writes_per_range_tombstone=1",
            "--max_num_range_tombstones=9",
            "--range_tombstone_width=4",
        ]);
        r.add(7, &key, 100, &mut batch);
        let (mut b, mut e) = (Vec::new(), Vec::new());
        key.encode(7, 100, &mut b);
        key.encode(11, 100, &mut e);
        let entries: Vec<_> = batch.iter().map(|(op, k, v)| (op, k.to_vec(), v.to_vec())).collect();
        assert_eq!(entries, [(crate::engine::BatchOp::DeleteRange, b, e)]);
        let mut r = rule(&[
            "--writes_per_range_tombstone=1",
            "--max_num_range_tombstones=9",
            "--range_tombstone_width=4",
            "--expand_range_tombstones",
        ]);
        batch.clear();
        r.add(7, &key, 100, &mut batch);
        assert_eq!(batch.len(), 4);
        assert!(batch.iter().all(|(op, _, _)| op == crate::engine::BatchOp::Delete));
        assert_eq!(r.made, 1);
    }
}
