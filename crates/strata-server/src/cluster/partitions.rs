//! Partitions of the slot space: `count` runs of consecutive slots, as even as 16384 divides,
//! partition `p` (Raft group `p`) holding slots `first(p)..=last(p)`. Slot `s` is in
//! partition `floor(s * count / 16384)`. Every key of a partition's slots is in that
//! partition's key ranges (`Store::slot_ranges`), since every stored key starts with its slot.

use crate::slots::SLOTS;

/// The slot space split into partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitions {
    count: u16,
}

impl Partitions {
    /// `count` partitions; `None` unless `1 <= count <= 16384`.
    pub fn new(count: u16) -> Option<Partitions> {
        (1..=SLOTS).contains(&count).then_some(Partitions { count })
    }

    /// How many there are.
    pub fn count(&self) -> u16 {
        self.count
    }

    /// The partition `slot` is in (`slot` below 16384).
    pub fn of_slot(&self, slot: u16) -> u16 {
        (u32::from(slot) * u32::from(self.count) / u32::from(SLOTS)) as u16
    }

    /// The first and last slot of partition `p` (below `count`).
    pub fn slots(&self, p: u16) -> (u16, u16) {
        let start = |p: u32| (p * u32::from(SLOTS)).div_ceil(u32::from(self.count)) as u16;
        (start(u32::from(p)), start(u32::from(p) + 1) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_in_exactly_its_partitions_range() {
        for count in [1, 2, 3, 5, 7, 64, 100, 1000, 16383, 16384] {
            let parts = Partitions::new(count).unwrap();
            let mut next = 0u32;
            for p in 0..count {
                let (first, last) = parts.slots(p);
                assert_eq!(u32::from(first), next, "count {count}, partition {p}");
                assert!(first <= last, "count {count}: partition {p} is empty");
                for s in [first, last] {
                    assert_eq!(parts.of_slot(s), p, "count {count}, slot {s}");
                }
                next = u32::from(last) + 1;
            }
            assert_eq!(next, u32::from(SLOTS), "count {count}: the runs cover every slot");
        }
        assert_eq!(Partitions::new(0), None);
        assert_eq!(Partitions::new(16385), None);
        assert_eq!(Partitions::new(64).unwrap().slots(0), (0, 255));
    }
}
