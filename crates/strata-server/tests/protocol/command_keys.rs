//! COMMAND GETKEYS and COMMAND INFO's key positions: what cluster clients route by
//! (redis-py asks COMMAND at start and GETKEYS for commands whose keys it cannot place),
//! LMPOP's counted keys, XREAD's keys after STREAMS, and the destinations options name
//! (SORT's and GEORADIUS's STORE) among them.

use crate::common::{Reply, Server};

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn keys(ks: &[&str]) -> Reply {
    Reply::Array(ks.iter().map(|k| Reply::bulk(k)).collect())
}

#[test]
fn getkeys_gives_each_commands_keys() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let getkeys = |c: &mut crate::common::Raw, line: &[&str]| {
        let mut a = vec!["COMMAND", "GETKEYS"];
        a.extend_from_slice(line);
        c.cmd(&a)
    };
    assert_eq!(getkeys(&mut c, &["GET", "a"]), keys(&["a"]));
    assert_eq!(getkeys(&mut c, &["set", "a", "1", "EX", "10"]), keys(&["a"]));
    assert_eq!(getkeys(&mut c, &["MSET", "a", "1", "b", "2", "c", "3"]), keys(&["a", "b", "c"]));
    assert_eq!(getkeys(&mut c, &["MGET", "a", "b"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["DEL", "a", "b", "c"]), keys(&["a", "b", "c"]));
    assert_eq!(getkeys(&mut c, &["RENAME", "a", "b"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["HSET", "h", "f", "v"]), keys(&["h"]));
    assert_eq!(getkeys(&mut c, &["OBJECT", "ENCODING", "k"]), keys(&["k"]));
    assert_eq!(getkeys(&mut c, &["LMOVE", "a", "b", "LEFT", "RIGHT"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["RPOPLPUSH", "a", "b"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["LCS", "a", "b", "IDX"]), keys(&["a", "b"]));
    // LMPOP's keys are counted by its numkeys argument.
    assert_eq!(getkeys(&mut c, &["LMPOP", "2", "a", "b", "LEFT"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["LMPOP", "1", "a", "LEFT", "COUNT", "2"]), keys(&["a"]));
    let invalid = err("ERR Invalid arguments specified for command");
    assert_eq!(getkeys(&mut c, &["LMPOP", "0", "a", "LEFT"]), invalid);
    assert_eq!(getkeys(&mut c, &["LMPOP", "x", "a", "LEFT"]), invalid);
    assert_eq!(getkeys(&mut c, &["LMPOP", "3", "a", "LEFT"]), invalid);
    // XREAD's keys: the first half of what follows STREAMS (XREADGROUP's after GROUP g c).
    let xread = ["XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0"];
    assert_eq!(getkeys(&mut c, &xread), keys(&["a", "b"]));
    let xreadgroup = ["XREADGROUP", "GROUP", "streams", "c", "STREAMS", "a", ">"];
    assert_eq!(getkeys(&mut c, &xreadgroup), keys(&["a"]));
    assert_eq!(getkeys(&mut c, &["XREAD", "COUNT", "1", "X", "0"]), invalid);
    assert_eq!(getkeys(&mut c, &["XGROUP", "CREATE", "k", "g", "$"]), keys(&["k"]));
    // A destination before counted sources (redis-server's answers).
    assert_eq!(getkeys(&mut c, &["ZUNIONSTORE", "d", "2", "a", "b"]), keys(&["d", "a", "b"]));
    let zinter = ["ZINTERSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"];
    assert_eq!(getkeys(&mut c, &zinter), keys(&["d", "a", "b"]));
    assert_eq!(getkeys(&mut c, &["ZDIFFSTORE", "d", "1", "a"]), keys(&["d", "a"]));
    assert_eq!(getkeys(&mut c, &["ZUNIONSTORE", "d", "3", "a", "b"]), invalid);
    // Destinations options name: SORT's last STORE that is no argument of LIMIT, GET or BY.
    assert_eq!(getkeys(&mut c, &["SORT", "s", "STORE", "d"]), keys(&["s", "d"]));
    let sort = ["SORT", "s", "BY", "store", "GET", "store", "LIMIT", "0", "1", "store", "d"];
    assert_eq!(getkeys(&mut c, &sort), keys(&["s", "d"]));
    assert_eq!(getkeys(&mut c, &["SORT", "s", "STORE", "d", "STORE", "e"]), keys(&["s", "e"]));
    assert_eq!(getkeys(&mut c, &["SORT", "s", "STORE"]), keys(&["s"]));
    assert_eq!(getkeys(&mut c, &["SORT_RO", "s", "ALPHA"]), keys(&["s"]));
    // GEORADIUS: each STORE and STOREDIST value (the last one given is written; redis-server
    // names each keyword's first only, the same keys unless one repeats).
    let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g", "d"]));
    let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "COUNT", "2", "STOREDIST", "d"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g", "d"]));
    let geo = ["GEORADIUSBYMEMBER", "g", "m", "1", "km", "STORE", "d", "STOREDIST", "e"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g", "d", "e"]));
    let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d", "STORE", "e"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g", "d", "e"]));
    let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "store", "COUNT", "1"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g", "store"]));
    let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "STORE"];
    assert_eq!(getkeys(&mut c, &geo), keys(&["g"]));
    // A script's keys are counted, and it may have none: then none, whatever the count says
    // (redis-server's answers).
    assert_eq!(getkeys(&mut c, &["EVAL", "s", "2", "a", "b", "x"]), keys(&["a", "b"]));
    assert_eq!(getkeys(&mut c, &["EVAL", "s", "0"]), keys(&[]));
    assert_eq!(getkeys(&mut c, &["FCALL", "f", "0", "x"]), keys(&[]));
    assert_eq!(getkeys(&mut c, &["EVAL", "s", "3", "a"]), keys(&[]));
    assert_eq!(getkeys(&mut c, &["EVAL", "s", "x"]), keys(&[]));
    assert_eq!(getkeys(&mut c, &["PING", "x"]), err("ERR The command has no key arguments"));
    assert_eq!(getkeys(&mut c, &["NOSUCH", "a"]), err("ERR Invalid command specified"));
    assert_eq!(
        getkeys(&mut c, &["GET", "a", "b"]),
        err("ERR Invalid number of arguments specified for command")
    );
    // Fewer than four arguments: COMMAND GETKEYS's own arity (`command|getkeys`, -4).
    for short in [&[][..], &["PING"], &["GET"]] {
        assert_eq!(
            getkeys(&mut c, short),
            err("ERR wrong number of arguments for 'command|getkeys' command")
        );
    }
}

#[test]
fn command_info_reports_first_last_and_step() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let spec = |c: &mut crate::common::Raw, name: &str| {
        let info = command_info(c, name);
        (info[3].clone(), info[4].clone(), info[5].clone())
    };
    assert_eq!(spec(&mut c, "get"), (Reply::Int(1), Reply::Int(1), Reply::Int(1)));
    assert_eq!(spec(&mut c, "mset"), (Reply::Int(1), Reply::Int(-1), Reply::Int(2)));
    assert_eq!(spec(&mut c, "del"), (Reply::Int(1), Reply::Int(-1), Reply::Int(1)));
    assert_eq!(spec(&mut c, "rename"), (Reply::Int(1), Reply::Int(2), Reply::Int(1)));
    // A container's keys are its subcommands' (regression: OBJECT reported 2 2 1).
    assert_eq!(spec(&mut c, "object"), (Reply::Int(0), Reply::Int(0), Reply::Int(0)));
    assert_eq!(spec(&mut c, "object|encoding"), (Reply::Int(2), Reply::Int(2), Reply::Int(1)));
    assert_eq!(spec(&mut c, "ping"), (Reply::Int(0), Reply::Int(0), Reply::Int(0)));
    assert_eq!(spec(&mut c, "lmove"), (Reply::Int(1), Reply::Int(2), Reply::Int(1)));
    assert_eq!(spec(&mut c, "rpoplpush"), (Reply::Int(1), Reply::Int(2), Reply::Int(1)));
    assert_eq!(spec(&mut c, "lcs"), (Reply::Int(1), Reply::Int(2), Reply::Int(1)));
    // Keys counted by an argument: no (first, last, step), and the movablekeys flag.
    assert_eq!(spec(&mut c, "lmpop"), (Reply::Int(0), Reply::Int(0), Reply::Int(0)));
    let flags = |c: &mut crate::common::Raw, name: &str| {
        let info = command_info(c, name);
        (info[1].clone(), info[2].clone())
    };
    assert_eq!(flags(&mut c, "lmpop"), (Reply::Int(-4), simples(&["write", "movablekeys"])));
    // A fixed key before the moving ones: the triple names it, as redis-server's does.
    for name in ["zunionstore", "sort", "georadius", "georadiusbymember"] {
        assert_eq!(spec(&mut c, name), (Reply::Int(1), Reply::Int(1), Reply::Int(1)), "{name}");
        assert_eq!(flags(&mut c, name).1, simples(&["write", "denyoom", "movablekeys"]), "{name}");
    }
}

