//! Block compression.
//!
//! ```text
//! None    the raw block
//! Snappy  the Snappy raw format (it starts with its own varint uncompressed length)
//! Lz4     varint64 uncompressed length | LZ4 block format
//! Zstd    varint64 uncompressed length | one Zstandard frame
//! Zlib    varint64 uncompressed length | one raw deflate stream (RFC 1951, no zlib header)
//! Bz2     varint64 uncompressed length | one bzip2 stream
//! ```
//! `Lz4hc` is a setting, not a block format: a table written with it is an LZ4 table, its
//! blocks and its properties carrying the LZ4 tag ([`CompressionType::stored_as`]), as
//! RocksDB's LZ4HC blocks are read by the LZ4 decoder. lz4_flex has a single compression
//! level, so they are the bytes `Lz4` would write. Tag 6 is never stored.
//! on-disk: never change these encodings (the tags live in [`CompressionType`]).
//!
//! A block is stored compressed only when that saves at least 1/8 of its size, and only when its
//! raw size is at most [`MAX_UNCOMPRESSED_BLOCK`]: the reader refuses larger claimed lengths, so a
//! damaged length can never make it allocate more than that (and, for Snappy and LZ4, more than
//! the format's maximum expansion of the stored bytes).

use std::cell::RefCell;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::util::coding::{varint_len, Reader};
use crate::util::grow_buf::GrowBuf;
use crate::util::spare_bufs;

/// How a block's bytes are compressed. on-disk: never change the tag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as is.
    None = 0,
    /// Snappy raw format (carries its own length prefix).
    Snappy = 1,
    /// varint64 uncompressed length, then an LZ4 block.
    Lz4 = 2,
    /// varint64 uncompressed length, then a Zstandard frame.
    Zstd = 3,
    /// varint64 uncompressed length, then a raw deflate stream (RocksDB's zlib compression).
    Zlib = 4,
    /// varint64 uncompressed length, then a bzip2 stream.
    Bz2 = 5,
    /// LZ4 with RocksDB's high-compression name: a setting only; tables get [`Self::Lz4`]
    /// (module doc), and no stored tag decodes to it.
    Lz4hc = 6,
}

impl CompressionType {
    /// Decodes a tag, `None` for an unknown one.
    pub fn from_u8(b: u8) -> Option<CompressionType> {
        match b {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Snappy),
            2 => Some(CompressionType::Lz4),
            3 => Some(CompressionType::Zstd),
            4 => Some(CompressionType::Zlib),
            5 => Some(CompressionType::Bz2),
            _ => None,
        }
    }

    /// The type tables written with this setting store: the type itself, but `Lz4` for
    /// `Lz4hc` (module doc).
    pub fn stored_as(self) -> CompressionType {
        match self {
            CompressionType::Lz4hc => CompressionType::Lz4,
            t => t,
        }
    }
}

/// Largest block that is ever stored compressed; larger blocks are stored raw.
pub const MAX_UNCOMPRESSED_BLOCK: usize = 256 << 20;

/// Snappy never expands more than about 22x (a 3-byte copy of 64 bytes).
const SNAPPY_MAX_RATIO: usize = 24;
/// LZ4 never expands more than about 255x (each extra length byte adds at most 255).
const LZ4_MAX_RATIO: usize = 256;
/// Deflate never expands more than 1032x (a 258-byte match in under two bits).
const DEFLATE_MAX_RATIO: usize = 1040;

/// Reusable compression state for a table builder: codec contexts and one output buffer.
pub struct Compressor {
    ty: CompressionType,
    zstd_level: i32,
    /// Grows to the largest block compressed, an index block's megabyte included: in a
    /// mapping of its own past 128 KiB (`util/grow_buf.rs`).
    out: GrowBuf<u8>,
    snappy: Option<snap::raw::Encoder>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The deflate state, made at the first zlib block and reset for each next one.
    zlib: Option<flate2::Compress>,
}

