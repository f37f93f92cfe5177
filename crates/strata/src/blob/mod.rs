//! Key-value separation: values of at least `min_blob_size` bytes are written by flushes and
//! compactions to blob files (`NNNNNN.blob`, in the DB directory), and the tables keep a blob
//! index in their place (an entry of type `BlobIndex`). A compaction then moves the small
//! index instead of the value, so a large value is written about once instead of once per
//! level.
//!
//! - Writing: [`writer::BlobOutput`] sits between the surviving entries of a flush or
//!   compaction and its tables. Each table records the blob files it refers to
//!   (`FileMetaData::blob_refs`), each edit the blob files written and the garbage made
//!   (`version::edit`, tags 16-18).
//! - Garbage: a compaction counts the indexes it reads and writes per blob file
//!   ([`writer::BlobFlow`]); what it read and did not write is garbage. A blob file leaves
//!   the version when no table refers to it (`version::blob_files`) and is deleted once no
//!   version still read holds it. Garbage collection (`enable_blob_garbage_collection`)
//!   rewrites, during compactions, the values still live in the oldest blob files
//!   (`blob_garbage_collection_age_cutoff`), so those files empty out.
//! - Reading: point reads, iterators (only when the value is asked for) and compactions
//!   (relocation, filters, merges) resolve indexes through [`reader::BlobReads`] over the
//!   DB's [`reader::BlobSource`], which keeps the files open and the values in the blob cache
//!   when there is one; compactions and reads with `fill_cache` off leave the cache as it is.
//!   Reads in file order read ahead ([`readahead`]).
//! - Merge operands and deletions always stay in the tables; so does every value in a
//!   memtable, a WAL or a write batch, except where the family writes values at commit
//!   (`write_blobs_at_commit`, `db/blob_log.rs`): then the write path writes each large
//!   put value to its memtable's blob file, the WAL and the memtable hold the index, and the
//!   flush finishes the file and adds it to the version.
//!
//! Formats: `format.rs` (the file), `index.rs` (the index), mirrored in
//! `docs/format/blob.md`.

pub(crate) mod file_scan;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod readahead;
pub(crate) mod reader;
#[cfg(test)]
mod tests;
pub(crate) mod writer;

pub(crate) use index::BlobIndex;
pub(crate) use reader::{BlobReads, BlobSource};
pub(crate) use writer::{BlobFlow, BlobOutput, BlobWriteConfig};
