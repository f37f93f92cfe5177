//! The strata CLI as a user runs it: column families, a DB another process holds, a DB deeper
//! than the default levels, and the golden outputs of every command (`testdata/`). One module
//! per behaviour.

mod column_families;
mod golden;
mod levels;
