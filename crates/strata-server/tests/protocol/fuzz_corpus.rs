//! Replays the committed fuzz corpora of the server's decoders: `resp_parser`
//! (fuzz/corpus/resp_parser) through the request parser (no input panics, and every command
//! parsed consumes a non-empty prefix), and `rdb_payload` (fuzz/corpus/rdb_payload) through
//! RESTORE's decoder, each file whole and cut and flipped (no panic; what decodes writes and
//! decodes again), and `rdb_file` (fuzz/corpus/rdb_file) through the RDB file reader.

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

fn commands_corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/commands")
}

/// `commands` (fuzz/corpus/commands): every file's command lines on a fresh server, whole and
/// cut short at a few places; every command answers and nothing panics.
#[test]
fn commands_corpus_replays() {
    use strata_server::fuzz_api::{command_lines, commands};
    let mut lines = 0;
    let mut files = 0;
    for e in std::fs::read_dir(commands_corpus()).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        files += 1;
        lines += command_lines(&data).len();
        commands(&data);
        for cut in [data.len() / 3, data.len() / 2, data.len() * 3 / 4] {
            commands(&data[..cut]);
        }
    }
    assert!(files >= 10 && lines >= 100, "corpus: {files} files, {lines} command lines");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 24, failure_persistence: None, ..Default::default()
    })]
    /// Random bytes as `commands` input.
    #[test]
    fn commands_on_random_bytes(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        strata_server::fuzz_api::commands(&data);
    }
}