/// COMMAND INFO's entry of command `name`.
fn command_info(c: &mut crate::common::Raw, name: &str) -> Vec<Reply> {
    match c.cmd(&["COMMAND", "INFO", name]) {
        Reply::Array(mut v) => match v.remove(0) {
            Reply::Array(info) => info,
            other => panic!("{name}: {other:?}"),
        },
        other => panic!("{name}: {other:?}"),
    }
}

fn simples(words: &[&str]) -> Reply {
    Reply::Array(words.iter().map(|w| Reply::Simple((*w).into())).collect())
}

/// COMMAND INFO's flags and ACL categories, redis-server 7.0's: redis-py's cluster client
/// takes a PUBLISH's channel for its key by the `pubsub` flag (without it, it cannot route
/// the command at all), go-redis tells reads (`readonly`) from writes.
#[test]
fn command_info_gives_redis_flags_and_categories() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let info = |c: &mut crate::common::Raw, name: &str| {
        let info = command_info(c, name);
        (info[2].clone(), info[6].clone())
    };
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("get", &["readonly", "fast"], &["@read", "@string", "@fast"]),
        ("hset", &["write", "denyoom", "fast"], &["@write", "@hash", "@fast"]),
        ("publish", &["pubsub", "loading", "stale", "fast"], &["@pubsub", "@fast"]),
        ("spublish", &["pubsub", "loading", "stale", "fast"], &["@pubsub", "@fast"]),
        ("subscribe", &["pubsub", "noscript", "loading", "stale"], &["@pubsub", "@slow"]),
        ("blpop", &["write", "noscript", "blocking"], &["@write", "@list", "@slow", "@blocking"]),
        (
            "eval_ro",
            &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            &["@slow", "@scripting"],
        ),
        (
            "sort",
            &["write", "denyoom", "movablekeys"],
            &["@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"],
        ),
        (
            "save",
            &["admin", "noscript", "no_async_loading", "no_multi"],
            &["@admin", "@slow", "@dangerous"],
        ),
        ("config", &[], &["@slow"]),
    ];
    for (name, flags, cats) in cases {
        assert_eq!(info(&mut c, name), (simples(flags), simples(cats)), "{name}");
    }
}

