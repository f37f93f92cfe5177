//! L0 batching under write pressure: how many L0 files an L0 -> base compaction waits for
//! while flushes keep adding them (leveled style, `Options::level0_compaction_batching`).
//!
//! Why: an L0 -> base compaction rewrites every base-level file its L0 files overlap, which
//! under random keys is the whole base level, however few L0 files it takes. Its writes per
//! L0 byte are `(base + batch) / batch`. Under sustained writes the files that arrive while
//! one such compaction runs are the next one's batch, so batches settle by themselves at
//! "what arrives during a compaction". The compactions that start right at the trigger
//! take fewer: the first ones after writes begin, and every one after the compaction thread
//! was briefly ahead of the flushes. Each of those rewrites the base level for a few files.
//! Waiting for the batch the writes are about to bring anyway removes them, and leaves the
//! largest L0 (the batch plus what arrives while it compacts) where sustained writes put it.
//!
//! The rule ([`L0Pace::batch`]):
//! - `arrival` = the mean interval between L0 files lately (flushes; an exponentially
//!   weighted mean), `speed` = input bytes per second of the L0 -> base compactions lately;
//! - `duration` = (free L0 bytes + the base-level bytes they overlap) / `speed`: how long the
//!   L0 -> base compaction would run if it started now;
//! - batch = `ceil(duration / arrival)` files, at least the trigger, at most half the slowdown
//!   trigger (a batch and what arrives while it compacts then stay below the slowdown trigger
//!   when the estimate holds), never more than the trigger in a DB without both measurements;
//! - the batch holds only while files keep coming: until twice the mean interval after the
//!   last arrival ([`L0Batch::until`]). After that (writes stopped or slowed) the trigger
//!   applies again, so a compaction L0 needs is never put off for longer than that.
//!
//! Carry-over: when writes pause with at least the trigger's files in L0 after they came
//! faster than L0 -> base compactions drain them (the batch the pace calls for, had files kept
//! coming, is above the trigger), those files are a batch cut short. Rewriting the base level
//! for them costs as much as for a full one, and a burst that filled L0 this fast tends to be
//! followed by another. So the batch says to carry them over ([`L0Batch::carry_over`]): the
//! picker merges them into one L0 file, which goes down with the next batch, when the base
//! level holds at least twice their bytes in their key range
//! ([`super::picker::PickerOptions::level0_carry_over`]). L0 then holds one file, below the
//! trigger; reads see one sorted run there instead of none. Light writes (no batch above the
//! trigger) and a DB that measured nothing yet (a fresh process) compact L0 into the base
//! level as before.
//!
//! Drain: a carried-over L0 bets on the next batch. When writes stay paused past
//! [`L0Batch::drain_at`] (the pause that starts the carry-over, plus as long again as the
//! L0 -> base compaction would run: longer than a stall behind that compaction lasts), the bet
//! is lost: L0 goes down to the base level, however few its files ([`L0Batch::drain`]), so an
//! idle DB neither keeps the carried bytes twice on disk (above their older versions) nor
//! makes every read and seek visit one more sorted run. `Db::wait_for_compact` waits for that
//! drain like any other pending compaction. A pause that has already lasted that long when
//! the compaction thread gets to L0 (it was busy with another level) skips the merge: L0 goes
//! straight down. The drain takes the writes made since the last flush along: the active
//! memtable is flushed first (its L0 file counts as no arrival), or those writes would come
//! back alone as an L0 file below the trigger (at the next flush, or replayed from the WAL at
//! the next open) that every read visits until the next batch.
//!
//! The picker applies it ([`super::picker::PickerOptions::level0_batch_files`]) to a
//! compaction L0's file count calls for, never to one its size calls for. Light writes (a
//! file every few seconds against compactions of a second) get the trigger: batching is for
//! the regime where L0 fills faster than the base level can be rewritten.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::picker::{level_targets, overlapping, range_of, PickerOptions};
use super::style::CompactionStyle;
use crate::types::FileNumber;
use crate::version::levels::Version;

/// Weight of the newest sample in the running means.
const NEW_SAMPLE_WEIGHT: f64 = 0.3;

