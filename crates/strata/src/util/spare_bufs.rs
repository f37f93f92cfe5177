//! A thread's few spare block buffers: the bytes of a dropped block, kept for the next block
//! this thread decodes instead of going back to the allocator.
//!
//! A point read that misses the block cache allocates its block's buffer (a few KiB) and, by
//! inserting it, evicts and frees another of about the same size. With the C allocator both
//! cost cache misses on the chunk headers and free lists (neither buffer was touched
//! recently); handing the victim's buffer to the next decode skips both. The blocks a
//! compaction reads and drops one after the other reuse their buffers the same way.
//!
//! Contract: [`take`] returns an empty `Vec` whose capacity is at least the asked length and
//! at most an eighth over it (a spare that fits, or a new exact allocation), so a block's
//! charge (its capacity) stays within an eighth of its bytes. [`take_filled`] returns such a
//! `Vec` holding exactly the asked number of bytes, of no particular value: a spare keeps the
//! bytes its last block left, so a decoder that overwrites them all (a decompressor wants an
//! initialised output slice) does not pay for zeroing them first; only what a spare lacks is
//! zeroed. [`give`] keeps at most
//! [`KEEP`] buffers of [`MIN_CAP`]..=[`MAX_CAP`] bytes per thread and frees the rest: a thread
//! holds at most `KEEP * MAX_CAP` bytes it is not using.

use std::cell::RefCell;

/// Spare buffers a thread keeps.
pub const KEEP: usize = 4;
/// Buffers smaller than this are cheap to allocate: not kept.
pub const MIN_CAP: usize = 1 << 10;
/// Buffers larger than this are rare (large blocks): not kept.
pub const MAX_CAP: usize = 64 << 10;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with capacity in `len..=len + len / 8`.
pub fn take(len: usize) -> Vec<u8> {
    let mut b = spare_or_new(len);
    b.clear();
    b
}

/// A buffer of exactly `len` bytes of unspecified value (a spare's old bytes, zeros past
/// them), with capacity in `len..=len + len / 8`: for output the caller overwrites whole.
pub fn take_filled(len: usize) -> Vec<u8> {
    let mut b = spare_or_new(len);
    if b.len() >= len {
        b.truncate(len);
    } else {
        b.resize(len, 0);
    }
    b
}

/// A kept buffer whose capacity fits `len` (its bytes as its last user left them), or a new
/// empty one of capacity `len`.
fn spare_or_new(len: usize) -> Vec<u8> {
    if (MIN_CAP..=MAX_CAP).contains(&len) {
        let found = SPARE
            .try_with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                let i = s.iter().position(|b| (len..=len + len / 8).contains(&b.capacity()))?;
                Some(s.swap_remove(i))
            })
            .ok()
            .flatten();
        if let Some(b) = found {
            return b;
        }
    }
    Vec::with_capacity(len)
}

/// Keeps `buf` for a later [`take`] on this thread, or frees it. Its bytes are kept as
/// they are ([`take_filled`] reuses them).
pub fn give(buf: Vec<u8>) {
    if !(MIN_CAP..=MAX_CAP).contains(&buf.capacity()) {
        return;
    }
    // During thread exit (`try_with` fails) or a reentrant call the buffer is simply freed.
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < KEEP {
                if s.capacity() < KEEP {
                    s.reserve_exact(KEEP);
                }
                s.push(buf);
            }
        }
    });
}

#[cfg(test)]
fn kept() -> usize {
    SPARE.with(|s| s.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_fitting_buffer_and_bounds_what_it_keeps() {
        std::thread::spawn(|| {
            let mut b = take(4000);
            assert!(b.capacity() >= 4000);
            b.extend_from_slice(&[7; 4000]);
            let p = b.as_ptr();
            give(b);
            assert_eq!(kept(), 1);
            // Too small for it: a new buffer; within an eighth: the same one, emptied.
            let larger = take(4001 + 4000 / 8 + 1);
            assert_ne!(larger.as_ptr(), p);
            assert_eq!(kept(), 1);
            let again = take(3600);
            assert_eq!(again.as_ptr(), p);
            assert!(again.is_empty() && again.capacity() <= 3600 + 3600 / 8);
            assert_eq!(kept(), 0);
            // A buffer over an eighth larger than asked is not handed out.
            give(again);
            let smaller = take(3000);
            assert_ne!(smaller.as_ptr(), p);
            // At most KEEP, and none outside MIN_CAP..=MAX_CAP.
            for _ in 0..KEEP + 3 {
                give(Vec::with_capacity(5000));
            }
            give(Vec::with_capacity(MIN_CAP - 1));
            give(Vec::with_capacity(MAX_CAP + 1));
            assert_eq!(kept(), KEEP);
            assert!(take(MAX_CAP + 1).capacity() > MAX_CAP);
            assert_eq!(kept(), KEEP);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_filled_buffer_has_the_asked_length_and_reuses_a_spare() {
        std::thread::spawn(|| {
            let fresh = take_filled(3000);
            assert_eq!(fresh.len(), 3000);
            assert!(fresh.iter().all(|&b| b == 0), "a new buffer is zeroed");
            let mut b = take(4000);
            b.extend_from_slice(&[7; 4000]);
            let p = b.as_ptr();
            give(b);
            // Shorter than the spare's bytes: its own bytes, cut to length.
            let again = take_filled(3700);
            assert_eq!((again.as_ptr(), again.len()), (p, 3700));
            assert!(again.iter().all(|&b| b == 7));
            give(again);
            // Longer: the spare's bytes, then zeros.
            let longer = take_filled(4000);
            assert_eq!((longer.as_ptr(), longer.len()), (p, 4000));
            assert!(
                longer[..3700].iter().all(|&b| b == 7) && longer[3700..].iter().all(|&b| b == 0)
            );
            give(longer);
            // `take` still hands it out empty.
            let empty = take(3900);
            assert_eq!(empty.as_ptr(), p);
            assert!(empty.is_empty());
        })
        .join()
        .unwrap();
    }
}
