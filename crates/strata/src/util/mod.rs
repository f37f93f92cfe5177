//! Small shared pieces: integer coding and checksums.

pub mod checksum;
pub mod coding;
pub mod cpu;
pub mod kill_point;
pub(crate) mod thread_index;
