//! The benchmark catalog is the one list of benchmarks: the flag validation accepts exactly its
//! names, and `docs/db_bench.md` §6 describes exactly its rows.

use strata_bench::catalog::{BENCHMARKS, NOT_IMPLEMENTED};
use strata_bench::config::Config;

/// The rows of the table in `docs/db_bench.md` §6: (name, family, fresh, writes, merge).
fn doc_rows() -> Vec<(String, String, bool, bool, bool)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/db_bench.md");
    let text = std::fs::read_to_string(path).expect("docs/db_bench.md");
    let section = text.split("\n## 6. ").nth(1).expect("section 6");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let yes = |i: usize| cells[i] == "yes";
            (cells[0].trim_matches('`').to_string(), cells[1].to_string(), yes(2), yes(3), yes(4))
        })
        .collect()
}

#[test]
fn docs_list_every_benchmark_as_the_catalog_does() {
    let doc = doc_rows();
    for b in BENCHMARKS {
        let row = doc.iter().find(|r| r.0 == b.name);
        let want = (
            b.name.to_string(),
            b.family().name().to_string(),
            b.fresh_db,
            b.writes,
            b.merge_operator,
        );
        assert_eq!(row, Some(&want), "docs/db_bench.md §6 on {}", b.name);
    }
    assert_eq!(
        doc.len(),
        BENCHMARKS.len(),
        "docs/db_bench.md §6 lists a benchmark the catalog does not"
    );
}

#[test]
fn validation_accepts_exactly_the_catalog() {
    // backup and restore name their directories; readtorowcache needs existing keys and a
    // row cache (which the memory engine refuses); every other benchmark needs no flag.
    let dirs = ["--backup_dir=/tmp/b", "--restore_dir=/tmp/r"];
    let needs = ["--use_existing_db", "--use_existing_keys", "--row_cache_size=1"];
    for b in BENCHMARKS {
        let arg = format!("--benchmarks={}", b.name);
        assert!(
            Config::from_args(&[arg.as_str(), dirs[0], dirs[1]]).is_ok()
                || b.name == "readtorowcache",
            "{}",
            b.name
        );
        let alone = Config::from_args(&[arg.as_str()]);
        let flagged = matches!(b.name, "backup" | "restore" | "readtorowcache");
        assert_eq!(alone.is_ok(), !flagged, "{}", b.name);
    }
    Config::from_args(&[&["--benchmarks=readtorowcache"], &needs[..]].concat())
        .expect("Strata has a row cache");
    let e = Config::from_args(
        &[&["--benchmarks=readtorowcache", "--engine=memory"], &needs[..]].concat(),
    )
    .expect_err("the memory engine has no row cache");
    assert!(format!("{e:#}").contains("--row_cache_size"), "{e:#}");
    for name in NOT_IMPLEMENTED {
        let arg = format!("--benchmarks={name}");
        let e = Config::from_args(&[arg.as_str()]).expect_err(name);
        assert!(format!("{e:#}").contains("not implemented"), "{name}: {e:#}");
    }
}