/// Pause after the last L0 file, in mean intervals, after which writes count as stopped.
const PAUSE_INTERVALS: f64 = 2.0;

/// What a family measured of its L0 inflow and of its compactions' speed.
#[derive(Clone, Debug, Default)]
pub(crate) struct L0Pace {
    last_arrival: Option<Instant>,
    /// Mean seconds between L0 files (needs two arrivals).
    mean_interval: Option<f64>,
    /// Mean input bytes per second of L0 -> base compactions that rewrote data.
    compaction_speed: Option<f64>,
    /// L0 was carried over and has not gone down since ([`L0Pace::set_carried`]).
    carried: bool,
    /// The next flush is the drain's own ([`L0Pace::expect_drain_flush`]).
    drain_flush: bool,
}

/// The L0 file count an L0 -> base compaction waits for, and until when that holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct L0Batch {
    pub files: usize,
    /// When the batch falls back to the trigger unless another file arrives. `None` when it
    /// holds nothing back: the batch is the trigger, or L0 has fewer free files than that.
    pub until: Option<Instant>,
    /// Writes paused with at least the trigger's files in L0, which they brought faster than
    /// L0 -> base compactions drain them: L0 may merge in place and wait for the next batch
    /// (see the module doc).
    pub carry_over: bool,
    /// Writes stayed paused past [`L0Batch::drain_at`] after a carry-over: L0 goes down to
    /// the base level whatever its file count (see the module doc).
    pub drain: bool,
    /// When a carried-over L0 drains unless another file arrives first.
    pub drain_at: Option<Instant>,
}

fn mean(old: Option<f64>, sample: f64) -> f64 {
    match old {
        Some(m) => m + NEW_SAMPLE_WEIGHT * (sample - m),
        None => sample,
    }
}

impl L0Pace {
    /// A pace as if files had come every `interval` seconds, the last at `last`, and
    /// compactions read `speed` bytes per second.
    #[cfg(test)]
    pub(crate) fn measured(last: Instant, interval: f64, speed: f64) -> L0Pace {
        L0Pace {
            last_arrival: Some(last),
            mean_interval: Some(interval),
            compaction_speed: Some(speed),
            carried: false,
            drain_flush: false,
        }
    }

    /// The mean seconds between L0 files and the L0 -> base compactions' input bytes per
    /// second, once both are measured.
    pub(crate) fn measured_pace(&self) -> Option<(f64, f64)> {
        Some((self.mean_interval?, self.compaction_speed?))
    }

    /// A flush added an L0 file at `now`. The drain's own flush is no arrival: writes stay
    /// paused, and the drain it was made for follows.
    pub(crate) fn on_l0_file(&mut self, now: Instant) {
        if std::mem::take(&mut self.drain_flush) {
            return;
        }
        if let Some(last) = self.last_arrival {
            let gap = now.saturating_duration_since(last).as_secs_f64();
            self.mean_interval = Some(mean(self.mean_interval, gap));
        }
        self.last_arrival = Some(now);
    }

    /// The drain flushes the active memtable to take its writes along (module doc): the
    /// flush that follows adds no arrival ([`L0Pace::on_l0_file`]).
    pub(crate) fn expect_drain_flush(&mut self) {
        self.drain_flush = true;
    }

    /// A flush wrote no table (every entry dropped): an expected drain flush is done.
    pub(crate) fn on_flush_without_table(&mut self) {
        self.drain_flush = false;
    }

    /// Whether L0 now waits as a carried-over level for the next batch: set when a carry-over
    /// is picked, cleared when L0 goes down or is found empty.
    pub(crate) fn set_carried(&mut self, carried: bool) {
        self.carried = carried;
    }

    /// Whether L0 was carried over and has not gone down since.
    pub(crate) fn carried(&self) -> bool {
        self.carried
    }

