#![no_main]
//! Fuzz target `manifest`: see `strata_testkit::fuzz::manifest`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::manifest(data));
