#![no_main]
//! Fuzz target `commands`: command lines run on a server state in this process; see
//! `strata_server::fuzz_api`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_server::fuzz_api::commands(data));
