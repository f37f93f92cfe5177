//! Small shared pieces: integer coding, checksums and the bytewise key order.

pub mod checksum;
pub mod coding;
pub mod compare;
pub mod cpu;
pub(crate) mod cpu_caches;
pub(crate) mod grow_buf;
pub(crate) mod heap;
pub mod kill_point;
pub(crate) mod page_buf;
pub(crate) mod prefetch;
pub(crate) mod spare_bufs;
pub(crate) mod thread_index;
