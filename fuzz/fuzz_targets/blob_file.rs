#![no_main]
//! Fuzz target `blob_file`: see `strata_testkit::fuzz::blob_file`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::blob_file(data));