#[test]
fn command_list_filters_by_category_and_pattern() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut list = |a: &[&str]| {
        let mut line = vec!["COMMAND", "LIST"];
        line.extend_from_slice(a);
        match c.cmd(&line) {
            Reply::Array(v) => {
                let mut names: Vec<String> = v
                    .into_iter()
                    .map(|r| match r {
                        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
                        other => panic!("{other:?}"),
                    })
                    .collect();
                names.sort();
                Ok(names)
            }
            other => Err(other),
        }
    };
    let hll = ["pfadd", "pfcount", "pfdebug", "pfmerge", "pfselftest"];
    assert_eq!(list(&["FILTERBY", "ACLCAT", "hyperloglog"]).unwrap(), hll);
    assert_eq!(list(&["filterby", "aclcat", "HyperLogLog"]).unwrap(), hll);
    assert_eq!(list(&["FILTERBY", "PATTERN", "XA*"]).unwrap(), ["xack", "xadd", "xautoclaim"]);
    assert_eq!(list(&["FILTERBY", "ACLCAT", "nosuch"]).unwrap(), Vec::<String>::new());
    assert_eq!(list(&["FILTERBY", "MODULE", "m"]).unwrap(), Vec::<String>::new());
    let syntax = Reply::Error("ERR syntax error".into());
    assert_eq!(list(&["FILTERBY", "FOO", "x"]), Err(syntax.clone()));
    assert_eq!(list(&["FILTERBY"]), Err(syntax.clone()));
    assert_eq!(list(&["FILTERBY", "ACLCAT"]), Err(syntax));
    assert!(list(&[]).unwrap().len() > 200);
}

