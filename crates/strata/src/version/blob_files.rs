//! The blob files of a family's version, with what the MANIFEST counts of each: records and
//! bytes written, and how many of them became garbage (`docs/format/blob.md`).
//!
//! Invariant (kept by [`BlobFiles::apply`]): the set holds exactly the blob files some table
//! of the version refers to (`FileMetaData::blob_refs`); a blob file no table refers to any
//! more leaves the version, and is deleted once no version still read holds it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::edit::{FileMetaData, VersionEdit};
use crate::error::{Error, Result};
use crate::types::FileNumber;

/// One blob file as a version knows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlobFileMeta {
    pub records: u64,
    pub bytes: u64,
    pub garbage_records: u64,
    pub garbage_bytes: u64,
    /// The CRC32C of the whole file, when the DB computed one (`Options::file_checksums`).
    pub file_checksum: Option<u32>,
}

impl BlobFileMeta {
    /// The share of the file's bytes that is garbage, in [0, 1].
    #[cfg(test)]
    pub fn garbage_ratio(&self) -> f64 {
        if self.bytes == 0 {
            return 0.0;
        }
        (self.garbage_bytes as f64 / self.bytes as f64).min(1.0)
    }
}

/// A family's blob files by number. Cheap to clone (shared until changed).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlobFiles {
    files: Arc<BTreeMap<FileNumber, BlobFileMeta>>,
}

impl BlobFiles {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    #[cfg(test)]
    pub fn get(&self, n: FileNumber) -> Option<&BlobFileMeta> {
        self.files.get(&n)
    }

