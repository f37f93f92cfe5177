#![no_main]
//! Fuzz target `db_blobs`: see `strata_testkit::fuzz::db_blobs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::db_blobs(data));
