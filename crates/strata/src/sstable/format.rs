//! The physical layout of a table file: block handles, block trailers and the footer.
//!
//! ```text
//! +-------------------+---------+
//! | data block 0      | trailer |   data blocks, in key order
//! | ...               |         |
//! | data block n-1    | trailer |
//! | filter block      | trailer |   optional (no keys, or bloom_bits_per_key = 0)
//! | rangedel block    | trailer |   optional (only with range tombstones)
//! | index partitions  | trailers|   format version 2 only (see `partitioned.rs`)
//! | index block       | trailer |   version 2: the top-level index over the partitions
//! | properties block  | trailer |   external_file_version = 1 marks an external file
//! | metaindex block   | trailer |
//! | footer (52 bytes)           |
//! +-----------------------------+
//!
//! external file (SstFileWriter) = the same layout; every entry and range tombstone at
//!     seqno 0; its global seqno, if any, lives in the MANIFEST (`GlobalSeqno`), never here
//!
//! block handle = varint64 offset | varint64 size        (size excludes the trailer)
//!
//! block trailer (5 bytes) = compression type: u8 | checksum: fixed32
//!     checksum = footer.checksum_type over (stored block bytes | compression type byte)
//!
//! footer (FOOTER_LEN = 52 bytes, at the end of the file)
//!     0   fixed64  metaindex offset
//!     8   fixed64  metaindex size
//!     16  fixed64  index offset
//!     24  fixed64  index size
//!     32  u8       checksum type (util::checksum::ChecksumType)
//!     33  3 bytes  zero
//!     36  fixed32  format version: 1 = one index block (binary search),
//!                                   2 = partitioned index (and filters), `partitioned.rs`,
//!                                   3 = one index block whose keys are user keys
//!     40  fixed32  checksum of bytes [0, 40), using the checksum type at byte 32
//!     44  fixed64  magic (TABLE_MAGIC)
//! ```
//!
//! With `TableOptions::block_align`, zero bytes may sit between a data block's trailer and the
//! next data block (padding, so no data block straddles an alignment unit); nothing points
//! at them and readers never read them. Such tables keep their version (1, 2 or 3).
//!
//! All fixed-width integers are little-endian. on-disk: never change the compression type tags,
//! the footer layout, the magic number or the meaning of format versions 1, 2 and 3. A table
//! with a partitioned index is version 2. Otherwise it is version 3 when every data block ends
//! on a user key that the next block does not start with (so a user key can separate them;
//! RocksDB's "index key is user key") and `TableOptions::user_key_index` is on, and version 1
//! when not. A build that does not know a version refuses the table with an error naming it.
//!
//! Version 3's index entries: key = a user key `s` with `user key of block i's last entry <=
//! s < user key of block i+1's first entry`; value = the block handle, as in version 1. It
//! saves the 8-byte trailer of every index entry (about a quarter of the index's memory with
//! short keys).
//!
//! The footer uses fixed-width handles so it has one size and can be found without parsing.
//! The magic comes last so that a file that is not a table is rejected before anything else is
//! trusted; the checksum comes before the version so that a damaged version number is reported
//! as damage, not as a format from the future.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::util::checksum::ChecksumType;
use crate::util::coding::Reader;
#[cfg(test)]
use crate::util::coding::MAX_VARINT64_LEN;
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint64};
use crate::util::spare_bufs;

use super::compression;
// The block trailer's compression tag (its values are `compression.rs`'s).
pub use super::compression::CompressionType;

/// Length of the trailer after every block: compression type and checksum.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Length of the footer at the end of every table.
pub const FOOTER_LEN: usize = 52;
/// A table with one index block (binary search over data blocks).
pub const FORMAT_VERSION: u32 = 1;
/// A table with a partitioned index: the footer's index is a top-level index over index
/// partitions (`partitioned.rs`).
pub const FORMAT_VERSION_PARTITIONED: u32 = 2;
/// A table with one index block keyed by user keys (no user key spans two data blocks).
pub const FORMAT_VERSION_USER_KEY_INDEX: u32 = 3;
/// Identifies a Strata table; stored little-endian in the last 8 bytes. on-disk: never change.
pub const TABLE_MAGIC: u64 = 0x53b7_a7a1_5570_0001;
#[cfg(test)]
/// Longest encoding of a [`BlockHandle`].
pub const MAX_BLOCK_HANDLE_LEN: usize = 2 * MAX_VARINT64_LEN;