/// Writes the `commands` seed corpus: `cargo test -p strata-server --test protocol
/// write_commands_seeds -- --ignored`.
#[test]
#[ignore = "writes the seed corpus into fuzz/corpus/commands"]
fn write_commands_seeds() {
    use strata_server::fuzz_api::encode_lines;
    let dir = commands_corpus();
    std::fs::create_dir_all(&dir).unwrap();
    let seeds: &[(&str, &[&[&str]])] = &[
        (
            "strings",
            &[
                &["set", "k0", "1", "EX", "100"],
                &["set", "k0", "2", "KEEPTTL", "GET"],
                &["incrbyfloat", "k0", "1.5"],
                &["getrange", "k0", "-1", "100"],
                &["setrange", "k1", "10", "abc"],
                &["getex", "k1", "PERSIST"],
                &["append", "k1", "x"],
                &["lcs", "k0", "k1", "IDX", "MINMATCHLEN", "1", "WITHMATCHLEN"],
                &["msetnx", "k2", "a", "k3", "b"],
                &["incrby", "k2", "9223372036854775807"],
                &["decrby", "k0", "-9223372036854775808"],
                &["strlen", "k1"],
                &["getdel", "k1"],
            ],
        ),
        (
            "bits",
            &[
                &["setbit", "k0", "100", "1"],
                &["bitcount", "k0", "0", "-1", "BIT"],
                &["bitpos", "k0", "1", "2", "-1"],
                &["bitop", "NOT", "k1", "k0"],
                &["bitfield", "k0", "SET", "i5", "100", "-1", "GET", "u63", "#1"],
                &["bitfield", "k0", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "9223372036854775807"],
                &["bitfield_ro", "k0", "GET", "u8", "4294967295"],
                &["getbit", "k0", "4294967296"],
            ],
        ),
        (
            "lists",
            &[
                &["rpush", "k0", "a", "b", "c", "a"],
                &["linsert", "k0", "BEFORE", "b", "x"],
                &["lpos", "k0", "a", "RANK", "-1", "COUNT", "0", "MAXLEN", "2"],
                &["lrem", "k0", "-1", "a"],
                &["ltrim", "k0", "1", "-1"],
                &["lset", "k0", "-1", "z"],
                &["lmove", "k0", "k1", "LEFT", "RIGHT"],
                &["lmpop", "2", "k0", "k1", "RIGHT", "COUNT", "10"],
                &["blpop", "k2", "0"],
                &["blmove", "k2", "k3", "LEFT", "LEFT", "0.0"],
                &["lrange", "k1", "-9223372036854775808", "9223372036854775807"],
            ],
        ),
        (
            "hashes",
            &[
                &["hset", "k0", "f", "1", "g", "2"],
                &["hincrbyfloat", "k0", "f", "1e308"],
                &["hincrbyfloat", "k0", "f", "1e308"],
                &["hrandfield", "k0", "-5", "WITHVALUES"],
                &["hsetnx", "k0", "g", "3"],
                &["hstrlen", "k0", "g"],
                &["hscan", "k0", "0", "MATCH", "*"],
                &["hincrby", "k0", "g", "9223372036854775807"],
                &["hgetall", "k0"],
            ],
        ),
        (
            "sets",
            &[
                &["sadd", "k0", "a", "b", "1", "2"],
                &["sadd", "k1", "b", "c"],
                &["sinterstore", "k2", "k0", "k1"],
                &["sdiff", "k0", "k1", "k3"],
                &["sintercard", "2", "k0", "k1", "LIMIT", "1"],
                &["smove", "k0", "k1", "a"],
                &["srandmember", "k0", "-9223372036854775808"],
                &["spop", "k0", "3"],
                &["sscan", "k1", "0", "COUNT", "1"],
                &["smismember", "k1", "a", "c"],
            ],
        ),
        (
            "zsets",
            &[
                &["zadd", "k0", "1", "a", "2", "b", "+inf", "c"],
                &["zadd", "k0", "GT", "CH", "INCR", "1", "a"],
                &["zrange", "k0", "(1", "+inf", "BYSCORE", "LIMIT", "0", "10"],
                &["zrange", "k0", "[a", "+", "BYLEX", "REV", "LIMIT", "-1", "-1"],
                &["zrangestore", "k1", "k0", "0", "-1"],
                &["zunionstore", "k2", "2", "k0", "k1", "WEIGHTS", "nan", "1"],
                &["zinter", "2", "k0", "k1", "AGGREGATE", "MAX", "WITHSCORES"],
                &["zremrangebylex", "k0", "-", "(b"],
                &["zrandmember", "k0", "-3", "WITHSCORES"],
                &["zincrby", "k0", "-inf", "c"],
                &["zmpop", "1", "k0", "MIN", "COUNT", "2"],
                &["bzpopmax", "k3", "0"],
                &["zscan", "k0", "0"],
                &["zmscore", "k0", "a", "z"],
            ],
        ),
        (
            "streams",
            &[
                &["xadd", "k0", "*", "f", "v"],
                &["xadd", "k0", "MAXLEN", "1", "*", "f", "v"],
                &["xadd", "k0", "18446744073709551615-18446744073709551615", "f", "v"],
                &["xgroup", "CREATE", "k0", "g", "0", "MKSTREAM"],
                &["xreadgroup", "GROUP", "g", "c", "STREAMS", "k0", ">"],
                &["xpending", "k0", "g", "-", "+", "10"],
                &["xautoclaim", "k0", "g", "c", "0", "0-0"],
                &["xclaim", "k0", "g", "c", "0", "0-0", "FORCE"],
                &["xinfo", "STREAM", "k0", "FULL"],
                &["xtrim", "k0", "MINID", "0-0"],
                &["xrange", "k0", "-", "+", "COUNT", "1"],
                &["xread", "COUNT", "1", "BLOCK", "0", "STREAMS", "k1", "$"],
                &["xsetid", "k0", "1-1"],
            ],
        ),
        (
            "keys",
            &[
                &["set", "k0", "v"],
                &["expire", "k0", "100", "NX"],
                &["pexpiretime", "k0"],
                &["copy", "k0", "k1", "DB", "3", "REPLACE"],
                &["move", "k0", "2"],
                &["select", "2"],
                &["swapdb", "0", "2"],
                &["rename", "k0", "k3"],
                &["object", "ENCODING", "k3"],
                &["dump", "k3"],
                &["touch", "k3", "k0"],
                &["scan", "0", "TYPE", "string"],
                &["keys", "[a-z]*"],
                &["randomkey"],
                &["dbsize"],
                &["flushdb", "ASYNC"],
                &["expiretime", "k3"],
            ],
        ),
        (
            "dump-restore",
            &[
                &["rpush", "k0", "a", "b"],
                &["restore", "k1", "0", "\x00\x05hello\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00"],
                &["restore", "k2", "0", "\x0e\x01", "REPLACE", "ABSTTL", "IDLETIME", "5"],
                &["restore", "k0", "-1", "", "REPLACE"],
                &["sort", "k0", "ALPHA", "DESC", "LIMIT", "0", "1", "STORE", "k3"],
                &["sort", "k0", "BY", "k*", "GET", "#"],
                &["sort_ro", "k0"],
            ],
        ),
        (
            "multi",
            &[
                &["watch", "k0"],
                &["multi"],
                &["set", "k0", "1"],
                &["incr", "k0"],
                &["blpop", "k1", "0"],
                &["exec"],
                &["multi"],
                &["set"],
                &["exec"],
                &["discard"],
                &["unwatch"],
            ],
        ),
        (
            "scripting",
            &[
                &["eval", "return redis.call('get', KEYS[1])", "1", "k0"],
                &["eval", "return redis.pcall('incr', KEYS[1])", "1", "k0"],
                &["script", "LOAD", "return 1"],
                &["evalsha", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"],
                &[
                    "function",
                    "LOAD",
                    "#!lua name=lib\nredis.register_function('f', function(k, a) return #k end)",
                ],
                &["fcall", "f", "1", "k0"],
                &["function", "DUMP"],
                &["function", "FLUSH", "SYNC"],
                &["script", "FLUSH"],
                &["eval", "return {1,2,{3,'x'},nil}", "0"],
            ],
        ),
        (
            "server",
            &[
                &["hello", "3"],
                &["subscribe", "k0"],
                &["ping"],
                &["unsubscribe"],
                &["psubscribe", "k*"],
                &["publish", "k0", "m"],
                &["pubsub", "NUMPAT"],
                &["reset"],
                &["client", "SETNAME", "x"],
                &["client", "TRACKING", "ON", "BCAST", "PREFIX", "k"],
                &["client", "REPLY", "SKIP"],
                &["get", "k0"],
                &["client", "INFO"],
                &["info", "keyspace"],
                &["config", "GET", "*"],
                &["command", "GETKEYS", "set", "k0", "v"],
                &["latency", "HISTOGRAM"],
                &["slowlog", "GET", "-1"],
                &["memory", "USAGE", "k0"],
                &["object", "FREQ", "k0"],
                &["quit"],
                &["get", "k0"],
            ],
        ),
        (
            "geo-hll",
            &[
                &["geoadd", "k0", "13.361389", "38.115556", "a", "181", "-85.06", "b"],
                &["geosearch", "k0", "FROMLONLAT", "0", "0", "BYRADIUS", "1e308", "km", "WITHDIST"],
                &["geodist", "k0", "a", "a", "mi"],
                &["geohash", "k0", "a", "z"],
                &["pfadd", "k1", "a", "b"],
                &["pfmerge", "k2", "k1", "k0"],
                &["pfcount", "k1", "k2"],
                &["setrange", "k1", "3", "\x00\x00"],
                &["pfcount", "k1"],
            ],
        ),
        (
            "acl",
            &[
                &["acl", "SETUSER", "k0", "ON", "nopass", "~k*", "+@all", "-@write"],
                &["auth", "k0", "x"],
                &["get", "k0"],
                &["set", "k0", "1"],
                &["acl", "DRYRUN", "k0", "set", "k1", "1"],
                &["multi"],
                &["set", "k1", "1"],
                &["exec"],
                &["eval", "return redis.acl_check_cmd('get', 'k1')", "0"],
                &["acl", "SETUSER", "k0", "(~k1", "+set)", "&ch*", "%R~k2"],
                &["set", "k1", "2"],
                &["acl", "GETUSER", "k0"],
                &["acl", "LIST"],
                &["acl", "LOG", "2"],
                &["acl", "CAT", "string"],
                &["acl", "GENPASS", "4"],
                &["reset"],
                &["acl", "DELUSER", "k0"],
                &["acl", "WHOAMI"],
            ],
        ),
    ];
    for (name, lines) in seeds {
        std::fs::write(dir.join(format!("seed-{name}")), encode_lines(lines)).unwrap();
    }
}

/// `rdb_file` (fuzz/corpus/rdb_file, the seeds' RDB files): every file whole, cut short every
/// few bytes and with bytes flipped, through the fuzz target's checks
/// (`strata_server::fuzz_api::rdb_file`).
#[test]
fn rdb_file_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/rdb_file");
    let (mut files, mut read_through) = (0, 0);
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        files += 1;
        let mut inputs = vec![data.clone()];
        inputs.extend((0..data.len()).step_by(211).map(|cut| data[..cut].to_vec()));
        inputs.extend((0..data.len()).step_by(199).map(|i| {
            let mut d = data.clone();
            d[i] ^= 0x5a;
            d
        }));
        for input in inputs {
            read_through += u32::from(strata_server::fuzz_api::rdb_file(&input));
        }
    }
    assert!(
        files >= 2 && read_through >= 2,
        "corpus at {}: {files} files, {read_through} read through",
        dir.display()
    );
}
