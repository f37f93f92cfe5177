//! The CLI opens a DB with the options of its newest OPTIONS file: a compaction it runs
//! writes tables as the DB's own opens would (here with the family's compression).

use crate::{stdout, strata};

use strata::{ColumnFamilyDescriptor, DBCompressionType, Db, Options};

#[test]
fn compact_writes_tables_with_the_dbs_own_compression() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let mut zstd = Options::default();
    zstd.set_compression_type(DBCompressionType::Zstd);
    {
        let db =
            Db::open_cf_descriptors(&opts, &path, vec![ColumnFamilyDescriptor::new("z", zstd)])
                .unwrap();
        let z = db.cf_handle("z").unwrap();
        for i in 0..200u32 {
            db.put_cf(&z, format!("k{i:03}"), format!("value {i} ").repeat(8)).unwrap();
        }
    }
    let db = path.to_str().unwrap();
    stdout(&strata(&["--db", db, "--cf", "z", "compact"]));
    let tables: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let dump = stdout(&strata(&["dump-sst", tables[0].to_str().unwrap()]));
    assert!(dump.contains("compression: Zstd"), "{dump}");
}
