//! A slot's state word: everything the clock protocol decides on, in one `u64`, so that every
//! transition is one atomic read-modify-write.
//!
//! ```text
//! bits  0..32  refs    readers holding the slot (a lookup between its increment and its
//!                      release; transient: values leave the cache as `Arc` clones)
//! bits 32..34  clock   countdown 0..=3; the sweep decrements it, and evicts at 0
//! bit  34      high    the entry was inserted with high priority
//! bit  35      moved   the entry was copied to a newer generation, which took over its
//!                      charge (set with INVISIBLE; freeing it returns no charge)
//! bits 60..62  state   EMPTY, EXCLUSIVE (one thread fills or empties the payload),
//!                      VISIBLE (lookups may match it), INVISIBLE (erased or replaced: no
//!                      lookup matches it; freed by whoever drops the last ref)
//! ```

pub(super) const REF: u64 = 1;
pub(super) const REFS_MASK: u64 = (1 << 32) - 1;
pub(super) const CLOCK_SHIFT: u32 = 32;
pub(super) const CLOCK_MASK: u64 = 3 << CLOCK_SHIFT;
pub(super) const MAX_CLOCK: u64 = 3;
pub(super) const HIGH: u64 = 1 << 34;
pub(super) const MOVED: u64 = 1 << 35;
pub(super) const STATE_SHIFT: u32 = 60;
pub(super) const STATE_MASK: u64 = 3 << STATE_SHIFT;

/// Slot states (the value of the state field).
pub(super) const EMPTY: u64 = 0;
pub(super) const EXCLUSIVE: u64 = 1;
pub(super) const VISIBLE: u64 = 2;
pub(super) const INVISIBLE: u64 = 3;

#[inline]
pub(super) fn state(m: u64) -> u64 {
    (m & STATE_MASK) >> STATE_SHIFT
}

#[inline]
pub(super) fn refs(m: u64) -> u64 {
    m & REFS_MASK
}

#[inline]
pub(super) fn clock(m: u64) -> u64 {
    (m & CLOCK_MASK) >> CLOCK_SHIFT
}

/// `m` with its clock set to `c`.
#[inline]
pub(super) fn with_clock(m: u64, c: u64) -> u64 {
    (m & !CLOCK_MASK) | (c << CLOCK_SHIFT)
}

/// `m` with state `s`, clock 0 and no priority bit, refs kept.
#[inline]
pub(super) fn with_state_cleared(m: u64, s: u64) -> u64 {
    (m & REFS_MASK) | (s << STATE_SHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap() {
        let m = (VISIBLE << STATE_SHIFT) | HIGH | (2 << CLOCK_SHIFT) | 7;
        assert_eq!((state(m), clock(m), refs(m)), (VISIBLE, 2, 7));
        assert_ne!(m & HIGH, 0);
        let m = with_clock(m, MAX_CLOCK);
        assert_eq!((state(m), clock(m), refs(m)), (VISIBLE, 3, 7));
        let m = with_state_cleared(m, EXCLUSIVE);
        assert_eq!((state(m), clock(m), refs(m), m & HIGH), (EXCLUSIVE, 0, 7, 0));
        // VISIBLE -> INVISIBLE is setting one bit.
        assert_eq!(state((VISIBLE << STATE_SHIFT) | (1 << STATE_SHIFT)), INVISIBLE);
    }
}