    pub fn iter(&self) -> impl Iterator<Item = (FileNumber, &BlobFileMeta)> + '_ {
        self.files.iter().map(|(n, m)| (*n, m))
    }

    pub fn numbers(&self) -> impl Iterator<Item = FileNumber> + '_ {
        self.files.keys().copied()
    }

    /// Total and garbage bytes over every file.
    pub fn bytes(&self) -> (u64, u64) {
        self.files.values().fold((0, 0), |(t, g), m| (t + m.bytes, g + m.garbage_bytes))
    }

    /// The set after `edit`, whose tables are now `tables`: files added, garbage counted,
    /// files no table refers to dropped. A file added twice, garbage for an unknown file or
    /// beyond a file's size, and a table referring to a blob file the family does not have
    /// are `Corruption`.
    pub fn apply<'a>(
        &self,
        edit: &VersionEdit,
        tables: impl Iterator<Item = &'a FileMetaData>,
    ) -> Result<BlobFiles> {
        let bad = |reason: String| Err(Error::corruption("", 0, reason));
        let touched = !edit.blob_files_added.is_empty()
            || !edit.blob_garbage.is_empty()
            || (!self.files.is_empty() && !edit.deleted_files.is_empty())
            || edit.new_files.iter().any(|(_, f)| !f.blob_refs.is_empty());
        if !touched {
            return Ok(self.clone());
        }
        let mut files = (*self.files).clone();
        for a in &edit.blob_files_added {
            let meta = BlobFileMeta {
                records: a.records,
                bytes: a.bytes,
                file_checksum: a.file_checksum,
                ..Default::default()
            };
            if files.insert(a.number, meta).is_some() {
                return bad(format!("edit adds blob file {}, which exists", a.number));
            }
        }
        for g in &edit.blob_garbage {
            let Some(m) = files.get_mut(&g.number) else {
                return bad(format!(
                    "edit counts garbage in blob file {}, which is gone",
                    g.number
                ));
            };
            m.garbage_records += g.records;
            m.garbage_bytes += g.bytes;
            if m.garbage_records > m.records || m.garbage_bytes > m.bytes {
                return bad(format!(
                    "blob file {} has {} garbage records of {} bytes, more than its {} of {}",
                    g.number, m.garbage_records, m.garbage_bytes, m.records, m.bytes
                ));
            }
        }
        let mut referenced = BTreeSet::new();
        for t in tables {
            for &b in &t.blob_refs {
                if !files.contains_key(&b) {
                    return bad(format!(
                        "table {} refers to blob file {b}, which the family does not have",
                        t.number
                    ));
                }
                referenced.insert(b);
            }
        }
        files.retain(|n, _| referenced.contains(n));
        Ok(BlobFiles { files: Arc::new(files) })
    }

    /// The edit fields that recreate the set (the start of a new MANIFEST).
    pub fn snapshot_into(&self, e: &mut VersionEdit) {
        for (&number, m) in self.files.iter() {
            e.blob_files_added.push(super::edit::BlobFileAddition {
                number,
                records: m.records,
                bytes: m.bytes,
                file_checksum: m.file_checksum,
            });
            if m.garbage_records > 0 || m.garbage_bytes > 0 {
                e.blob_garbage.push(super::edit::BlobGarbage {
                    number,
                    records: m.garbage_records,
                    bytes: m.garbage_bytes,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::edit::{BlobFileAddition, BlobGarbage};

    fn table(n: u64, refs: &[u64]) -> FileMetaData {
        FileMetaData {
            number: FileNumber(n),
            blob_refs: refs.iter().map(|&r| FileNumber(r)).collect(),
            file_checksum: None,
            ..FileMetaData::default()
        }
    }

    fn add(n: u64, records: u64, bytes: u64) -> BlobFileAddition {
        BlobFileAddition { number: FileNumber(n), records, bytes, file_checksum: None }
    }

    #[test]
    fn files_live_while_referenced_and_garbage_accumulates() {
        let empty = BlobFiles::default();
        let mut e = VersionEdit {
            blob_files_added: vec![add(5, 10, 1000), add(6, 4, 400)],
            ..VersionEdit::default()
        };
        let t1 = table(7, &[5, 6]);
        e.new_files.push((0, t1.clone()));
        let v1 = empty.apply(&e, [&t1].into_iter()).unwrap();
        assert_eq!(v1.numbers().collect::<Vec<_>>(), [FileNumber(5), FileNumber(6)]);
        // A compaction rewrites table 7 as 9, which refers to 6 only; 5 is all garbage.
        let mut c = VersionEdit::default();
        c.deleted_files.push((0, FileNumber(7)));
        let t2 = table(9, &[6]);
        c.new_files.push((1, t2.clone()));
        c.blob_garbage = vec![
            BlobGarbage { number: FileNumber(5), records: 10, bytes: 1000 },
            BlobGarbage { number: FileNumber(6), records: 1, bytes: 100 },
        ];
        let v2 = v1.apply(&c, [&t2].into_iter()).unwrap();
        assert_eq!(v2.numbers().collect::<Vec<_>>(), [FileNumber(6)]);
        let m = v2.get(FileNumber(6)).unwrap();
        assert_eq!((m.garbage_records, m.garbage_bytes), (1, 100));
        assert!((m.garbage_ratio() - 0.25).abs() < 1e-9);
        assert_eq!(v2.bytes(), (400, 100));
        // The snapshot recreates the set.
        let mut snap = VersionEdit::default();
        v2.snapshot_into(&mut snap);
        snap.new_files.push((1, t2.clone()));
        let again = BlobFiles::default().apply(&snap, [&t2].into_iter()).unwrap();
        assert_eq!(again.get(FileNumber(6)), v2.get(FileNumber(6)));
    }

    #[test]
    fn bad_edits_are_corruption() {
        let mut e = VersionEdit { blob_files_added: vec![add(5, 1, 10)], ..VersionEdit::default() };
        let t = table(7, &[5]);
        e.new_files.push((0, t.clone()));
        let v = BlobFiles::default().apply(&e, [&t].into_iter()).unwrap();
        let err = |r: Result<BlobFiles>| r.unwrap_err().to_string();
        let twice = VersionEdit { blob_files_added: vec![add(5, 1, 10)], ..VersionEdit::default() };
        assert!(err(v.apply(&twice, [&t].into_iter())).contains("which exists"));
        let over = VersionEdit {
            blob_garbage: vec![BlobGarbage { number: FileNumber(5), records: 2, bytes: 1 }],
            ..VersionEdit::default()
        };
        assert!(err(v.apply(&over, [&t].into_iter())).contains("more than its"));
        let unknown = VersionEdit {
            blob_garbage: vec![BlobGarbage { number: FileNumber(8), records: 1, bytes: 1 }],
            ..VersionEdit::default()
        };
        assert!(err(v.apply(&unknown, [&t].into_iter())).contains("which is gone"));
        let dangling = table(9, &[4]);
        let mut d = VersionEdit::default();
        d.new_files.push((1, dangling.clone()));
        assert!(err(v.apply(&d, [&t, &dangling].into_iter())).contains("does not have"));
    }
}