/// Subcommands as Redis 7.0 reports them: COMMAND LIST names them beside the commands and its
/// filters select them by their own categories and full names; COMMAND INFO lists a
/// container's and answers for `container|sub`; COMMAND COUNT counts commands only.
#[test]
fn command_list_and_info_report_subcommands() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut list = |a: &[&str]| -> Vec<String> {
        let mut line = vec!["COMMAND", "LIST"];
        line.extend_from_slice(a);
        match c.cmd(&line) {
            Reply::Array(v) => v
                .into_iter()
                .map(|r| match r {
                    Reply::Bulk(b) => String::from_utf8(b).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("COMMAND LIST {a:?}: {other:?}"),
        }
    };
    let all = list(&[]);
    for name in ["set", "client|list", "client|kill", "config|get", "object|encoding"] {
        assert!(all.iter().any(|n| n == name), "{name}");
    }
    let scripting = list(&["FILTERBY", "ACLCAT", "scripting"]);
    assert!(scripting.iter().any(|n| n == "eval") && scripting.iter().any(|n| n == "script|kill"));
    assert!(!scripting.iter().any(|n| n == "set"));
    assert_eq!(list(&["FILTERBY", "PATTERN", "set"]), ["set"]);
    let config = list(&["FILTERBY", "PATTERN", "config*"]);
    assert!(config.iter().any(|n| n == "config") && config.iter().any(|n| n == "config|get"));
    let mut re = list(&["FILTERBY", "PATTERN", "config|*re*"]);
    re.sort();
    assert_eq!(re, ["config|resetstat", "config|rewrite"]);

    let count = match c.cmd(&["COMMAND", "COUNT"]) {
        Reply::Int(n) => n as usize,
        other => panic!("{other:?}"),
    };
    assert_eq!(count + strata_server::commands::subcommands::TABLE.len(), all.len());

    let entry = |r: Reply| match r {
        Reply::Array(mut v) if v.len() == 1 => v.remove(0),
        other => panic!("{other:?}"),
    };
    let Reply::Array(config) = entry(c.cmd(&["COMMAND", "INFO", "config"])) else { panic!() };
    let Reply::Array(subs) = &config[9] else { panic!("{:?}", config[9]) };
    let names: Vec<&Reply> = subs
        .iter()
        .map(|s| match s {
            Reply::Array(e) => &e[0],
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        names.contains(&&Reply::bulk("config|get")) && names.contains(&&Reply::bulk("config|set"))
    );
    let Reply::Array(get) = entry(c.cmd(&["COMMAND", "INFO", "CONFIG|GET"])) else { panic!() };
    assert_eq!(get[0], Reply::bulk("config|get"));
    assert_eq!(get[1], Reply::Int(-3));
    assert_eq!(get[2], simples(&["admin", "noscript", "loading", "stale"]));
    let Reply::Array(enc) = entry(c.cmd(&["COMMAND", "INFO", "object|encoding"])) else { panic!() };
    assert_eq!(enc[3..6], [Reply::Int(2), Reply::Int(2), Reply::Int(1)], "its key after the sub");
    for bad in ["get|key", "config|get|key", "config|nosuch"] {
        assert_eq!(entry(c.cmd(&["COMMAND", "INFO", bad])), Reply::Null, "{bad}");
    }
}

/// Every subcommand COMMAND names is one the server answers: called with as many arguments as
/// its arity asks, none is refused as an unknown subcommand.
#[test]
fn every_listed_subcommand_is_served() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for &(name, arity, ..) in strata_server::commands::subcommands::TABLE {
        let (container, sub) = name.split_once('|').unwrap();
        let mut line = vec![container, sub];
        let extra = arity.unsigned_abs() as usize - 2;
        line.extend(std::iter::repeat_n("x", extra));
        if let Reply::Error(e) = c.cmd(&line) {
            assert!(!e.to_ascii_lowercase().contains("unknown subcommand"), "{name}: {e}");
        }
    }
}

#[test]
fn getkeysandflags_gives_each_key_its_flags() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let flagged = |c: &mut crate::common::Raw, line: &[&str]| {
        let mut a = vec!["COMMAND", "GETKEYSANDFLAGS"];
        a.extend_from_slice(line);
        c.cmd(&a)
    };
    let key = |k: &str, flags: &[&str]| {
        let flags = flags.iter().map(|f| Reply::Simple((*f).into())).collect();
        Reply::Array(vec![Reply::bulk(k), Reply::Array(flags)])
    };
    assert_eq!(
        flagged(&mut c, &["LMOVE", "a", "b", "LEFT", "RIGHT"]),
        Reply::Array(vec![key("a", &["RW", "access", "delete"]), key("b", &["RW", "insert"])])
    );
    assert_eq!(
        flagged(&mut c, &["ZUNIONSTORE", "d", "2", "a", "b"]),
        Reply::Array(vec![
            key("d", &["OW", "update"]),
            key("a", &["RO", "access"]),
            key("b", &["RO", "access"])
        ])
    );
    assert_eq!(
        flagged(&mut c, &["SET", "k", "v"]),
        Reply::Array(vec![key("k", &["OW", "update"])])
    );
    assert_eq!(
        flagged(&mut c, &["SET", "k", "v", "GET"]),
        Reply::Array(vec![key("k", &["RW", "access", "update"])])
    );
    assert_eq!(flagged(&mut c, &["EXISTS", "k"]), Reply::Array(vec![key("k", &["RO"])]));
    assert_eq!(
        flagged(&mut c, &["OBJECT", "ENCODING", "k"]),
        Reply::Array(vec![key("k", &["RO"])])
    );
    assert_eq!(
        flagged(&mut c, &["SORT", "k", "BY", "w*", "STORE", "d"]),
        Reply::Array(vec![key("k", &["RO", "access"]), key("d", &["OW", "update"])])
    );
    assert_eq!(flagged(&mut c, &["PING", "x"]), err("ERR The command has no key arguments"));
    assert_eq!(flagged(&mut c, &["NOSUCH", "k"]), err("ERR Invalid command specified"));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYSANDFLAGS"]),
        err("ERR wrong number of arguments for 'command|getkeysandflags' command")
    );
}

