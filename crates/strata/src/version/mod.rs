//! Versions of the LSM tree and the MANIFEST that records their changes.

pub(crate) mod edit;

#[allow(unused_imports)] // bring-up: used once the version set is wired in.
pub(crate) use edit::{FileMetaData, VersionEdit};
