//! A merging iterator: one sorted view over several sorted children (memtables, L0 tables,
//! levels).
//!
//! A hand-written binary heap of child indices ordered by each child's current key (min-heap
//! going forward, max-heap going backward) avoids copying keys into the heap. Switching
//! direction repositions every other child relative to the current key, as a merge must.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::comparator::KeyOrder;
use crate::error::Result;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

pub(crate) struct MergingIterator {
    /// The order of the children's keys.
    order: KeyOrder,
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of valid children, heap-ordered for `direction`.
    heap: Vec<usize>,
    direction: Direction,
    /// A child stopped with an error: the merged view is incomplete, so it is invalid.
    failed: bool,
}

impl MergingIterator {
    /// Merges `children`, whose keys are in `order`.
    #[inline]
    pub fn new(children: Vec<Box<dyn InternalIterator>>, order: KeyOrder) -> Self {
        let n = children.len();
        MergingIterator {
            order,
            children,
            heap: Vec::with_capacity(n),
            direction: Direction::Forward,
            failed: false,
        }
    }

    /// True when child `a` should be above child `b` in the heap.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let o = self.order.compare_internal(self.children[a].key(), self.children[b].key());
        match self.direction {
            Direction::Forward => o == Ordering::Less || (o == Ordering::Equal && a < b),
            Direction::Reverse => o == Ordering::Greater || (o == Ordering::Equal && a < b),
        }
    }

    #[inline(always)]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let mut best = l;
            if r < n && self.before(self.heap[r], self.heap[l]) {
                best = r;
            }
            if self.before(self.heap[best], self.heap[i]) {
                self.heap.swap(best, i);
                i = best;
            } else {
                break;
            }
        }
    }

    fn rebuild(&mut self) {
        self.heap.clear();
        self.failed = false;
        for i in 0..self.children.len() {
            if self.children[i].valid() {
                self.heap.push(i);
            } else if self.children[i].status().is_err() {
                self.failed = true;
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// After the top child moved: restore the heap.
    #[inline]
    fn fix_top(&mut self) {
        let top = self.heap[0];
        if self.children[top].valid() {
            self.sift_down(0);
        } else {
            if self.children[top].status().is_err() {
                self.failed = true;
            }
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            if !self.heap.is_empty() {
                self.sift_down(0);
            }
        }
    }

    fn current(&self) -> usize {
        self.heap[0]
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty() && !self.failed
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.rebuild();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.rebuild();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.rebuild();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.direction = Direction::Reverse;
        self.rebuild();
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        let cur = self.current();
        if self.direction != Direction::Forward {
            // Every other child must move to its first entry after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && self.order.compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.direction = Direction::Forward;
            self.children[cur].next();
            self.rebuild();
            return;
        }
        self.children[cur].next();
        self.fix_top();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let cur = self.current();
        if self.direction != Direction::Reverse {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key);
                if c.valid() && self.order.compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev();
                }
            }
            self.direction = Direction::Reverse;
            self.children[cur].prev();
            self.rebuild();
            return;
        }
        self.children[cur].prev();
        self.fix_top();
    }

    fn key(&self) -> &[u8] {
        self.children[self.current()].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.current()].value()
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }

    fn current_child(&self) -> usize {
        self.current()
    }

    fn seek_current_child(&mut self, target: &[u8], forward: bool) -> bool {
        let want = if forward { Direction::Forward } else { Direction::Reverse };
        if self.direction != want || !self.valid() {
            return false;
        }
        let cur = self.current();
        debug_assert_eq!(
            self.order.compare_internal(target, self.children[cur].key()),
            if forward { Ordering::Greater } else { Ordering::Less }
        );
        if forward {
            self.children[cur].seek(target);
        } else {
            self.children[cur].seek_for_prev(target);
        }
        // The other children are at or past the current key in the iteration order, and the
        // moved one went further: the heap property holds everywhere but at the top.
        self.fix_top();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::conformance::{check_internal_iterator, sample_entries, VecIter};

    #[test]
    fn conformance_over_split_inputs() {
        for (n, parts) in [(0usize, 3usize), (1, 1), (50, 1), (50, 4), (300, 7)] {
            let all = sample_entries(n, n as u64 + parts as u64);
            let mut splits: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); parts];
            for (i, e) in all.iter().enumerate() {
                // Uneven spread, including runs in one child.
                splits[(i * 7 / 3 + i / 5) % parts].push(e.clone());
            }
            let children: Vec<Box<dyn InternalIterator>> = splits
                .into_iter()
                .map(|d| Box::new(VecIter::new(d)) as Box<dyn InternalIterator>)
                .collect();
            let mut it = MergingIterator::new(children, KeyOrder::Bytewise);
            check_internal_iterator(&mut it, &all, 11);
        }
    }
}
