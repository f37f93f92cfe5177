//! `strata-bench-ycsb-report <dir>`: turns the YCSB logs of a `bench/ycsb.sh` run (listed in
//! `<dir>/runs.tsv`) into `results.tsv`, `table.tsv`, `table.md`, `ycsb_qps.png` and
//! `ycsb_relative.png`. Exits 1 when a report cannot be written, 3 when a run failed or an
//! operation returned an error (the reports are written all the same).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir] = args.as_slice() else {
        eprintln!("usage: strata-bench-ycsb-report <bench/ycsb.sh output directory>");
        return ExitCode::FAILURE;
    };
    let dir = PathBuf::from(dir);
    match strata_bench::report::ycsb::write_ycsb_reports(&dir) {
        Ok(strata_bench::report::ycsb::Written { files, problems }) => {
            for f in files {
                println!("{}", dir.join(f).display());
            }
            for (run, problem) in &problems {
                eprintln!("strata-bench-ycsb-report: {run}: {problem}");
            }
            if problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(e) => {
            eprintln!("strata-bench-ycsb-report: {e:#}");
            ExitCode::FAILURE
        }
    }
}
