#![no_main]
//! Fuzz target `block`: see `strata_testkit::fuzz::block`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::block(data));