    /// An L0 -> base compaction read `input_bytes` and ran for `micros` (rewrites only: a
    /// trivial move says nothing of the speed; nor do other levels' compactions, whose
    /// inputs and outputs differ in size and overlap).
    pub(crate) fn on_compaction(&mut self, input_bytes: u64, micros: u64) {
        if input_bytes == 0 || micros == 0 {
            return;
        }
        let speed = input_bytes as f64 / (micros as f64 / 1e6);
        self.compaction_speed = Some(mean(self.compaction_speed, speed));
    }

    /// The batch for `v` (files in `busy` are being compacted) at `now`, under options `o`
    /// with batching `enabled`.
    pub(crate) fn batch(
        &self,
        v: &Version,
        o: &PickerOptions,
        busy: &HashSet<FileNumber>,
        enabled: bool,
        now: Instant,
    ) -> L0Batch {
        let trigger = o.level0_file_num_compaction_trigger.max(1);
        let at_trigger = L0Batch {
            files: trigger,
            until: None,
            carry_over: false,
            drain: false,
            drain_at: None,
        };
        // Where the pace cannot time a drain (batching switched off, options changed), a
        // carried-over L0 goes down at once.
        let untimed = L0Batch { drain: self.carried, ..at_trigger };
        let cap = (o.level0_slowdown_writes_trigger / 2).max(trigger);
        if !enabled || o.style != CompactionStyle::Leveled || o.num_levels < 2 || cap == trigger {
            return untimed;
        }
        let (Some(last), Some(interval), Some(speed)) =
            (self.last_arrival, self.mean_interval, self.compaction_speed)
        else {
            return untimed;
        };
        if interval <= 0.0 || speed <= 0.0 {
            return untimed;
        }
        let Some(until) = last.checked_add(Duration::from_secs_f64(interval * PAUSE_INTERVALS))
        else {
            return untimed;
        };
        let free: Vec<_> =
            v.levels[0].iter().filter(|f| !busy.contains(&f.number)).cloned().collect();
        // How long an L0 -> base compaction of the free L0 files would run now.
        let duration = || {
            let (lo, hi) = range_of(free.iter(), v.order())?;
            let base = level_targets(v, o).base_level;
            let base_bytes: u64 = if base == 0 {
                0
            } else {
                overlapping(v, base, &lo, &hi).iter().map(|f| f.file_size).sum()
            };
            let l0_bytes: u64 = free.iter().map(|f| f.file_size).sum();
            Some((l0_bytes + base_bytes) as f64 / speed)
        };
        // When a carried-over L0 of `duration` seconds' compaction drains (module doc).
        let drain_after =
            |duration: f64| until.checked_add(Duration::try_from_secs_f64(duration).ok()?);
        if self.carried && now >= until && !free.is_empty() {
            let Some(drain_at) = duration().and_then(drain_after) else {
                return untimed;
            };
            if now >= drain_at {
                return L0Batch { drain: true, ..at_trigger };
            }
            return L0Batch { drain_at: Some(drain_at), ..at_trigger };
        }
        if free.len() < trigger {
            // A carried-over L0 while files still come (a flush that was not the drain's own
            // landed since the carry-over) is looked at again when they stop, and its drain is
            // timed then (above): the compaction thread has nothing else to wake it if no
            // other file comes, and `wait_for_compact` waits for the carried L0 to go down.
            return L0Batch { until: self.carried.then_some(until), ..at_trigger };
        }
        let Some(duration) = duration() else { return at_trigger };
        let arriving = (duration / interval).ceil();
        if now >= until {
            // Writes paused: the trigger applies, and under pressure L0 is carried over,
            // unless the pause already lasted as long as the drain would wait (the compaction
            // thread was busy meanwhile): then it goes straight down.
            let fresh = drain_after(duration).is_some_and(|drain_at| now < drain_at);
            return L0Batch { carry_over: arriving > trigger as f64 && fresh, ..at_trigger };
        }
        let files =
            if arriving.is_finite() { (arriving as usize).clamp(trigger, cap) } else { cap };
        if files == trigger {
            return at_trigger;
        }
        L0Batch { files, until: Some(until), ..at_trigger }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::compaction::picker::tests::parse_shape;

    const MB: u64 = 1 << 20;

    /// `l0` files of 16 MiB over the whole key range above a 200 MiB base level (L5) and a
    /// 2 GiB last level; trigger 4, slowdown 20.
    fn shape(l0: usize) -> (Version, PickerOptions) {
        let mut text = String::from(
            "options: levels=7 trigger=4 base=268435456 dynamic=true slowdown=20\nL0:",
        );
        for i in 0..l0 {
            let _ = write!(text, " {}:a-z:{}", 100 + i, 16 * MB);
        }
        let _ = write!(text, "\nL5: 10:a-m:{} 11:n-z:{}", 100 * MB, 100 * MB);
        let _ = writeln!(text, "\nL6: 20:a-z:{}", 2048 * MB);
        let (v, o, _) = parse_shape(&text);
        (v, o)
    }

    /// The batch of a trigger of 4 that holds nothing back.
    fn trigger_only() -> L0Batch {
        L0Batch { files: 4, until: None, carry_over: false, drain: false, drain_at: None }
    }

    /// Files every 0.2 s from `t0` on (five of them), compactions reading `mb_per_sec`.
    fn pressed(t0: Instant, mb_per_sec: u64) -> L0Pace {
        let mut p = L0Pace::default();
        for i in 0..5 {
            p.on_l0_file(t0 + Duration::from_millis(200 * i));
        }
        p.on_compaction(mb_per_sec * MB, 1_000_000);
        p
    }

    /// [`pressed`] from now, and the moment 50 ms after its last file.
    fn pressed_at_850ms(mb_per_sec: u64) -> (L0Pace, Instant) {
        let t0 = Instant::now();
        (pressed(t0, mb_per_sec), t0 + Duration::from_millis(850))
    }

    fn files(p: &L0Pace, l0: usize, busy: &[u64], enabled: bool, now: Instant) -> usize {
        let (v, o) = shape(l0);
        let busy: HashSet<FileNumber> = busy.iter().map(|&n| FileNumber(n)).collect();
        p.batch(&v, &o, &busy, enabled, now).files
    }

    #[test]
    fn the_drains_own_flush_is_no_arrival() {
        let t0 = Instant::now();
        let mut p = pressed(t0, 1);
        let before = (p.last_arrival, p.mean_interval);
        p.expect_drain_flush();
        p.on_l0_file(t0 + Duration::from_secs(60));
        assert_eq!((p.last_arrival, p.mean_interval), before, "writes still paused");
        p.on_l0_file(t0 + Duration::from_secs(61));
        assert_eq!(p.last_arrival, Some(t0 + Duration::from_secs(61)));
        // A drain flush that wrote no table leaves the next file an arrival too.
        p.expect_drain_flush();
        p.on_flush_without_table();
        p.on_l0_file(t0 + Duration::from_secs(62));
        assert_eq!(p.last_arrival, Some(t0 + Duration::from_secs(62)));
    }

    #[test]
    fn without_both_measurements_the_trigger_applies() {
        let now = Instant::now();
        let mut p = L0Pace::default();
        assert_eq!(files(&p, 4, &[], true, now), 4);
        p.on_l0_file(now);
        p.on_l0_file(now + Duration::from_millis(200));
        // Arrivals measured, no compaction speed yet.
        assert_eq!(files(&p, 4, &[], true, now + Duration::from_millis(250)), 4);
        let mut q = L0Pace::default();
        q.on_compaction(MB, 1_000_000);
        q.on_l0_file(now);
        // One arrival: no interval yet.
        assert_eq!(files(&q, 4, &[], true, now), 4);
    }

    #[test]
    fn waits_for_what_arrives_while_the_compaction_would_run() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_millis(850);
        // 4 x 16 + 200 MiB at 200 MiB/s: 1.32 s; a file per 0.2 s: 7 files.
        let p = pressed(t0, 200);
        assert_eq!(files(&p, 4, &[], true, now), 7);
        // Already 6 there: 296 MiB, 1.48 s, 8 files.
        assert_eq!(files(&p, 6, &[], true, now), 8);
        // At 100 MiB/s: 2.64 s, 14 files, capped at half the slowdown trigger.
        assert_eq!(files(&pressed(t0, 100), 4, &[], true, now), 10);
        // At 400 MiB/s: 0.66 s, 4 files: the trigger, with no deadline.
        let (v, o) = shape(4);
        let b = pressed(t0, 400).batch(&v, &o, &HashSet::new(), true, now);
        assert_eq!(b, L0Batch { files: 4, ..trigger_only() });
        // Below the trigger nothing is held back: no deadline to wake up for.
        let (v, o) = shape(3);
        let b = p.batch(&v, &o, &HashSet::new(), true, now);
        assert_eq!(b, L0Batch { files: 4, ..trigger_only() });
    }

