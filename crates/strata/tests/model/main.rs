//! Randomized model tests: random workloads checked step by step against a `BTreeMap` model
//! (the DB state machine with random options, compactions in every style, compaction filters
//! under snapshots, external file ingestion). One module per workload (`tests/README.md`).

mod blob_model;
mod compaction_filter_model;
mod compaction_model;
mod ingest_model;
mod key_order_model;
mod model_state_machine;
