//! The `rocksdb` crate's compression setters beyond `set_compression_type` and
//! `set_compression_per_level`.

use crate::options::accepted::CompressionOptions;
use crate::options::Options;
use crate::sstable::CompressionType;

/// RocksDB's "the codec's default level" sentinel in `CompressionOptions::level`.
const DEFAULT_COMPRESSION_LEVEL: i32 = 32767;

impl Options {
    /// Threads compressing each table's data blocks (`Options::compression_parallel_threads`);
    /// 1 or less: none, compression on the flush or compaction thread.
    pub fn set_compression_options_parallel_threads(&mut self, num: i32) {
        self.compression_parallel_threads = usize::try_from(num).unwrap_or(1).max(1);
    }

    /// Compression of the WAL. Only `None` and `Zstd` are accepted, as RocksDB's; any other
    /// type panics, as the `rocksdb` crate does (a programming error, not a runtime
    /// condition). Kept without effect: the WAL is written uncompressed.
    pub fn set_wal_compression_type(&mut self, t: CompressionType) {
        match t {
            CompressionType::None | CompressionType::Zstd => self.accepted.wal_compression = t,
            other => panic!("{other:?} is not supported for WAL compression"),
        }
    }

    /// Compression of the last level's tables (`Options::bottommost_compression`).
    pub fn set_bottommost_compression_type(&mut self, t: CompressionType) {
        self.bottommost_compression = Some(t);
    }

    /// RocksDB's `compression_opts`: `level` sets `zstd_level` (unless it is RocksDB's default
    /// sentinel 32767); the zlib window, the strategy and the dictionary size are kept
    /// (dictionaries are not implemented).
    pub fn set_compression_options(
        &mut self,
        w_bits: i32,
        level: i32,
        strategy: i32,
        max_dict_bytes: i32,
    ) {
        let c = &mut self.accepted.compression_opts;
        c.window_bits = w_bits;
        c.level = level;
        c.strategy = strategy;
        c.max_dict_bytes = max_dict_bytes;
        if level != DEFAULT_COMPRESSION_LEVEL {
            self.zstd_level = level;
        }
    }

    /// RocksDB's `bottommost_compression_opts`: kept.
    pub fn set_bottommost_compression_options(
        &mut self,
        w_bits: i32,
        level: i32,
        strategy: i32,
        max_dict_bytes: i32,
        enabled: bool,
    ) {
        self.accepted.bottommost_compression_opts = CompressionOptions {
            window_bits: w_bits,
            level,
            strategy,
            max_dict_bytes,
            enabled,
            ..self.accepted.bottommost_compression_opts
        };
    }

    /// Bytes sampled to train a Zstandard dictionary: kept (no dictionaries).
    pub fn set_zstd_max_train_bytes(&mut self, value: i32) {
        self.accepted.compression_opts.zstd_max_train_bytes = value;
    }

    /// The same for the bottommost level: kept.
    pub fn set_bottommost_zstd_max_train_bytes(&mut self, value: i32, enabled: bool) {
        self.accepted.bottommost_compression_opts.zstd_max_train_bytes = value;
        self.accepted.bottommost_compression_opts.enabled = enabled;
    }

    /// Levels below `lvl` are not compressed, the others use `compression` (RocksDB's C API
    /// `min_level_to_compress`, which writes `compression_per_level`). Negative: no change.
    pub fn set_min_level_to_compress(&mut self, lvl: i32) {
        let Ok(lvl) = usize::try_from(lvl) else { return };
        self.compression_per_level = (0..self.num_levels)
            .map(|l| if l < lvl { CompressionType::None } else { self.compression })
            .collect();
    }

    /// Compression of the values in blob files (`BlobOptions`).
    pub fn set_blob_compression_type(&mut self, val: CompressionType) {
        self.blob.blob_compression_type = Some(val);
    }
}
