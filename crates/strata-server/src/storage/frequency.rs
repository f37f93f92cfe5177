//! How often each key is used: OBJECT FREQ's answer while an LFU `maxmemory-policy` is
//! selected (Redis's LFU counter), kept in memory only, as Redis keeps it.
//!
//! A key's counter is Redis's: 8 bits, 5 ([`INIT`]) for a key never counted, raised on a use
//! with probability 1 / ((counter - 5) x `lfu-log-factor` + 1) (so it grows with the
//! logarithm of the uses), and lowered by one for every `lfu-decay-time` minutes since it
//! was last changed. Where it lives: 2^20 slots of 32 bits (4 MiB, made when an LFU policy
//! is first selected), two per key picked by two hashes of (key space, key), each holding
//! the minute of its last change (24 bits) and a counter (8 bits):
//!
//! ```text
//!  31                     8 7        0
//! +------------------------+----------+
//! | minute of last change  | counter  |      0: never used (counts INIT)
//! +------------------------+----------+
//! ```
//!
//! A key's counter is the smaller of its two slots' after their decay (a count-min sketch:
//! keys sharing a slot can only raise it); a use stores the raised counter, stamped now, in
//! each of its slots that holds less. Uses are counted only while an LFU policy is selected,
//! as Redis counts them; a lookup inside `access::untouched` is no use.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Slots in the table (two per key).
const SLOTS: usize = 1 << 20;
/// A key's counter before any use is counted (Redis's `LFU_INIT_VAL`).
pub const INIT: u8 = 5;
/// Minutes kept in a slot's stamp.
const MINUTE_MASK: u32 = 0xff_ffff;

/// The counters and the two settings that shape them.
pub struct Frequencies {
    on: AtomicBool,
    /// `lfu-log-factor`.
    log_factor: AtomicU32,
    /// `lfu-decay-time`, in minutes (0: counters never decay).
    decay_minutes: AtomicU32,
    start: Instant,
    slots: OnceLock<Box<[AtomicU32]>>,
}

impl Default for Frequencies {
    fn default() -> Self {
        Frequencies {
            on: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_minutes: AtomicU32::new(1),
            start: Instant::now(),
            slots: OnceLock::new(),
        }
    }
}

impl Frequencies {
    /// Counts uses from now on (`lfu`: an LFU policy is selected) or stops counting; the
    /// counters stay for the next LFU policy, as Redis's objects keep theirs.
    pub fn set_counting(&self, lfu: bool) {
        if lfu {
            self.slots.get_or_init(|| (0..SLOTS).map(|_| AtomicU32::new(0)).collect());
        }
        self.on.store(lfu, Ordering::Relaxed);
    }

    /// Whether uses are counted (an LFU policy is selected).
    pub fn counting(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// `lfu-log-factor`.
    pub fn set_log_factor(&self, factor: u32) {
        self.log_factor.store(factor, Ordering::Relaxed);
    }

    /// `lfu-decay-time` in minutes.
    pub fn set_decay_minutes(&self, minutes: u32) {
        self.decay_minutes.store(minutes, Ordering::Relaxed);
    }

    /// The two slots of `key` of key space `set`.
    fn slots_of(set: u32, key: &[u8]) -> [usize; 2] {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(set) ^ 0x51ed_270b);
        [(h as usize) % SLOTS, ((h >> 32) as usize) % SLOTS]
    }

    fn minute_now(&self) -> u32 {
        (self.start.elapsed().as_secs() / 60) as u32 & MINUTE_MASK
    }

    /// A slot's counter at minute `now`, after its decay.
    fn decayed(&self, word: u32, now: u32) -> u8 {
        if word == 0 {
            return INIT;
        }
        let counter = (word & 0xff) as u8;
        let elapsed = now.wrapping_sub(word >> 8) & MINUTE_MASK;
        let decay = self.decay_minutes.load(Ordering::Relaxed);
        let periods = elapsed.checked_div(decay).unwrap_or(0);
        counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
    }

    /// The counter of `key` of key space `set` now (OBJECT FREQ; [`INIT`] when no LFU policy
    /// was ever selected).
    pub fn of(&self, set: u32, key: &[u8]) -> u8 {
        self.of_at(set, key, self.minute_now())
    }

