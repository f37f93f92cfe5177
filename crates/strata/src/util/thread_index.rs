//! A small process-unique number per thread, handed out in order of first use: an index
//! into per-thread arrays (striped counters, per-thread super-version slots). Numbers are
//! not reused when threads exit; users take them modulo their array size.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's index.
#[inline]
pub(crate) fn thread_index() -> usize {
    INDEX.with(|c| {
        let i = c.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        c.set(i);
        i
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_per_thread_and_distinct_across_threads() {
        let a = thread_index();
        assert_eq!(a, thread_index());
        let b = std::thread::spawn(thread_index).join().unwrap();
        assert_ne!(a, b);
    }
}
