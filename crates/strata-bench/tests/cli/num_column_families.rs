//! `--num_column_families=N` (db_bench's flag): keys are spread over `default`,
//! `column_family_name_000001`, ... by key number modulo N, and read back from there.

use std::process::Command;

#[test]
fn keys_are_spread_over_the_families_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = Command::new(env!("CARGO_BIN_EXE_strata-bench"))
        .arg(format!("--db={}", db.display()))
        .args(["--benchmarks=fillseq,readrandom", "--num=3000", "--num_column_families=3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("found)"), "{stdout}");
    let line = stdout.lines().find(|l| l.starts_with("readrandom")).unwrap();
    // Every read key exists: readrandom finds all of them in their families.
    let found = line.split('(').nth(1).unwrap();
    let (hit, total) = found.split_once(" of ").unwrap();
    assert_eq!(hit.trim(), total.split_whitespace().next().unwrap(), "{line}");

    let opts = strata::Options::default();
    let names = strata::Db::list_cf(&opts, &db).unwrap();
    assert_eq!(names, ["default", "column_family_name_000001", "column_family_name_000002"]);
    let d = strata::Db::open_cf(&opts, &db, &names[1..]).unwrap();
    let mut counts = Vec::new();
    for name in &names {
        let n = if name == "default" {
            d.iterator(strata::IteratorMode::Start).count()
        } else {
            d.iterator_cf(&d.cf_handle(name).unwrap(), strata::IteratorMode::Start).count()
        };
        counts.push(n);
    }
    assert!(counts.iter().all(|&n| n > 500), "{counts:?}");
    // Key number k is in family k % 3: key 0 in default, key 1 in the first other family.
    let key = |k: u64| {
        let mut b = k.to_be_bytes().to_vec();
        b.resize(16, b'0');
        b
    };
    let one = d.cf_handle("column_family_name_000001").unwrap();
    for k in 0..30u64 {
        let in_default = d.get(key(k)).unwrap().is_some();
        let in_one = d.get_cf(&one, key(k)).unwrap().is_some();
        assert!(!in_default || k % 3 == 0, "key {k} in default");
        assert!(!in_one || k % 3 == 1, "key {k} in family 1");
    }
}