    #[test]
    fn the_batch_ends_when_files_stop_coming() {
        let t0 = Instant::now();
        let p = pressed(t0, 200);
        let (v, o) = shape(4);
        // Last file at 0.8 s, mean interval 0.2 s: the batch holds until 1.2 s.
        let until = t0 + Duration::from_millis(1200);
        let b = p.batch(&v, &o, &HashSet::new(), true, t0 + Duration::from_millis(1199));
        assert_eq!(b, L0Batch { files: 7, until: Some(until), ..trigger_only() });
        // Then the trigger applies, and the 4 files a batch of 7 was gathering carry over.
        let b = p.batch(&v, &o, &HashSet::new(), true, until);
        assert_eq!(b, L0Batch { files: 4, carry_over: true, ..trigger_only() });
    }

    #[test]
    fn only_files_that_came_faster_than_compactions_drain_them_carry_over() {
        let t0 = Instant::now();
        // Files stopped at 0.8 s: paused from 1.2 s.
        let paused = t0 + Duration::from_millis(1300);
        let (v, o) = shape(4);
        let none = HashSet::new();
        // Compactions at 400 MiB/s would have taken the trigger (0.66 s, 4 files).
        assert!(!pressed(t0, 400).batch(&v, &o, &none, true, paused).carry_over);
        // At 200 MiB/s a batch of 7: carried over, also past the slowdown cap's 10.
        assert!(pressed(t0, 200).batch(&v, &o, &none, true, paused).carry_over);
        assert!(pressed(t0, 50).batch(&v, &o, &none, true, paused).carry_over);
        // Paused for longer than the compaction takes (1.32 s at 200 MiB/s) before the
        // compaction thread got to L0: no merge, straight down; at 50 MiB/s (5.28 s) still
        // carried over.
        let late = t0 + Duration::from_millis(1200 + 1330);
        assert!(!pressed(t0, 200).batch(&v, &o, &none, true, late).carry_over);
        assert!(pressed(t0, 50).batch(&v, &o, &none, true, late).carry_over);
        // Below the trigger there is nothing to compact, so nothing to carry.
        let (v3, o3) = shape(3);
        assert!(!pressed(t0, 200).batch(&v3, &o3, &none, true, paused).carry_over);
        // Nothing measured (a fresh process), batching off, or another style: never.
        assert!(!L0Pace::default().batch(&v, &o, &none, true, paused).carry_over);
        assert!(!pressed(t0, 200).batch(&v, &o, &none, false, paused).carry_over);
        let mut u = o.clone();
        u.style = CompactionStyle::Universal;
        assert!(!pressed(t0, 200).batch(&v, &u, &none, true, paused).carry_over);
    }

