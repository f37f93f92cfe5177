#![no_main]
//! Fuzz target `rdb_file`: the reader of whole RDB files (a replica's full sync, REPLICAOF)
//! never panics, hangs or allocates what the input does not hold; the checks are
//! `strata_server::fuzz_api::rdb_file`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_server::fuzz_api::rdb_file(data);
});
