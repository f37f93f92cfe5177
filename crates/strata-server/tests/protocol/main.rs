//! The protocol and the connection layer: error replies, AUTH, RESP3, pipelining, concurrent
//! and many connections, databases, pub/sub and keyspace notifications, the parser's fuzz
//! corpus, and
//! the bundled CLI tools against a server. One module per behaviour (`tests/README.md`).

#[path = "../common/mod.rs"]
mod common;

mod acl;
mod auth;
mod blocking;
mod cli_tools;
mod client_kill;
mod client_pause;
mod cluster_client;
mod cluster_map;
mod cluster_mode;
mod cluster_routing;
mod command_keys;
mod concurrency;
mod config_file;
mod databases;
mod errors;
mod failover;
mod fuzz_corpus;
mod introspection;
mod keyspace_events;
mod latency;
mod many_connections;
mod maxmemory;
mod migrate;
mod pipelining;
mod pubsub;
mod replicaof;
mod replication_stream;
mod resp3;
mod scripting;
mod sync_source;
mod tracking;
mod transactions;
mod unix_socket;