    #[test]
    fn a_carried_over_l0_drains_when_writes_stay_paused() {
        let t0 = Instant::now();
        let mut p = pressed(t0, 200);
        // The carried file alone: 16 MiB over the 200 MiB base level.
        let (v, o) = shape(1);
        let none = HashSet::new();
        let long_after = t0 + Duration::from_secs(60);
        // Never carried over: one file below the trigger waits, nothing scheduled.
        assert_eq!(p.batch(&v, &o, &none, true, long_after), trigger_only());
        p.set_carried(true);
        assert!(p.carried());
        // Files stopped at 0.8 s (pause from 1.2 s); its compaction would read 216 MiB at
        // 200 MiB/s: the drain comes 1.08 s after the pause began.
        let until = t0 + Duration::from_millis(1200);
        let drain_at = until + Duration::from_secs_f64(216.0 / 200.0);
        let before = t0 + Duration::from_millis(1199);
        // Before the pause: looked at again when it begins.
        let b = p.batch(&v, &o, &none, true, before);
        assert_eq!(b, L0Batch { until: Some(until), ..trigger_only() });
        let b = p.batch(&v, &o, &none, true, until);
        assert_eq!(b, L0Batch { drain_at: Some(drain_at), ..trigger_only() });
        assert!(p.batch(&v, &o, &none, true, drain_at).drain);
        // A busy L0 file is not drained; batching switched off drains at once.
        let busy: HashSet<FileNumber> = [FileNumber(100)].into_iter().collect();
        assert!(!p.batch(&v, &o, &busy, true, long_after).drain);
        assert!(p.batch(&v, &o, &none, false, until).drain);
        // A file arriving meanwhile: writes go on, the carried file waits for the batch.
        let mut resumed = p.clone();
        resumed.on_l0_file(until + Duration::from_millis(100));
        let (v2, _) = shape(2);
        let b = resumed.batch(&v2, &o, &none, true, until + Duration::from_millis(150));
        assert!(!b.drain && b.drain_at.is_none());
        // Regression (a hang of `wait_for_compact`): a time to look again is given, when the
        // new pause begins, though no other file comes.
        assert!(b.until.is_some_and(|u| u > until + Duration::from_millis(150)), "{b:?}");
        // Once L0 went down, or was found empty, nothing drains.
        p.set_carried(false);
        assert!(!p.carried());
        assert!(!p.batch(&v, &o, &none, true, long_after).drain);
    }

