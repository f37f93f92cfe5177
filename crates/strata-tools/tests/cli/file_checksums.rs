//! The CLI on a DB written with `Options::file_checksums`: `dump-manifest` shows each
//! table's CRC32C, the one its bytes give.

use crate::{stdout, strata};

use strata::{Db, Options};

#[test]
fn dump_manifest_shows_each_tables_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let opts = Options { create_if_missing: true, file_checksums: true, ..Options::default() };
    let db = Db::open(&opts, &path).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    let info = db.get_live_files_checksum_info();
    drop(db);
    let crc = crc32c::crc32c(&std::fs::read(path.join(&info[0].name)).unwrap());
    let manifest = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("MANIFEST-"))
        .unwrap();
    let dump = stdout(&strata(&["dump-manifest", manifest.to_str().unwrap()]));
    assert!(dump.contains(&format!(" crc32c {crc:08x}")), "{dump}");
}
