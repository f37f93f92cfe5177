//! Readahead for a table iterator's block reads: one larger read of the file serves the next
//! blocks, so a range scan (and, with a fixed size, a compaction) does not pay one small read
//! per block, which under direct I/O (no OS readahead) is a device round trip per block.
//!
//! - **Automatic** (`ReadBlockOptions::readahead_size == 0`): the first two block reads from
//!   the file are exact; from the third read in a row that starts where the previous one
//!   ended (a forward scan), each read takes [`AUTO_INITIAL`] bytes, doubling per read up to
//!   [`AUTO_MAX`]. A read elsewhere (a seek) starts over. Point lookups never read ahead (they
//!   do not use iterators).
//! - **Fixed** (`readahead_size > 0`): every read from the file takes at least that many bytes.
//! - Reads never go past the table's last block (the footer's start) and hold one buffer per
//!   iterator, the size of the last read. Blocks found in the block cache cost no read and
//!   leave the state as it is.

use crate::env::RandomAccessFile;
use crate::error::{Error, Result};

/// The first automatic readahead.
pub(crate) const AUTO_INITIAL: usize = 8 << 10;
/// The largest automatic readahead.
pub(crate) const AUTO_MAX: usize = 256 << 10;
/// Block reads in a row, each starting where the previous ended, before automatic
/// readahead starts.
const AUTO_AFTER_SEQUENTIAL: u32 = 2;

/// One iterator's readahead state and buffer.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    /// `ReadBlockOptions::readahead_size`: 0 automatic.
    fixed: usize,
    /// File bytes `[buf_start, buf_start + buf.len())`.
    buf: Vec<u8>,
    buf_start: u64,
    /// Where the last block read ended, to tell a forward scan.
    next_offset: Option<u64>,
    /// Reads in a row that continued the previous one.
    run: u32,
    /// The next automatic readahead.
    auto_size: usize,
}

impl Readahead {
    pub fn new(fixed: usize) -> Readahead {
        Readahead { fixed, auto_size: AUTO_INITIAL, ..Readahead::default() }
    }

    /// The file's bytes `[offset, offset + len)`, from the buffer or read (with readahead as
    /// the module documentation says), reading nothing at or past `limit`. Fewer bytes than
    /// `len` in the file is `Corruption` naming it.
    pub fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        offset: u64,
        len: usize,
        limit: u64,
    ) -> Result<&[u8]> {
        let end = offset + len as u64;
        let buf_end = self.buf_start + self.buf.len() as u64;
        if offset >= self.buf_start && end <= buf_end {
            self.next_offset = Some(end);
            let at = (offset - self.buf_start) as usize;
            return Ok(&self.buf[at..at + len]);
        }
        if self.next_offset == Some(offset) {
            self.run += 1;
        } else {
            self.run = 0;
            self.auto_size = AUTO_INITIAL;
        }
        let want = if self.fixed > 0 {
            len.max(self.fixed)
        } else if self.run >= AUTO_AFTER_SEQUENTIAL {
            let w = len.max(self.auto_size);
            self.auto_size = (self.auto_size * 2).min(AUTO_MAX);
            w
        } else {
            len
        };
        let want = want.min(limit.saturating_sub(offset) as usize).max(len);
        self.buf.resize(want, 0);
        let mut got = 0;
        while got < want {
            let n = file.read_at(offset + got as u64, &mut self.buf[got..])?;
            if n == 0 {
                break;
            }
            got += n;
        }
        self.buf.truncate(got);
        self.buf_start = offset;
        if got < len {
            self.buf.clear();
            return Err(Error::corruption(
                file.path(),
                offset,
                format!("truncated file: wanted {len} bytes, file has {got}"),
            ));
        }
        self.next_offset = Some(end);
        Ok(&self.buf[..len])
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    use super::*;

    /// A file over bytes that records each read's offset and length.
    struct Counted {
        data: Vec<u8>,
        path: PathBuf,
        reads: Mutex<Vec<(u64, usize)>>,
        bytes: AtomicU64,
    }

    impl RandomAccessFile for Counted {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
            self.reads.lock().unwrap().push((offset, buf.len()));
            let start = (offset as usize).min(self.data.len());
            let n = buf.len().min(self.data.len() - start);
            buf[..n].copy_from_slice(&self.data[start..start + n]);
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            Ok(n)
        }
        fn len(&self) -> u64 {
            self.data.len() as u64
        }
        fn path(&self) -> &Path {
            &self.path
        }
    }

    fn file(len: usize) -> Counted {
        Counted {
            data: (0..len).map(|i| (i % 251) as u8).collect(),
            path: PathBuf::from("/db/000001.sst"),
            reads: Mutex::new(Vec::new()),
            bytes: AtomicU64::new(0),
        }
    }

    /// Reads `blocks` consecutive 1,000-byte blocks from 0, checking each one's bytes.
    fn scan(ra: &mut Readahead, f: &Counted, blocks: u64, limit: u64) {
        for b in 0..blocks {
            let got = ra.read(f, b * 1000, 1000, limit).unwrap().to_vec();
            assert_eq!(got, f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize], "block {b}");
        }
    }

    #[test]
    fn automatic_readahead_starts_on_a_forward_scan_and_grows() {
        let f = file(2_000_000);
        let mut ra = Readahead::new(0);
        scan(&mut ra, &f, 1_500, 1_600_000);
        let reads = f.reads.lock().unwrap().clone();
        // Two exact reads, then 8 KiB doubling to 256 KiB: far fewer reads than blocks.
        assert_eq!(&reads[..2], &[(0, 1000), (1000, 1000)]);
        assert_eq!(reads[2], (2000, AUTO_INITIAL));
        assert_eq!(reads[3].1, 2 * AUTO_INITIAL);
        assert!(reads.iter().all(|&(_, n)| n <= AUTO_MAX));
        assert!(reads.len() < 15, "{} reads for 1,500 blocks", reads.len());
        // Nothing at or past the limit was read.
        assert!(reads.iter().all(|&(o, n)| o + n as u64 <= 1_600_000), "{reads:?}");
    }

    #[test]
    fn a_seek_elsewhere_starts_over() {
        let f = file(1_000_000);
        let mut ra = Readahead::new(0);
        scan(&mut ra, &f, 10, 1_000_000);
        let before = f.reads.lock().unwrap().len();
        // A block far away: exact read, and the next two as well before readahead resumes.
        for b in [500u64, 501, 502] {
            assert_eq!(
                ra.read(&f, b * 1000, 1000, 1_000_000).unwrap(),
                &f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize]
            );
        }
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(&reads[before..], &[(500_000, 1000), (501_000, 1000), (502_000, AUTO_INITIAL)]);
    }

    #[test]
    fn a_fixed_size_reads_that_much_from_the_first_read() {
        let f = file(1_000_000);
        let mut ra = Readahead::new(100_000);
        scan(&mut ra, &f, 950, 950_000);
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(reads.len(), 10, "{reads:?}");
        assert_eq!(reads[0], (0, 100_000));
        // The last read stops at the limit.
        assert_eq!(*reads.last().unwrap(), (900_000, 50_000));
    }

    #[test]
    fn a_short_file_is_corruption_naming_it() {
        let f = file(1500);
        let mut ra = Readahead::new(0);
        let e = ra.read(&f, 1000, 1000, 10_000).unwrap_err();
        assert!(e.is_corruption());
        assert!(e.to_string().contains("000001.sst"), "{e}");
        // The state is usable after the error.
        assert_eq!(ra.read(&f, 0, 1000, 10_000).unwrap(), &f.data[..1000]);
    }
}
