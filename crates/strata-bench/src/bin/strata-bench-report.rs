//! `strata-bench-report <dir>`: turns the logs of a `bench/run.sh` run (listed in
//! `<dir>/steps.tsv`) into `report.tsv`, `relative_qps.{md,txt,png}` and `qps.png`.
//! `strata-bench-report --leveldb-page <dir>`: a `bench/leveldb-page.sh` run into
//! `leveldb_page.{md,png}` (and `report.tsv`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (page, dir) = match args.as_slice() {
        [flag, dir] if flag == "--leveldb-page" => (true, dir),
        [dir] if !dir.starts_with('-') => (false, dir),
        _ => {
            eprintln!(
                "usage: strata-bench-report <bench/out/TIMESTAMP directory>\n       \
                 strata-bench-report --leveldb-page <bench/leveldb-page.sh output directory>"
            );
            return ExitCode::FAILURE;
        }
    };
    let dir = PathBuf::from(dir);
    let written = if page {
        strata_bench::report::leveldb_page::write_leveldb_page(&dir)
    } else {
        strata_bench::report::write_reports(&dir)
    };
    match written {
        Ok(files) => {
            for f in files {
                println!("{}", dir.join(f).display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("strata-bench-report: {e:#}");
            ExitCode::FAILURE
        }
    }
}