/// COMMAND INFO's tips and key specifications, as redis-server 7.0.15 gives them (they were
/// empty): DBSIZE's routing tips, ZUNIONSTORE's two specs (its destination by index, its
/// sources by a count), SORT's pattern spec that no index can name.
#[test]
fn command_info_reports_tips_and_key_specs() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let info = command_info;
    let dbsize = info(&mut c, "dbsize");
    let tips = simples(&["request_policy:all_shards", "response_policy:agg_sum"]);
    assert_eq!(dbsize[7], tips);
    assert_eq!(dbsize[8], Reply::Array(vec![]));
    let b = Reply::bulk;
    let map = |pairs: Vec<Reply>| Reply::Array(pairs);
    let specs = info(&mut c, "zunionstore")[8].clone();
    let want = Reply::Array(vec![
        map(vec![
            b("flags"),
            simples(&["OW", "update"]),
            b("begin_search"),
            map(vec![b("type"), b("index"), b("spec"), map(vec![b("index"), Reply::Int(1)])]),
            b("find_keys"),
            map(vec![
                b("type"),
                b("range"),
                b("spec"),
                map(vec![
                    b("lastkey"),
                    Reply::Int(0),
                    b("keystep"),
                    Reply::Int(1),
                    b("limit"),
                    Reply::Int(0),
                ]),
            ]),
        ]),
        map(vec![
            b("flags"),
            simples(&["RO", "access"]),
            b("begin_search"),
            map(vec![b("type"), b("index"), b("spec"), map(vec![b("index"), Reply::Int(2)])]),
            b("find_keys"),
            map(vec![
                b("type"),
                b("keynum"),
                b("spec"),
                map(vec![
                    b("keynumidx"),
                    Reply::Int(0),
                    b("firstkey"),
                    Reply::Int(1),
                    b("keystep"),
                    Reply::Int(1),
                ]),
            ]),
        ]),
    ]);
    assert_eq!(specs, want);
    let Reply::Array(sort) = info(&mut c, "sort")[8].clone() else { panic!() };
    let unknown = map(vec![b("type"), b("unknown"), b("spec"), map(vec![])]);
    assert_eq!(sort.len(), 3);
    let Reply::Array(pattern) = &sort[1] else { panic!() };
    assert_eq!((&pattern[3], &pattern[5]), (&unknown, &unknown));
}
