//! Versions of the LSM tree and the MANIFEST that records their changes.

pub(crate) mod blob_files;
pub(crate) mod edit;
pub(crate) mod fences;
pub(crate) mod level_iter;
pub(crate) mod levels;
pub(crate) mod paths;
pub(crate) mod set;
