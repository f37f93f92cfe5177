//! `strata`: the admin CLI of a Strata database (`docs/cli.md`).
//!
//! Contract: read commands open the DB read-only (nothing in its directory changes); output
//! formats are stable and documented; a bad argument, a missing DB or a damaged file is one
//! line on stderr (`strata: error: ...`) and a non-zero exit (2 for bad usage, 1 otherwise),
//! never a panic or a backtrace.

mod dump;
mod fmt;
mod ops;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Inspect and operate a Strata database.
#[derive(Parser, Debug)]
#[command(name = "strata", version, about)]
pub struct Cli {
    /// The DB directory (needed by every command but dump-sst, dump-wal and dump-blob).
    #[arg(long, global = true, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Keys and values as hex (arguments and output) instead of escaped text.
    #[arg(long, global = true)]
    pub hex: bool,
    /// The column family get, put, delete, scan, compact and properties act on (default:
    /// `default`). Every command opens a DB with all its families.
    #[arg(long, global = true, value_name = "NAME")]
    pub cf: Option<String>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the value of KEY (exit 1 when it is absent).
    Get {
        /// The key.
        key: String,
    },
    /// Set KEY to VALUE.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Delete KEY.
    Delete {
        /// The key.
        key: String,
    },
    /// Print the keys and values in [--from, --to), in key order.
    Scan {
        /// First key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// End key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// At most this many entries.
        #[arg(long)]
        limit: Option<usize>,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Print a table file: properties, index, range deletions and every block's entries.
    DumpSst {
        /// The table file.
        file: PathBuf,
        /// Also check every block's checksum and the key order (exit 1 on damage).
        #[arg(long)]
        verify: bool,
        /// Leave out the entries (properties and index only).
        #[arg(long)]
        no_entries: bool,
    },
    /// Print the records of a blob file (values kept out of the tables), checking each.
    DumpBlob {
        /// The blob file.
        file: PathBuf,
    },
    /// Print the records of a WAL file.
    DumpWal {
        /// The WAL file.
        file: PathBuf,
    },
    /// Print the edits of a MANIFEST (default: the one CURRENT names in --db).
    DumpManifest {
        /// The MANIFEST file.
        file: Option<PathBuf>,
    },
    /// Print the LSM tree: levels, files, sizes, key ranges.
    Lsm {
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Check every checksum of every live file (exit 0 clean, 1 damaged).
    Verify,
    /// Rebuild the MANIFEST from the table files and WALs (after MANIFEST or CURRENT loss).
    Repair,
    /// Make a checkpoint of the DB in DIR (flushes the memtables first).
    Checkpoint {
        /// The checkpoint's directory (must not exist).
        dir: PathBuf,
    },
    /// Add a backup of the DB to BACKUP_DIR.
    Backup {
        /// The backup directory.
        backup_dir: PathBuf,
    },
    /// List the backups in BACKUP_DIR.
    ListBackups {
        /// The backup directory.
        backup_dir: PathBuf,
    },
    /// Restore a backup (default: the newest) from BACKUP_DIR into --db.
    Restore {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup's id.
        #[arg(long)]
        id: Option<u64>,
    },
    /// Compact the key range [--from, --to] (default: everything) down to the last level.
    Compact {
        /// First key.
        #[arg(long)]
        from: Option<String>,
        /// Last key.
        #[arg(long)]
        to: Option<String>,
    },
    /// Print a DB property (e.g. strata.stats, strata.num-files-at-level0).
    Properties {
        /// The property name.
        name: String,
    },
}

/// What a command tells `main` besides its output.
pub enum Outcome {
    /// Done.
    Ok,
    /// Done, but the answer is "no" (a key absent, damage found): exit 1.
    Negative,
}

fn main() -> ExitCode {
    // A panic would be a defect; should one happen, it is still one line.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("strata: internal error: {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("bad arguments");
            eprintln!("strata: {}", line.trim_start_matches("error: ").trim());
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = ops::run(&cli, &mut out);
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(Outcome::Ok), Ok(())) => ExitCode::SUCCESS,
        (Ok(Outcome::Negative), Ok(())) => ExitCode::from(1),
        (Err(e), _) => {
            eprintln!("strata: error: {e:#}");
            ExitCode::from(1)
        }
        (_, Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        (_, Err(e)) => {
            eprintln!("strata: error: writing the output: {e}");
            ExitCode::from(1)
        }
    }
}
