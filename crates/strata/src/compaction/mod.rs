//! Compaction: which entries survive ([`stream`]); picking (pure) and running jobs come next.

pub(crate) mod stream;
