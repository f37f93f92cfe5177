//! Compaction: which entries survive ([`stream`]), which files to compact ([`picker`], a pure
//! function) and running a plan ([`job`]).

pub(crate) mod job;
pub(crate) mod picker;
pub(crate) mod stream;