    /// [`Frequencies::of`] at minute `now`.
    fn of_at(&self, set: u32, key: &[u8], now: u32) -> u8 {
        let Some(slots) = self.slots.get() else { return INIT };
        Self::slots_of(set, key)
            .iter()
            .map(|&i| self.decayed(slots[i].load(Ordering::Relaxed), now))
            .min()
            .unwrap_or(INIT)
    }

    /// Counts a use of `key` while an LFU policy is selected and lookups count
    /// (`access::counted`).
    pub fn used(&self, set: u32, key: &[u8]) {
        if !self.counting() || !super::access::counted() {
            return;
        }
        let counter = self.of(set, key);
        let raised = raise(counter, self.log_factor.load(Ordering::Relaxed), rand::random());
        self.store(set, key, raised, false);
    }

    /// Sets the counter of `key` (RESTORE ... FREQ), while an LFU policy is selected.
    pub fn set(&self, set: u32, key: &[u8], counter: u8) {
        if self.counting() {
            self.store(set, key, counter, true);
        }
    }

    /// Stores `counter`, stamped now, in `key`'s slots: every slot, or (a use) those holding
    /// less.
    fn store(&self, set: u32, key: &[u8], counter: u8, every: bool) {
        let Some(slots) = self.slots.get() else { return };
        let now = self.minute_now();
        let word = (now << 8) | u32::from(counter);
        for i in Self::slots_of(set, key) {
            if every || self.decayed(slots[i].load(Ordering::Relaxed), now) < counter {
                slots[i].store(word, Ordering::Relaxed);
            }
        }
    }
}

/// Redis's logarithmic increment: `counter` raised by one with probability 1 / ((counter -
/// INIT) x `factor` + 1), `coin` in [0, 1) deciding; 255 stays.
fn raise(counter: u8, factor: u32, coin: f64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(INIT));
    let p = 1.0 / (base * f64::from(factor) + 1.0);
    if coin < p {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_start_at_init_rise_logarithmically_and_are_counted_only_under_lfu() {
        let f = Frequencies::default();
        f.used(0, b"k");
        assert_eq!(f.of(0, b"k"), INIT, "no LFU policy: no use counted");
        f.set_counting(true);
        // At INIT every use counts; further up fewer and fewer do.
        f.used(0, b"k");
        assert_eq!(f.of(0, b"k"), INIT + 1);
        for _ in 0..10_000 {
            f.used(0, b"k");
        }
        let c = f.of(0, b"k");
        assert!((20..60).contains(&c), "10,000 uses at factor 10: {c}");
        assert_eq!(f.of(1, b"k"), INIT, "another key space's key");
        super::super::access::untouched(|| f.used(1, b"k"));
        assert_eq!(f.of(1, b"k"), INIT);
        f.set(1, b"k", 100);
        assert_eq!(f.of(1, b"k"), 100);
        f.set_counting(false);
        f.set(1, b"k", 7);
        assert_eq!(f.of(1, b"k"), 100, "RESTORE's FREQ only under an LFU policy");
    }

    #[test]
    fn counters_decay_by_one_per_decay_time() {
        let f = Frequencies::default();
        f.set_counting(true);
        f.set(0, b"k", 100);
        let at = f.minute_now();
        assert_eq!(f.of_at(0, b"k", at + 10), 90);
        f.set_decay_minutes(5);
        assert_eq!(f.of_at(0, b"k", at + 10), 98);
        f.set_decay_minutes(0);
        assert_eq!(f.of_at(0, b"k", at + 10), 100);
        f.set_decay_minutes(1);
        assert_eq!(f.of_at(0, b"k", at + 1000), 0);
    }

    #[test]
    fn the_increment_is_redis_s() {
        assert_eq!(raise(INIT, 10, 0.999), INIT + 1);
        assert_eq!(raise(INIT + 1, 10, 0.09), INIT + 2);
        assert_eq!(raise(INIT + 1, 10, 0.1), INIT + 1);
        assert_eq!(raise(255, 10, 0.0), 255);
        assert_eq!(raise(0, 10, 0.999), 1);
    }
}