impl Compressor {
    pub fn new(ty: CompressionType, zstd_level: i32) -> Self {
        Compressor {
            ty: ty.stored_as(),
            zstd_level,
            out: GrowBuf::new(),
            snappy: None,
            zstd: None,
            zlib: None,
        }
    }

    /// Compresses `raw` with the configured type. Returns the type and stored bytes to write:
    /// `raw` itself with `None` when compression is off, fails, or saves less than 1/8.
    pub fn compress<'a>(&'a mut self, raw: &'a [u8]) -> (CompressionType, &'a [u8]) {
        if self.ty == CompressionType::None || raw.len() > MAX_UNCOMPRESSED_BLOCK {
            return (CompressionType::None, raw);
        }
        let n = match self.ty {
            CompressionType::None => None,
            CompressionType::Snappy => self.snappy(raw),
            CompressionType::Lz4 | CompressionType::Lz4hc => self.lz4(raw),
            CompressionType::Zstd => self.zstd(raw),
            CompressionType::Zlib => self.zlib(raw),
            CompressionType::Bz2 => self.bz2(raw),
        };
        match n {
            Some(n) if n < raw.len() && n <= raw.len() - raw.len() / 8 => (self.ty, &self.out[..n]),
            _ => (CompressionType::None, raw),
        }
    }

    /// Makes `out` at least `n` bytes long; zero-fills only on growth.
    fn out_len(&mut self, n: usize) {
        if self.out.len() < n {
            self.out.resize(n, 0);
        }
    }

    fn snappy(&mut self, raw: &[u8]) -> Option<usize> {
        self.out_len(snap::raw::max_compress_len(raw.len()));
        let enc = self.snappy.get_or_insert_with(snap::raw::Encoder::new);
        enc.compress(raw, &mut self.out).ok()
    }

    fn lz4(&mut self, raw: &[u8]) -> Option<usize> {
        let prefix = varint_len(raw.len() as u64);
        self.out_len(prefix + lz4_flex::block::get_maximum_output_size(raw.len()));
        let p = write_varint_prefix(&mut self.out, raw.len());
        let n = lz4_flex::block::compress_into(raw, &mut self.out[p..]).ok()?;
        Some(p + n)
    }

    fn zstd(&mut self, raw: &[u8]) -> Option<usize> {
        let prefix = varint_len(raw.len() as u64);
        self.out_len(prefix + zstd::zstd_safe::compress_bound(raw.len()));
        if self.zstd.is_none() {
            self.zstd = zstd::bulk::Compressor::new(self.zstd_level).ok();
        }
        let z = self.zstd.as_mut()?;
        let p = write_varint_prefix(&mut self.out, raw.len());
        let n = z.compress_to_buffer(raw, &mut self.out[p..]).ok()?;
        Some(p + n)
    }

    /// Deflate into an output the size of `raw`: a stream that does not end within it would
    /// not be kept anyway (it must save an eighth).
    fn zlib(&mut self, raw: &[u8]) -> Option<usize> {
        let prefix = varint_len(raw.len() as u64);
        self.out_len(prefix + raw.len());
        let p = write_varint_prefix(&mut self.out, raw.len());
        let c = match &mut self.zlib {
            Some(c) => {
                c.reset();
                c
            }
            none => none.insert(flate2::Compress::new(flate2::Compression::default(), false)),
        };
        let end = prefix + raw.len();
        match c.compress(raw, &mut self.out[p..end], flate2::FlushCompress::Finish) {
            Ok(flate2::Status::StreamEnd) => Some(p + usize::try_from(c.total_out()).ok()?),
            _ => None,
        }
    }

    /// bzip2 into an output the size of `raw` (as [`Self::zlib`]).
    fn bz2(&mut self, raw: &[u8]) -> Option<usize> {
        let prefix = varint_len(raw.len() as u64);
        self.out_len(prefix + raw.len());
        let p = write_varint_prefix(&mut self.out, raw.len());
        // bzip2's level is its block size in units of 100 kB: the smallest that holds `raw`
        // compresses it as level 9 would (only the stream header's level digit differs), with
        // the memory the block needs, here and in the reader (a data block is far below
        // 100 kB; level 9 would set up several megabytes per block).
        let level = u32::try_from(raw.len().div_ceil(100_000)).unwrap_or(9).clamp(1, 9);
        let mut c = bzip2::Compress::new(bzip2::Compression::new(level), 0);
        let end = prefix + raw.len();
        match c.compress(raw, &mut self.out[p..end], bzip2::Action::Finish) {
            Ok(bzip2::Status::StreamEnd) => Some(p + usize::try_from(c.total_out()).ok()?),
            _ => None,
        }
    }
}

