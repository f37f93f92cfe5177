//! Replays the committed `resp_parser` fuzz corpus (fuzz/corpus/resp_parser) through the
//! parser: no input panics, and every command parsed consumes a non-empty prefix.

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
