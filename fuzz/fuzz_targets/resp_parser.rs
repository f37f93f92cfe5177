#![no_main]
//! Fuzz target `resp_parser`: the server's request parser never panics, and parsing the input
//! frame by frame consumes exactly the bytes of whole frames.

use libfuzzer_sys::fuzz_target;
use strata_server::resp::{parse_command, ParseOutcome};

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while pos < data.len() {
        match parse_command(&data[pos..], 1 << 20) {
            Ok(ParseOutcome::Command(_, n)) => {
                assert!(n > 0 && pos + n <= data.len());
                pos += n;
            }
            Ok(ParseOutcome::Incomplete) | Err(_) => break,
        }
    }
});