    #[test]
    fn the_mean_interval_follows_the_arrivals() {
        let t0 = Instant::now();
        let mut p = pressed(t0, 200);
        // Writes slow to a file every 2 s: the batch shrinks back to the trigger.
        let mut t = t0 + Duration::from_millis(800);
        for _ in 0..10 {
            t += Duration::from_secs(2);
            p.on_l0_file(t);
        }
        assert_eq!(files(&p, 4, &[], true, t + Duration::from_millis(10)), 4);
    }

    #[test]
    fn off_or_another_style_or_no_room_below_the_slowdown_trigger_means_the_trigger() {
        let (p, now) = pressed_at_850ms(200);
        assert_eq!(files(&p, 4, &[], false, now), 4);
        let (v, mut o) = shape(4);
        o.style = CompactionStyle::Universal;
        assert_eq!(p.batch(&v, &o, &HashSet::new(), true, now).files, 4);
        let (v, mut o) = shape(4);
        o.level0_slowdown_writes_trigger = 9;
        assert_eq!(p.batch(&v, &o, &HashSet::new(), true, now).files, 4);
        o.level0_slowdown_writes_trigger = 12;
        assert_eq!(p.batch(&v, &o, &HashSet::new(), true, now).files, 6);
    }

    #[test]
    fn l0_files_beside_the_base_levels_keys_take_the_trigger() {
        // A sequential load: L0 files past the base level's keys overlap nothing there, so
        // their compaction is short (or a trivial move) and needs no batch.
        let (v, o, _) = parse_shape(&format!(
            "options: levels=7 trigger=4 base=268435456 dynamic=true slowdown=20\n\
             L0: 100:q0-q1:{m} 101:q2-q3:{m} 102:q4-q5:{m} 103:q6-q7:{m}\n\
             L5: 10:a-m:{b}\nL6: 20:a-m:{l}\n",
            m = 16 * MB,
            b = 200 * MB,
            l = 2048 * MB
        ));
        let (p, now) = pressed_at_850ms(200);
        assert_eq!(p.batch(&v, &o, &HashSet::new(), true, now).files, 4);
    }

    #[test]
    fn files_being_compacted_are_left_out_of_the_estimate() {
        let (p, now) = pressed_at_850ms(200);
        // 8 free files: 328 MiB, 1.64 s, 9 files; with 4 of them busy: 264 MiB, 7 files.
        assert_eq!(files(&p, 8, &[], true, now), 9);
        assert_eq!(files(&p, 8, &[100, 101, 102, 103], true, now), 7);
    }
}
