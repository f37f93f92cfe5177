#![no_main]
//! Fuzz target `table`: see `strata_testkit::fuzz::table`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::table(data));
