//! Names of the files in a DB directory.
//!
//! ```text
//! CURRENT            name of the live MANIFEST, one line
//! IDENTITY           the DB's id (`db/identity.rs`)
//! LOCK               held while a Db is open
//! MANIFEST-NNNNNN    log of version edits
//! NNNNNN.log         write-ahead log
//! NNNNNN.sst         table
//! NNNNNN.blob        blob file: values kept out of the tables (`crate::blob`)
//! NNNNNN.dbtmp       temporary file (CURRENT being replaced)
//! OPTIONS-NNNNNN     the options the DB was last opened or changed with (`db/options_file.rs`)
//! OPTIONS-NNNNNN.dbtmp  an OPTIONS file being written
//! archive/NNNNNN.log an archived WAL, in the WAL directory (`Options::wal_ttl_seconds`)
//! ```
//! All numbers come from one counter ([`FileNumber`]).

use std::path::{Path, PathBuf};

use crate::types::FileNumber;

/// The kinds of file the engine creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Current,
    Identity,
    Lock,
    Manifest(FileNumber),
    Wal(FileNumber),
    Table(FileNumber),
    Blob(FileNumber),
    Temp(FileNumber),
    Options(FileNumber),
    OptionsTemp(FileNumber),
}

pub(crate) fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

pub(crate) fn identity_path(dir: &Path) -> PathBuf {
    dir.join("IDENTITY")
}

pub(crate) fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

pub(crate) fn manifest_name(n: FileNumber) -> String {
    format!("MANIFEST-{n}")
}

pub(crate) fn manifest_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(manifest_name(n))
}

pub(crate) fn wal_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(format!("{n}.log"))
}

/// The directory of archived WALs: `archive` in the WAL directory `wal_dir`. Recovery never
/// looks in it; `Db::get_updates_since` reads it.
pub(crate) fn archive_dir(wal_dir: &Path) -> PathBuf {
    wal_dir.join("archive")
}

/// The path of blob file `n` in `dir`.
pub(crate) fn blob_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(blob_file_name(n))
}

/// The name of blob file `n` inside the DB directory.
pub(crate) fn blob_file_name(n: FileNumber) -> String {
    format!("{n}.blob")
}

/// The path of table `n` in `dir`.
pub(crate) fn table_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(table_file_name(n))
}

/// The name of table `n` inside the DB directory.
pub(crate) fn table_file_name(n: FileNumber) -> String {
    format!("{n}.sst")
}

pub(crate) fn temp_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(format!("{n}.dbtmp"))
}

/// The name of OPTIONS file `n` (`db/options_file.rs`).
pub(crate) fn options_file_name(n: FileNumber) -> String {
    format!("OPTIONS-{n}")
}

/// The path OPTIONS file `n` is written at before its rename.
pub(crate) fn options_temp_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(format!("OPTIONS-{n}.dbtmp"))
}

fn parse_number(s: &str) -> Option<FileNumber> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().map(FileNumber)
}

/// Classifies a directory entry; `None` for files the engine does not own.
pub(crate) fn parse_file_name(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "IDENTITY" => return Some(FileKind::Identity),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return parse_number(rest).map(FileKind::Manifest);
    }
    if let Some(rest) = name.strip_prefix("OPTIONS-") {
        return match rest.strip_suffix(".dbtmp") {
            Some(n) => parse_number(n).map(FileKind::OptionsTemp),
            None => parse_number(rest).map(FileKind::Options),
        };
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = parse_number(stem)?;
    match ext {
        "log" => Some(FileKind::Wal(n)),
        "sst" => Some(FileKind::Table(n)),
        "blob" => Some(FileKind::Blob(n)),
        "dbtmp" => Some(FileKind::Temp(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let d = Path::new("/db");
        let n = FileNumber(42);
        for (p, k) in [
            (wal_path(d, n), FileKind::Wal(n)),
            (table_path(d, n), FileKind::Table(n)),
            (blob_path(d, n), FileKind::Blob(n)),
            (manifest_path(d, n), FileKind::Manifest(n)),
            (temp_path(d, n), FileKind::Temp(n)),
            (current_path(d), FileKind::Current),
            (lock_path(d), FileKind::Lock),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_file_name(name), Some(k), "{name}");
        }
        assert_eq!(wal_path(d, n).to_str().unwrap(), "/db/000042.log");
    }

    #[test]
    fn foreign_names_ignored() {
        for name in
            ["LOG", "x.sst", "12.txt", "MANIFEST-", "MANIFEST-1a", ".log", "-1.sst", "+5.log"]
        {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }
}
