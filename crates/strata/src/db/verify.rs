//! `Db::verify_checksum`: RocksDB's `DB::VerifyChecksum` on an open DB. Every live table of
//! every family is read whole from its file (footer, metaindex, index, filter, range
//! deletions and properties parsed, then every data block read, the block cache bypassed) and
//! every live blob file record by record through a window of it (`blob/file_scan.rs`), each
//! checksum checked.

use std::sync::Arc;

use super::Db;
use crate::comparator::KnownOrders;
use crate::error::Result;
use crate::filename::blob_file_name;
use crate::sstable::reader::TableReader;
use crate::sstable::CompressionType;

impl Db {
    /// Checks every checksum of the live tables and blob files, as RocksDB's
    /// `VerifyChecksum`: the tables of every family's current version, read from their files
    /// (every block; data blocks are checked as stored, not uncompressed, as RocksDB checks
    /// them; `strata verify` also walks their keys), and the blob files those versions refer
    /// to (header, every record, footer; every value uncompressed).
    /// The versions are held meanwhile, so no compaction deletes a file being read. Values
    /// written to a blob file at commit whose memtable is not yet flushed are left to
    /// recovery's checks (the file is still being written). Damage is `Corruption` naming the
    /// file and the offset; the DB is not changed.
    pub fn verify_checksum(&self) -> Result<()> {
        let inner = &self.inner;
        let fs = inner.fs.as_ref();
        let mut held = Vec::new();
        let mut blobs = Vec::new();
        for cfd in inner.families() {
            let sv = cfd.current_super_version();
            let orders = KnownOrders::of(&cfd.opts.comparator);
            for (_, t) in sv.version.files() {
                let file = fs.open(&t.path_in(&inner.dir))?;
                Arc::new(TableReader::open_in(file, 0, None, &orders)?).verify_checksums()?;
            }
            blobs.extend(sv.version.blobs().numbers());
            held.push(sv);
        }
        blobs.sort_unstable();
        blobs.dedup();
        for n in blobs {
            let path = inner.dir.join(blob_file_name(n));
            let file = fs.open(&path)?;
            crate::blob::file_scan::scan_file(&path, file.as_ref(), |r| match r.compression {
                CompressionType::None => Ok(()),
                c => crate::sstable::compression::uncompress(c, r.value, r.offset)
                    .map(drop)
                    .map_err(|e| e.with_file(&path)),
            })?;
        }
        drop(held);
        Ok(())
    }
}
