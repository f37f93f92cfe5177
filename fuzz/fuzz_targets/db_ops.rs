#![no_main]
//! Fuzz target `db_ops`: see `strata_testkit::fuzz::db_ops`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::db_ops(data));
