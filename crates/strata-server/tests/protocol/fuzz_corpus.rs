//! Replays the committed fuzz corpora of the server's decoders: `resp_parser`
//! (fuzz/corpus/resp_parser) through the request parser (no input panics, and every command
//! parsed consumes a non-empty prefix), and `rdb_payload` (fuzz/corpus/rdb_payload) through
//! RESTORE's decoder, each file whole and cut and flipped (no panic; what decodes writes and
//! decodes again).

use strata_server::resp::{parse_command, ParseOutcome};

#[test]
fn resp_parser_corpus_replays() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/resp_parser");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        let mut pos = 0;
        while pos < data.len() {
            match parse_command(&data[pos..], 1 << 20) {
                Ok(ParseOutcome::Command(_, used)) => {
                    assert!(used > 0);
                    pos += used;
                }
                _ => break,
            }
        }
        n += 1;
    }
    assert!(n >= 4, "corpus at {} has {n} files", dir.display());
}

#[test]
fn rdb_payload_corpus_replays() {
    use strata_server::types::rdb::{self, reader, Encodings};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/rdb_payload");
    let mut decoded = 0;
    let mut files = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        files += 1;
        let mut inputs = vec![data.clone()];
        inputs.extend((0..data.len()).step_by(7).map(|cut| data[..cut].to_vec()));
        inputs.extend((0..data.len()).step_by(5).map(|i| {
            let mut d = data.clone();
            d[i] ^= 0x5a;
            d
        }));
        for input in inputs {
            if let Ok(v) = reader::decode(&input) {
                decoded += 1;
                let again = rdb::encode_payload(&v, &Encodings::default());
                assert!(rdb::decode_payload(&again).is_ok());
            }
            let _ = rdb::decode_payload(&input);
            let _ = reader::decode_functions(&input);
        }
    }
    assert!(
        files >= 10 && decoded >= 10,
        "corpus at {}: {files} files, {decoded} decoded",
        dir.display()
    );
}
