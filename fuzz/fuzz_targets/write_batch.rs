#![no_main]
//! Fuzz target `write_batch`: see `strata_testkit::fuzz::write_batch`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::write_batch(data));
