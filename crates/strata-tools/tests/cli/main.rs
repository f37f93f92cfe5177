//! The strata CLI as a user runs it: column families, a DB another process holds, a DB deeper
//! than the default levels, a blob file written at commit, wide-column entities, and the
//! golden outputs of every command (`testdata/`). One module per behaviour.

mod blob_files;
mod column_families;
mod entities;
mod file_checksums;
mod golden;
mod levels;
mod own_options;

use std::process::{Command, Output};

/// Runs the strata CLI with `args`.
fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap()
}

/// The stdout of a run that must have succeeded.
fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
