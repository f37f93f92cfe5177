//! Compaction: which entries survive ([`stream`]) and which files to compact ([`picker`]).

pub(crate) mod picker;
pub(crate) mod stream;