/// Writes `varint(len)` at the start of `out` (already long enough); returns its length.
fn write_varint_prefix(out: &mut [u8], len: usize) -> usize {
    let mut v = len as u64;
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

thread_local! {
    /// One Zstandard decompression context per thread: creating one per block is costly.
    static ZSTD_DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Uncompresses a stored block of type `ty` read at file `offset`. Damage is `Corruption`
/// naming `offset` and an empty path (the caller adds it).
pub fn uncompress(ty: CompressionType, stored: &[u8], offset: u64) -> Result<Vec<u8>> {
    let bad = |reason: String| Error::corruption(PathBuf::new(), offset, reason);
    let check_len = |len: usize, max_ratio: Option<usize>, input: usize| -> Result<()> {
        let limit = max_ratio
            .map_or(MAX_UNCOMPRESSED_BLOCK, |r| MAX_UNCOMPRESSED_BLOCK.min(input * r + 64));
        if len > limit {
            return Err(bad(format!(
                "{ty:?} block claims {len} uncompressed bytes from {input} stored bytes"
            )));
        }
        Ok(())
    };
    match ty {
        CompressionType::None => Ok(stored.to_vec()),
        CompressionType::Snappy => {
            let len = snap::raw::decompress_len(stored)
                .map_err(|e| bad(format!("bad Snappy header: {e}")))?;
            check_len(len, Some(SNAPPY_MAX_RATIO), stored.len())?;
            let mut out = output_buf(len);
            let n = snap::raw::Decoder::new()
                .decompress(stored, &mut out)
                .map_err(|e| bad(format!("bad Snappy block: {e}")))?;
            if n != len {
                return Err(bad(format!("Snappy block gave {n} bytes, expected {len}")));
            }
            Ok(out)
        }
        CompressionType::Lz4 | CompressionType::Lz4hc => {
            let (len, body) = split_len(stored).ok_or_else(|| bad("bad LZ4 length".into()))?;
            check_len(len, Some(LZ4_MAX_RATIO), body.len())?;
            let mut out = output_buf(len);
            let n = lz4_flex::block::decompress_into(body, &mut out)
                .map_err(|e| bad(format!("bad LZ4 block: {e}")))?;
            if n != len {
                return Err(bad(format!("LZ4 block gave {n} bytes, expected {len}")));
            }
            Ok(out)
        }
        CompressionType::Zstd => {
            let (len, body) = split_len(stored).ok_or_else(|| bad("bad Zstd length".into()))?;
            check_len(len, None, body.len())?;
            let mut out = spare_bufs::take(len);
            let r = ZSTD_DCTX.with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    *slot = Some(zstd::bulk::Decompressor::new()?);
                }
                match slot.as_mut() {
                    Some(d) => d.decompress_to_buffer(body, &mut out),
                    None => Err(std::io::Error::other("no zstd context")),
                }
            });
            let n = r.map_err(|e| bad(format!("bad Zstd block: {e}")))?;
            if n != len || out.len() != len {
                return Err(bad(format!("Zstd block gave {n} bytes, expected {len}")));
            }
            Ok(out)
        }
        CompressionType::Zlib => {
            let (len, body) = split_len(stored).ok_or_else(|| bad("bad zlib length".into()))?;
            check_len(len, Some(DEFLATE_MAX_RATIO), body.len())?;
            let mut out = output_buf(len);
            let mut d = flate2::Decompress::new(false);
            let status = d
                .decompress(body, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| bad(format!("bad zlib block: {e}")))?;
            let n = d.total_out();
            if status != flate2::Status::StreamEnd || n != len as u64 {
                return Err(bad(format!("zlib block gave {n} bytes, expected {len}")));
            }
            Ok(out)
        }
        CompressionType::Bz2 => {
            let (len, body) = split_len(stored).ok_or_else(|| bad("bad bzip2 length".into()))?;
            check_len(len, None, body.len())?;
            let mut out = output_buf(len);
            let mut d = bzip2::Decompress::new(false);
            let status =
                d.decompress(body, &mut out).map_err(|e| bad(format!("bad bzip2 block: {e}")))?;
            let n = d.total_out();
            if status != bzip2::Status::StreamEnd || n != len as u64 {
                return Err(bad(format!("bzip2 block gave {n} bytes, expected {len}")));
            }
            Ok(out)
        }
    }
}

