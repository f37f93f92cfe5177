#![no_main]
//! Fuzz target `wal_reader`: see `strata_testkit::fuzz::wal_reader`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::wal_reader(data));
