//! `strata-bench-report <dir>`: turns the logs of a `bench/run.sh` run (listed in
//! `<dir>/steps.tsv`) into `report.tsv`, `relative_qps.{md,txt,png}` and `qps.png`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir] = args.as_slice() else {
        eprintln!("usage: strata-bench-report <bench/out/TIMESTAMP directory>");
        return ExitCode::FAILURE;
    };
    let dir = PathBuf::from(dir);
    match strata_bench::report::write_reports(&dir) {
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
