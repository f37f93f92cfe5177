#![no_main]
//! Fuzz target `rdb_payload`: RESTORE's decoder of Redis's serialized values never panics,
//! hangs or allocates what the input does not hold. The input is tried as an object body (the
//! checksum would stop almost every input before the body decoder), as a whole payload, and
//! as a FUNCTION RESTORE body; a body that decodes is written again and must decode again.

use libfuzzer_sys::fuzz_target;
use strata_server::types::rdb::{self, reader, Encodings};

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = reader::decode(data) {
        let again = rdb::encode_payload(&v, &Encodings::default());
        assert!(rdb::decode_payload(&again).is_ok());
    }
    let _ = rdb::decode_payload(data);
    let _ = reader::decode_functions(data);
});