/// `len` bytes for a codec to write a block into: a spare buffer of this thread when one fits
/// (`util::spare_bufs`), which a block read that evicts another usually finds, with the bytes
/// its last block left (only what it lacks is zeroed). Every caller checks that the codec
/// wrote exactly `len` bytes, so none of the old bytes is ever returned.
fn output_buf(len: usize) -> Vec<u8> {
    spare_bufs::take_filled(len)
}

/// Splits `varint len | body`.
fn split_len(stored: &[u8]) -> Option<(usize, &[u8])> {
    let mut r = Reader::new(stored);
    let len = usize::try_from(r.varint64()?).ok()?;
    Some((len, r.rest()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::coding::put_varint64;

    #[cfg(all(unix, not(miri)))]
    #[test]
    fn an_index_sized_block_is_compressed_into_a_mapping_of_its_own() {
        // An output table's index block reaches a megabyte: its compression buffer, freed
        // through glibc, raised the allocator's mapping threshold (util/grow_buf.rs).
        let raw: Vec<u8> = (0..1_000_000u32).map(|i| (i % 7) as u8).collect();
        for ty in [CompressionType::Snappy, CompressionType::Lz4, CompressionType::Zstd] {
            let mut c = Compressor::new(ty, 3);
            let (got, stored) = c.compress(&raw);
            assert_eq!(got, ty);
            assert_eq!(uncompress(ty, stored, 0).unwrap(), raw, "{ty:?}");
            assert!(c.out.is_mapped(), "{ty:?}");
        }
    }

    const ALL: [CompressionType; 7] = [
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
        CompressionType::Zlib,
        CompressionType::Bz2,
        CompressionType::Lz4hc,
    ];

    fn compressible(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"abcdefgh"[(i / 7) % 8]).collect()
    }

    fn incompressible(n: usize) -> Vec<u8> {
        let mut s = 0x1234_5678_9abc_def1u64;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn roundtrip_every_type() {
        for ty in ALL {
            let mut c = Compressor::new(ty, 3);
            for n in [0usize, 1, 7, 100, 4096, 100_000] {
                let raw = compressible(n);
                let (t, stored) = c.compress(&raw);
                let stored = stored.to_vec();
                if ty == CompressionType::None || n < 16 {
                    assert!(t == CompressionType::None || t == ty);
                } else {
                    assert_eq!(t, ty.stored_as(), "{ty:?} n={n} should compress");
                    assert!(stored.len() < raw.len());
                }
                let back = uncompress(t, &stored, 0).unwrap();
                assert_eq!(back, raw, "{ty:?} n={n}");
            }
        }
    }

    #[test]
    fn incompressible_is_stored_raw() {
        for ty in ALL {
            let mut c = Compressor::new(ty, 3);
            let raw = incompressible(8192);
            let (t, stored) = c.compress(&raw);
            assert_eq!(t, CompressionType::None, "{ty:?}");
            assert_eq!(stored, raw.as_slice());
        }
    }

    #[test]
    fn corrupt_compressed_blocks_are_corruption() {
        for ty in [
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
            CompressionType::Zlib,
            CompressionType::Bz2,
        ] {
            let mut c = Compressor::new(ty, 1);
            let raw = compressible(10_000);
            let (t, stored) = c.compress(&raw);
            assert_eq!(t, ty);
            let stored = stored.to_vec();
            // Every single-byte change either fails cleanly or decodes to something (the
            // checksum, not the codec, is what guarantees detection); never a panic.
            for i in 0..stored.len() {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut d = stored.clone();
                    d[i] ^= x;
                    if let Err(e) = uncompress(ty, &d, 99) {
                        assert!(e.is_corruption(), "{ty:?}: {e}");
                    }
                }
            }
            for cut in [0, 1, 2, stored.len() / 2, stored.len() - 1] {
                if let Err(e) = uncompress(ty, &stored[..cut], 99) {
                    assert!(e.is_corruption());
                    assert!(e.to_string().contains("offset 99"));
                }
            }
            // Truncating the payload always fails.
            assert!(uncompress(ty, &stored[..stored.len() / 2], 1).is_err());
        }
    }

    /// A block's buffer goes back to its thread when the block is dropped, and the next
    /// block of about its size decoded there is written into it (`util::spare_bufs`), for
    /// every codec.
    #[test]
    fn a_dropped_block_lends_its_buffer_to_the_next_decode() {
        use crate::sstable::block_builder::BlockBuilder;
        use crate::sstable::Block;
        std::thread::spawn(|| {
            let mut b = BlockBuilder::new(16);
            for i in 0..100u32 {
                b.add(format!("key{i:08}").as_bytes(), &compressible(40));
            }
            let raw = b.finish().to_vec();
            for ty in [CompressionType::Snappy, CompressionType::Lz4, CompressionType::Zstd] {
                let mut c = Compressor::new(ty, 3);
                let (t, stored) = c.compress(&raw);
                assert_eq!(t, ty);
                let stored = stored.to_vec();
                let first = Block::new(uncompress(ty, &stored, 0).unwrap(), 0).unwrap();
                let p = first.bytes().as_ptr();
                drop(first);
                // Were the buffer freed, the allocator would give it to this one.
                let decoy = Vec::<u8>::with_capacity(raw.len());
                let second = uncompress(ty, &stored, 0).unwrap();
                drop(decoy);
                assert_eq!(second.as_ptr(), p, "{ty:?}");
                assert_eq!(second, raw, "{ty:?}");
                // The recycled buffer is charged as what it is: at most an eighth over.
                assert!(second.capacity() <= raw.len() + raw.len() / 8);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn huge_claimed_lengths_are_refused_before_allocating() {
        let mut lz = Vec::new();
        put_varint64(&mut lz, u64::MAX / 2);
        lz.extend_from_slice(&[0x10, b'a']);
        assert!(uncompress(CompressionType::Lz4, &lz, 0).unwrap_err().is_corruption());
        let mut zs = Vec::new();
        put_varint64(&mut zs, (MAX_UNCOMPRESSED_BLOCK + 1) as u64);
        zs.extend_from_slice(&[0; 16]);
        assert!(uncompress(CompressionType::Zstd, &zs, 0).unwrap_err().is_corruption());
        let mut sn = Vec::new();
        put_varint64(&mut sn, 1 << 30);
        sn.push(0);
        assert!(uncompress(CompressionType::Snappy, &sn, 0).unwrap_err().is_corruption());
    }
}