/// Where a block lives in the file: its offset and its stored size, trailer excluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Appends `varint64 offset | varint64 size`.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }

    /// Decodes a handle from the front of `r`; `None` when truncated or malformed.
    pub fn decode_from(r: &mut Reader<'_>) -> Option<BlockHandle> {
        let offset = r.varint64()?;
        let size = r.varint64()?;
        Some(BlockHandle { offset, size })
    }

    /// Decodes a handle that must fill `buf` exactly.
    pub fn decode_exact(buf: &[u8]) -> Option<BlockHandle> {
        let mut r = Reader::new(buf);
        let h = Self::decode_from(&mut r)?;
        r.is_empty().then_some(h)
    }

    /// Offset just past the block's trailer, `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset.checked_add(self.size)?.checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The fixed-size record at the end of every table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub metaindex: BlockHandle,
    pub index: BlockHandle,
    pub checksum: ChecksumType,
    /// [`FORMAT_VERSION`], [`FORMAT_VERSION_PARTITIONED`] or
    /// [`FORMAT_VERSION_USER_KEY_INDEX`].
    pub version: u32,
}

impl Footer {
    /// The footer's bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut v, self.metaindex.offset);
        put_fixed64(&mut v, self.metaindex.size);
        put_fixed64(&mut v, self.index.offset);
        put_fixed64(&mut v, self.index.size);
        v.push(self.checksum as u8);
        v.extend_from_slice(&[0, 0, 0]);
        put_fixed32(&mut v, self.version);
        let sum = self.checksum.compute(&v, &[]);
        put_fixed32(&mut v, sum);
        put_fixed64(&mut v, TABLE_MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&v);
        out
    }

    /// Decodes and verifies a footer read at `offset`; errors name an empty path (the caller
    /// adds the file with [`Error::with_file`]).
    pub fn decode(buf: &[u8], offset: u64) -> Result<Footer> {
        let bad = |reason: &str| Error::corruption(PathBuf::new(), offset, reason);
        if buf.len() != FOOTER_LEN {
            return Err(bad("footer has the wrong length"));
        }
        if decode_fixed64(buf, 44) != TABLE_MAGIC {
            return Err(bad("not a table file (bad magic number)"));
        }
        let checksum = ChecksumType::from_u8(buf[32])
            .ok_or_else(|| bad(&format!("unknown checksum type {}", buf[32])))?;
        let expected = decode_fixed32(buf, 40);
        let actual = checksum.compute(&buf[..40], &[]);
        if expected != actual {
            return Err(Error::ChecksumMismatch { file: PathBuf::new(), offset, expected, actual });
        }
        let version = decode_fixed32(buf, 36);
        if !matches!(
            version,
            FORMAT_VERSION | FORMAT_VERSION_PARTITIONED | FORMAT_VERSION_USER_KEY_INDEX
        ) {
            return Err(bad(&format!(
                "unsupported table format version {version} (this build reads versions \
                 {FORMAT_VERSION}, {FORMAT_VERSION_PARTITIONED} and \
                 {FORMAT_VERSION_USER_KEY_INDEX})"
            )));
        }
        if buf[33..36] != [0, 0, 0] {
            return Err(bad("reserved footer bytes are not zero"));
        }
        Ok(Footer {
            metaindex: BlockHandle::new(decode_fixed64(buf, 0), decode_fixed64(buf, 8)),
            index: BlockHandle::new(decode_fixed64(buf, 16), decode_fixed64(buf, 24)),
            checksum,
            version,
        })
    }
}

