//! Whole-file checksums of tables and blob files (RocksDB's file checksums with its crc32c
//! generator, `Options::file_checksums`). A table's builder keeps the CRC32C of every byte it
//! writes (`TableOptions::file_checksum`), so does a blob file's writer
//! (`BlobWriteConfig::file_checksum`), an ingested file's is computed from its bytes, and the
//! MANIFEST records it with the file (tag `FileChecksum`, `docs/format/manifest.md`).
//! `verify_file_checksums` reads every live file that has one whole, a megabyte at a time
//! (`env::file_crc32c`), and compares; `get_live_files_checksum_info` lists them (RocksDB's
//! `VerifyFileChecksums` and `GetLiveFilesChecksumInfo`, which cover blob files too). Files
//! written while the option was off, and repaired ones, have none: they are listed without one
//! and not verified.

use super::Db;
use crate::env::file_crc32c;
use crate::error::{Error, Result};
use crate::filename::{blob_path, table_file_name};
use crate::types::FileNumber;

/// One live file's checksum (RocksDB's `FileChecksumList` entry): a table or a blob file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFileChecksum {
    /// The file's column family.
    pub column_family_name: String,
    /// The file's number (its name is `NNNNNN.sst`, or `NNNNNN.blob` for a blob file).
    pub file_number: u64,
    /// The file's name.
    pub name: String,
    /// The CRC32C of the whole file, `None` when the DB computed none for it.
    pub checksum: Option<u32>,
    /// `FileChecksumCrc32c` (RocksDB's name of its generator) when there is a checksum,
    /// `Unknown` otherwise (RocksDB's `kUnknownFileChecksumFuncName`).
    pub checksum_func_name: &'static str,
}

impl Db {
    /// Reads every live table and blob file whose checksum the MANIFEST records whole and
    /// compares its CRC32C with it (RocksDB's `VerifyFileChecksums`). A mismatch is
    /// `Corruption` naming the file and both checksums; files without one are skipped. The
    /// versions are held meanwhile, so no compaction deletes a file being read; the DB is not
    /// changed.
    pub fn verify_file_checksums(&self) -> Result<()> {
        let inner = &self.inner;
        let fs = inner.fs.as_ref();
        let mut held = Vec::new();
        for cfd in inner.families() {
            let sv = cfd.current_super_version();
            let tables =
                sv.version.files().map(|(_, t)| (t.path_in(&inner.dir), t.meta.file_checksum));
            let blobs =
                sv.version.blobs().iter().map(|(n, b)| (blob_path(&inner.dir, n), b.file_checksum));
            for (path, want) in tables.chain(blobs) {
                let Some(want) = want else { continue };
                let (_, got) = file_crc32c(fs, &path)?;
                if got != want {
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!(
                            "file checksum mismatch: the MANIFEST records CRC32C {want:#010x}, \
                             the file's bytes give {got:#010x}"
                        ),
                    ));
                }
            }
            held.push(sv);
        }
        drop(held);
        Ok(())
    }

    /// Every live table of every family with its whole-file checksum, if the DB computed one
    /// (RocksDB's `GetLiveFilesChecksumInfo`).
    pub fn get_live_files_checksum_info(&self) -> Vec<LiveFileChecksum> {
        let mut out = Vec::new();
        for cfd in self.inner.families() {
            let sv = cfd.current_super_version();
            let entry =
                |number: FileNumber, name: String, checksum: Option<u32>| LiveFileChecksum {
                    column_family_name: cfd.name.clone(),
                    file_number: number.0,
                    name,
                    checksum,
                    checksum_func_name: if checksum.is_some() {
                        crate::version::edit::CRC32C_CHECKSUM_NAME
                    } else {
                        "Unknown"
                    },
                };
            for (_, t) in sv.version.files() {
                let n = t.meta.number;
                out.push(entry(n, table_file_name(n), t.meta.file_checksum));
            }
            for (n, b) in sv.version.blobs().iter() {
                out.push(entry(n, crate::filename::blob_file_name(n), b.file_checksum));
            }
        }
        out
    }
}
