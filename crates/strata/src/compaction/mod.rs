//! Compaction: which entries survive ([`stream`]), which files to compact ([`picker`], a pure
//! function), running a plan ([`job`]) and where its output files end ([`cut`]).

pub(crate) mod cut;
pub(crate) mod job;
pub(crate) mod picker;
pub(crate) mod stream;