/// Builds the 5-byte trailer for a stored block.
pub fn block_trailer(
    stored: &[u8],
    ty: CompressionType,
    checksum: ChecksumType,
) -> [u8; BLOCK_TRAILER_LEN] {
    let t = ty as u8;
    let sum = checksum.compute(stored, &[t]);
    let mut out = [0u8; BLOCK_TRAILER_LEN];
    out[0] = t;
    out[1..].copy_from_slice(&sum.to_le_bytes());
    out
}

/// Reads the block at `handle`, checks its trailer (the checksum only when `verify_checksum`)
/// and returns its uncompressed contents. Errors carry the file's path and the block's offset.
pub fn read_block(
    file: &(dyn RandomAccessFile + 'static),
    handle: BlockHandle,
    checksum: ChecksumType,
    verify_checksum: bool,
) -> Result<Vec<u8>> {
    let path = file.path();
    let bad = |reason: String| Error::corruption(path, handle.offset, reason);
    check_in_file(file, handle)?;
    // Bounded by the file length checked above.
    let size = handle.size as usize;
    let mut block = None;
    file.read_exact_with(handle.offset, size + BLOCK_TRAILER_LEN, &mut |buf| {
        block = Some(decode_block(path, handle, buf, checksum, verify_checksum));
    })?;
    block.unwrap_or_else(|| Err(bad("the file returned no bytes for the block".to_string())))
}

/// `Corruption` unless the block at `handle`, with its trailer, lies inside `file`.
fn check_in_file(file: &(dyn RandomAccessFile + 'static), handle: BlockHandle) -> Result<()> {
    if handle.end_with_trailer().is_some_and(|end| end <= file.len()) {
        return Ok(());
    }
    Err(Error::corruption(
        file.path(),
        handle.offset,
        format!(
            "block handle (offset {}, size {}) lies outside the file of {} bytes",
            handle.offset,
            handle.size,
            file.len()
        ),
    ))
}

/// Reads the block at `handle` with its trailer and checks its checksum and compression type,
/// leaving it compressed: what a checksum verification of a whole file needs (RocksDB's
/// `VerifyChecksum` reads blocks the same way). Errors carry the file and the block's offset.
pub fn check_block(
    file: &(dyn RandomAccessFile + 'static),
    handle: BlockHandle,
    checksum: ChecksumType,
) -> Result<()> {
    let path = file.path();
    let bad = |reason: String| Error::corruption(path, handle.offset, reason);
    check_in_file(file, handle)?;
    // Bounded by the file length checked above.
    let size = handle.size as usize;
    let mut outcome = Err(bad("the file returned no bytes for the block".to_string()));
    file.read_exact_with(handle.offset, size + BLOCK_TRAILER_LEN, &mut |buf| {
        outcome = check_trailer(path, handle, &buf, checksum, true).map(drop);
    })?;
    outcome
}

/// Checks the trailer of `buf`, the bytes of the block at `handle` with its trailer: its
/// length, the checksum (only when `verify_checksum`) and the compression type, which it
/// returns. Errors carry `path` and the block's offset.
#[inline]
fn check_trailer(
    path: &std::path::Path,
    handle: BlockHandle,
    buf: &[u8],
    checksum: ChecksumType,
    verify_checksum: bool,
) -> Result<CompressionType> {
    let bad = |reason: String| Error::corruption(path, handle.offset, reason);
    let size = handle.size as usize;
    if buf.len() != size + BLOCK_TRAILER_LEN {
        return Err(bad(format!(
            "block of {} bytes where its handle says {}",
            buf.len(),
            size + BLOCK_TRAILER_LEN
        )));
    }
    let ty_byte = buf[size];
    if verify_checksum {
        let expected = decode_fixed32(buf, size + 1);
        let actual = checksum.compute(&buf[..size], &[ty_byte]);
        if expected != actual {
            return Err(Error::ChecksumMismatch {
                file: path.to_path_buf(),
                offset: handle.offset,
                expected,
                actual,
            });
        }
    }
    CompressionType::from_u8(ty_byte)
        .ok_or_else(|| bad(format!("unknown compression type {ty_byte}")))
}

/// Checks the trailer of `buf`, the bytes of the block at `handle` with its trailer (the
/// checksum only when `verify_checksum`), and returns its uncompressed contents: `buf` itself
/// when it is owned and the block is stored uncompressed, else a new `Vec`. Errors carry
/// `path` and the block's offset.
pub fn decode_block(
    path: &std::path::Path,
    handle: BlockHandle,
    buf: Cow<'_, [u8]>,
    checksum: ChecksumType,
    verify_checksum: bool,
) -> Result<Vec<u8>> {
    let size = handle.size as usize;
    let ty = check_trailer(path, handle, &buf, checksum, verify_checksum)?;
    match ty {
        CompressionType::None => Ok(match buf {
            Cow::Owned(mut v) => {
                v.truncate(size);
                v
            }
            Cow::Borrowed(b) => {
                let mut v = spare_bufs::take(size);
                v.extend_from_slice(&b[..size]);
                v
            }
        }),
        _ => {
            compression::uncompress(ty, &buf[..size], handle.offset).map_err(|e| e.with_file(path))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FileSystem, MemFs};
    use std::path::Path;

    #[test]
    fn handle_roundtrip() {
        for (o, s) in [(0u64, 0u64), (1, 127), (1 << 40, 1 << 20), (u64::MAX, u64::MAX)] {
            let h = BlockHandle::new(o, s);
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            assert!(buf.len() <= MAX_BLOCK_HANDLE_LEN);
            assert_eq!(BlockHandle::decode_exact(&buf), Some(h));
            buf.push(0);
            assert_eq!(BlockHandle::decode_exact(&buf), None);
        }
        assert_eq!(BlockHandle::decode_exact(&[0x80]), None);
        assert_eq!(BlockHandle::new(u64::MAX, 1).end_with_trailer(), None);
    }

    #[test]
    fn footer_roundtrip_and_damage() {
        let f = Footer {
            metaindex: BlockHandle::new(1000, 40),
            index: BlockHandle::new(900, 95),
            checksum: ChecksumType::Xxh3,
            version: FORMAT_VERSION,
        };
        let enc = f.encode();
        let v2 = Footer { version: FORMAT_VERSION_PARTITIONED, ..f };
        assert_eq!(Footer::decode(&v2.encode(), 7).unwrap(), v2);
        let v3 = Footer { version: FORMAT_VERSION_USER_KEY_INDEX, ..f };
        assert_eq!(Footer::decode(&v3.encode(), 7).unwrap(), v3);
        let v4 = Footer { version: 4, ..f };
        let e = Footer::decode(&v4.encode(), 7).unwrap_err();
        assert!(e.to_string().contains("unsupported table format version 4"), "{e}");
        assert_eq!(Footer::decode(&enc, 7).unwrap(), f);
        for i in 0..FOOTER_LEN {
            let mut d = enc;
            d[i] ^= 0x10;
            let e = Footer::decode(&d, 7).unwrap_err();
            assert!(e.is_corruption(), "byte {i}: {e}");
        }
        let e = Footer::decode(&enc[1..], 7).unwrap_err();
        assert!(e.is_corruption());
    }

    #[test]
    fn read_block_checks_trailer_and_bounds() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let p = Path::new("/d/t");
        let mut w = fs.create(p).unwrap();
        let data = b"hello block";
        w.append(data).unwrap();
        w.append(&block_trailer(data, CompressionType::None, ChecksumType::Crc32c)).unwrap();
        w.sync().unwrap();
        drop(w);
        let f = fs.open(p).unwrap();
        let h = BlockHandle::new(0, data.len() as u64);
        assert_eq!(read_block(&*f, h, ChecksumType::Crc32c, true).unwrap(), data);
        let e = read_block(&*f, h, ChecksumType::Xxh3, true).unwrap_err();
        assert!(matches!(e, Error::ChecksumMismatch { .. }));
        assert!(e.to_string().contains("/d/t"));
        let e = read_block(&*f, BlockHandle::new(1, data.len() as u64), ChecksumType::Crc32c, true)
            .unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("/d/t"));
        let e = read_block(&*f, BlockHandle::new(u64::MAX - 2, 10), ChecksumType::Crc32c, false)
            .unwrap_err();
        assert!(e.is_corruption());
    }
}
