//! How a family's flushes and compactions write blob files (`crate::blob`), from its
//! options and its current blob files.

use super::Cfd;
use crate::blob::BlobWriteConfig;
use crate::types::FileNumber;
use crate::version::levels::Version;

/// The blob settings of family `cfd` for an output: whether and which values go to blob
/// files, and, for a compaction made from `version` with garbage collection on, the blob
/// files whose live values are rewritten (the oldest `blob_gc_age_cutoff` share of the
/// version's). The family's live options rule (`set_options` changes them for the next
/// flush or compaction).
pub(crate) fn write_config(cfd: &Cfd, version: Option<&Version>) -> BlobWriteConfig {
    let live = cfd.live_opts();
    let b = &live.blob;
    let relocate_below = match version {
        Some(v) if b.enable_blob_gc => gc_cutoff(v.blobs().numbers(), b.blob_gc_age_cutoff),
        _ => None,
    };
    config(&live, cfd.id, relocate_below, cfd.stats.user_statistics().cloned())
}

/// The blob settings `opts` give the outputs of family `cf`, counted in `statistics` (the
/// DB's).
pub(crate) fn config(
    opts: &crate::options::Options,
    cf: u32,
    relocate_below: Option<FileNumber>,
    statistics: Option<std::sync::Arc<crate::statistics::Statistics>>,
) -> BlobWriteConfig {
    let b = &opts.blob;
    BlobWriteConfig {
        min_blob_size: b.enable_blob_files.then_some(b.min_blob_size),
        file_size: b.blob_file_size.max(1),
        compression: b.blob_compression_type.unwrap_or(crate::sstable::CompressionType::None),
        zstd_level: opts.zstd_level,
        column_family: cf,
        relocate_below,
        statistics,
        file_checksum: opts.file_checksums,
    }
}

/// The first blob file past the oldest `cutoff` share of `numbers` (ascending): files below
/// it are collected. `None` when that share holds no file.
pub(crate) fn gc_cutoff(
    numbers: impl Iterator<Item = FileNumber>,
    cutoff: f64,
) -> Option<FileNumber> {
    let all: Vec<FileNumber> = numbers.collect();
    let n = ((all.len() as f64) * cutoff.clamp(0.0, 1.0)).floor() as usize;
    match n {
        0 => None,
        n if n >= all.len() => all.last().map(|l| FileNumber(l.0 + 1)),
        n => Some(all[n]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoff_takes_the_oldest_share() {
        let files = |n: u64| (1..=n).map(|i| FileNumber(i * 10));
        assert_eq!(gc_cutoff(files(8), 0.25), Some(FileNumber(30)));
        assert_eq!(gc_cutoff(files(3), 0.25), None);
        assert_eq!(gc_cutoff(files(4), 1.0), Some(FileNumber(41)));
        assert_eq!(gc_cutoff(files(0), 0.5), None);
        assert_eq!(gc_cutoff(files(10), 0.0), None);
    }
}
