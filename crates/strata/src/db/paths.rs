//! Each family's table directories as the DB opens or creates it (RocksDB's rules for
//! `db_paths` and `cf_paths`): the family's `cf_paths`, else the DB's `db_paths`, else the DB
//! directory alone. Tables go only to these: with `db_paths` set, the DB directory holds the
//! MANIFEST, WALs and LOG but no table (unless it is one of the paths). Where each table
//! goes within them is `compaction::output_path`'s choice (flushes and ingested files: path
//! 0); the MANIFEST records it (`version::paths`).
//!
//! The directories are created at open and at `create_cf` (RocksDB creates them too); the
//! obsolete-file scan at open looks in every one of them (`db/obsolete.rs`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{parse_file_name, FileKind};
use crate::options::Options;
use crate::types::FileNumber;
use crate::version::paths::{TablePaths, MAX_TABLE_PATHS};

/// The table paths of a family with options `family` in the DB in `dir` opened with `db`.
/// `NotSupported` for more than [`MAX_TABLE_PATHS`] (RocksDB's limit).
pub(crate) fn family_paths(family: &Options, db: &Options, dir: &Path) -> Result<TablePaths> {
    let (list, name) = if family.cf_paths.is_empty() {
        (&db.db_paths, "db_paths")
    } else {
        (&family.cf_paths, "cf_paths")
    };
    if list.len() > MAX_TABLE_PATHS {
        return Err(Error::NotSupported(format!(
            "{name} lists {} paths; at most {MAX_TABLE_PATHS} are supported",
            list.len()
        )));
    }
    if family.cf_paths.is_empty() {
        return Ok(db_level_paths(db, dir));
    }
    Ok(TablePaths::new(family.cf_paths.iter().map(|p| (p.path().to_path_buf(), p.target_size()))))
}

/// The table paths of a family without `cf_paths` of its own: the DB's `db_paths`, else the
/// DB directory (not checked against [`MAX_TABLE_PATHS`]).
pub(crate) fn db_level_paths(db: &Options, dir: &Path) -> TablePaths {
    if db.db_paths.is_empty() {
        return TablePaths::single(dir);
    }
    TablePaths::new(db.db_paths.iter().map(|p| (p.path().to_path_buf(), p.target_size())))
}

/// `family` adjusted to its table paths: with several, level sizes are the static ones
/// (`level_compaction_dynamic_level_bytes` off), which is what places data on the paths by
/// level (RocksDB turns the option off too).
pub(crate) fn sanitize_for_paths(family: &mut Options, paths: &TablePaths) {
    if paths.len() > 1 {
        family.level_compaction_dynamic_level_bytes = false;
    }
}

/// Creates every directory of `paths` that does not exist.
pub(crate) fn create_dirs(fs: &dyn FileSystem, paths: &TablePaths) -> Result<()> {
    for p in paths.iter() {
        if !fs.is_dir(&p.dir) {
            fs.create_dir_all(&p.dir)?;
        }
    }
    Ok(())
}

/// The distinct directories of `families`' paths other than `dir` (the DB directory, whose
/// files are scanned with the rest of the DB's).
pub(crate) fn other_table_dirs<'a>(
    dir: &Path,
    families: impl IntoIterator<Item = &'a TablePaths>,
) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for paths in families {
        for p in paths.iter() {
            if *p.dir != *dir && seen.insert(p.dir.clone()) {
                out.push(p.dir.to_path_buf());
            }
        }
    }
    out
}

/// The table files in `dir`, by number; none when `dir` does not exist.
pub(crate) fn tables_in(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<FileNumber>> {
    if !fs.exists(dir) {
        return Ok(Vec::new());
    }
    Ok(fs
        .list(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Table(t)) => Some(t),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::db::Db;
    use crate::env::MemFs;
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};
    use crate::version::edit::{FileMetaData, VersionEdit};
    use crate::version::levels::Version;
    use crate::version::set::{set_current, write_manifest_for, Counters, FamilySnapshot};
    use crate::wal::LogWriter;

    fn opts(fs: &MemFs) -> Options {
        Options { fs: Arc::new(fs.clone()), ..Options::default() }
    }

    fn table_at(number: u64, path_id: u32) -> FileMetaData {
        FileMetaData {
            number: FileNumber(number),
            file_size: 100,
            smallest: make_internal_key(b"a", SeqNo(1), ValueType::Value),
            largest: make_internal_key(b"b", SeqNo(1), ValueType::Value),
            smallest_seqno: SeqNo(1),
            largest_seqno: SeqNo(1),
            path_id,
            ..FileMetaData::default()
        }
    }

    /// A DB in `dir` whose MANIFEST names one table, `meta`.
    fn db_naming(fs: &MemFs, dir: &Path, meta: FileMetaData) {
        fs.create_dir_all(dir).unwrap();
        let mut edit = VersionEdit::default();
        edit.new_files.push((1, meta));
        let family = FamilySnapshot {
            id: 0,
            name: crate::column_family::DEFAULT_COLUMN_FAMILY_NAME.to_string(),
            // No paths here: the record is written as given.
            version: Arc::new(
                Version::new(7, crate::comparator::KeyOrder::Bytewise).apply(&edit).unwrap(),
            ),
            log_number: FileNumber(0),
            full_history_ts_low: None,
        };
        let counters = Counters {
            log_number: FileNumber(0),
            next_file: FileNumber(100),
            last_sequence: SeqNo(1),
            max_column_family: 0,
        };
        write_manifest_for(fs, dir, FileNumber(50), &[family], &counters).unwrap();
    }

    #[test]
    fn a_path_id_beyond_the_options_is_refused_naming_the_table() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        db_naming(&fs, dir, table_at(77, 7));
        let e = Db::open(&opts(&fs), dir).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("column family \"default\""), "{msg}");
        assert!(msg.contains("table 000077 is at table path id 7"), "{msg}");
        assert!(msg.contains("1 table path(s) (/db)"), "{msg}");
        // A read-only open says the same, and writes nothing.
        let e = Db::open_read_only(&opts(&fs), dir).unwrap_err();
        assert!(e.to_string().contains("table 000077 is at table path id 7"), "{e}");
    }

    #[test]
    fn a_path_id_for_a_file_the_edit_does_not_add_is_corruption_of_the_manifest() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let first = VersionEdit {
            comparator: Some(crate::comparator::BYTEWISE_NAME.to_string()),
            log_number: Some(FileNumber(0)),
            next_file_number: Some(FileNumber(100)),
            last_sequence: Some(SeqNo(1)),
            ..VersionEdit::default()
        };
        let mut good = Vec::new();
        first.encode(&mut good);
        // An edit that places file 78, which it does not add, at path 1.
        let mut bad = Vec::new();
        crate::util::coding::put_varint32(&mut bad, crate::version::edit::tag::PATH_ID);
        crate::util::coding::put_varint64(&mut bad, 78);
        crate::util::coding::put_varint32(&mut bad, 1);
        let mut w = LogWriter::new(fs.create(&dir.join("MANIFEST-000050")).unwrap());
        w.add_record(&good).unwrap();
        w.add_record(&bad).unwrap();
        w.sync().unwrap();
        drop(w);
        set_current(&fs, dir, FileNumber(50)).unwrap();
        let e = Db::open(&opts(&fs), dir).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("MANIFEST-000050"), "{msg}");
        assert!(msg.contains("path id 1 for file 78, which the edit does not add"), "{msg}");
    }
}
