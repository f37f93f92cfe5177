//! Files in and out of a DB: external file ingestion, checkpoints, backups, live files and
//! sizes, direct I/O, where tables are placed (`db_paths`, `cf_paths`), how tables are written
//! (`bytes_per_sync`, rate limits), and TTL DBs. One module per behaviour (`tests/README.md`).

#[path = "../common/compaction_gate.rs"]
mod compaction_gate;
#[path = "../common/forward_fs.rs"]
mod forward_fs;

mod backup;
mod blob_at_commit;
mod blob_at_commit_updates;
mod blob_files;
mod checkpoint;
mod direct_io;
mod file_checksums;
mod ingest_crash;
mod ingest_during_compaction;
mod ingest_external_file;
mod live_files_and_sizes;
mod mapped_reads;
mod table_paths;
mod table_write_io;
mod ttl;
