//! A counter split over cache-line-padded cells, one picked per thread, so that threads
//! counting at once do not bounce one line; reads sum the cells. For statistics only (relaxed).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::thread_index::thread_index;

const CELLS: usize = 16;

#[repr(align(128))]
#[derive(Default)]
struct Cell(AtomicU64);

#[derive(Default)]
pub(crate) struct StripedCounter {
    cells: [Cell; CELLS],
}

impl StripedCounter {
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.cells[thread_index() % CELLS].0.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sum(&self) -> u64 {
        self.cells.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_across_threads() {
        let c = StripedCounter::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add(1);
                    }
                });
            }
        });
        c.add(5);
        assert_eq!(c.sum(), 4005);
    }
}
