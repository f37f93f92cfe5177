//! Column families: creation, options, drops, cross-family batches and WAL retention,
//! per-family stats, and a randomized model test of families. One module per behaviour
//! (`tests/README.md`).

mod column_families;
mod column_family_model;
mod per_family_stats;
mod snapshot_reads_off;
