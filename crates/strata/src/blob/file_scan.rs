//! A walk of a finished blob file's records read through a window of the file, so checking a
//! file (`Db::verify_checksum`) holds a window's bytes, not the whole file: `blob_file_size`
//! is 256 MiB by default. The checks are [`format::scan`]'s: the header, every record's
//! checksum and compression, and the footer's counts.

use std::path::Path;

use super::format::{self, Footer, Header, RecordSource, FOOTER_LEN, HEADER_LEN};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};

/// How many bytes a window reads at once (more when one record is larger).
const WINDOW: usize = 1 << 20;

/// [`format::scan`] of the blob file `file` (at `path`), read a window at a time.
pub(crate) fn scan_file(
    path: &Path,
    file: &dyn RandomAccessFile,
    f: impl FnMut(&format::ScannedRecord<'_>) -> Result<()>,
) -> Result<(Header, Footer)> {
    let len = usize::try_from(file.len())
        .map_err(|_| Error::corruption(path, 0, "blob file larger than the address space"))?;
    let mut window = Window { file, path, start: 0, buf: Vec::new() };
    if len < HEADER_LEN + FOOTER_LEN {
        // Too short to hold its frame: the in-memory scan names what is missing.
        let data = window.at(0, len)?.to_vec();
        return format::scan(path, &data, f);
    }
    let header = Header::decode(path, window.at(0, HEADER_LEN)?)?;
    let end = len - FOOTER_LEN;
    let footer = Footer::decode(path, end as u64, window.at(end, FOOTER_LEN)?)?;
    let (records, bytes, _) = format::walk(path, &mut window, end, false, f)?;
    footer.check_counts(path, end as u64, records, bytes)?;
    Ok((header, footer))
}

/// The bytes `[start, start + buf.len())` of the file.
struct Window<'f> {
    file: &'f dyn RandomAccessFile,
    path: &'f Path,
    start: usize,
    buf: Vec<u8>,
}

impl Window<'_> {
    /// Makes `[pos, pos + len)` the window's, reading from `pos` on.
    fn fill(&mut self, pos: usize, len: usize) -> Result<()> {
        let file_len = self.file.len() as usize;
        let want = len.max(WINDOW).min(file_len.saturating_sub(pos)).max(len);
        self.buf.resize(want, 0);
        let got = self.file.read_at(pos as u64, &mut self.buf)?;
        if got < len {
            return Err(Error::corruption(
                self.path,
                pos as u64,
                format!("blob file truncated: wanted {len} bytes here, it has {got}"),
            ));
        }
        self.buf.truncate(got);
        self.start = pos;
        Ok(())
    }
}

impl RecordSource for Window<'_> {
    fn at(&mut self, pos: usize, len: usize) -> Result<&[u8]> {
        let held = pos >= self.start && pos + len <= self.start + self.buf.len();
        if !held {
            self.fill(pos, len)?;
        }
        let from = pos - self.start;
        Ok(&self.buf[from..from + len])
    }

    fn zeros(&mut self, from: usize, to: usize) -> Result<bool> {
        let mut pos = from;
        while pos < to {
            let n = (to - pos).min(WINDOW);
            if self.at(pos, n)?.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            pos += n;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FileSystem, MemFs};
    use crate::sstable::CompressionType;
    use crate::types::FileNumber;

    /// A file of `n` records of `size`-byte values, as a blob file writer leaves it.
    fn blob_file(fs: &MemFs, n: usize, size: usize) -> std::path::PathBuf {
        let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| (format!("key{i:05}").into_bytes(), vec![(i % 251) as u8; size]))
            .collect();
        super::super::tests::write_file(fs, 7, CompressionType::None, &recs);
        crate::filename::blob_path(Path::new("/db"), FileNumber(7))
    }

    #[test]
    fn a_windowed_scan_sees_what_the_whole_file_scan_sees() {
        let fs = MemFs::new();
        // Records straddle window edges; one record is larger than a window.
        for (n, size) in [(3_000, 1_000), (3, WINDOW + 5)] {
            let path = blob_file(&fs, n, size);
            let data = fs.read_file(&path).unwrap();
            let mut whole = Vec::new();
            let a = format::scan(&path, &data, |r| {
                whole.push((r.offset, r.key.to_vec(), r.value.len()));
                Ok(())
            })
            .unwrap();
            let mut windowed = Vec::new();
            let file = fs.open(&path).unwrap();
            let b = scan_file(&path, file.as_ref(), |r| {
                windowed.push((r.offset, r.key.to_vec(), r.value.len()));
                Ok(())
            })
            .unwrap();
            assert_eq!(whole, windowed);
            assert_eq!((a.1.records, a.1.record_bytes), (b.1.records, b.1.record_bytes));
            assert_eq!(whole.len(), n);
        }
    }

    #[test]
    fn a_flipped_byte_or_a_cut_is_an_error_at_the_same_offset_as_the_whole_file_scan() {
        let fs = MemFs::new();
        let path = blob_file(&fs, 400, 5_000);
        let clean = fs.read_file(&path).unwrap();
        let mut damaged: Vec<Vec<u8>> = Vec::new();
        for pos in (0..clean.len()).step_by(997).chain([clean.len() - 1]) {
            let mut bad = clean.clone();
            bad[pos] ^= 0x10;
            damaged.push(bad);
        }
        for cut in [10, HEADER_LEN + 3, clean.len() / 2, clean.len() - 1] {
            damaged.push(clean[..cut].to_vec());
        }
        for bad in damaged {
            fs.write_file(&path, &bad);
            let whole = format::scan(&path, &bad, |_| Ok(())).map(drop).unwrap_err();
            let file = fs.open(&path).unwrap();
            let windowed = scan_file(&path, file.as_ref(), |_| Ok(())).map(drop).unwrap_err();
            assert_eq!(whole.to_string(), windowed.to_string());
        }
    }
}
