#![no_main]
//! Fuzz target `version_edit`: see `strata_testkit::fuzz::version_edit`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_testkit::fuzz::version_edit(data));
