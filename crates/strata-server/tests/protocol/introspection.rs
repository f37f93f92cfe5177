//! INFO's sections (which ones each argument selects, the CPU, command and error
//! statistics) and OBJECT's subcommands (Redis 7.0's encoding names by its conversion rules,
//! REFCOUNT, FREQ's refusal), and MONITOR's lines, as redis-server 7.0.15 gives them.

use std::time::Duration;

use crate::common::{info_field, Raw, Reply, Server};

fn info(c: &mut Raw, args: &[&str]) -> String {
    let mut line = vec!["INFO"];
    line.extend_from_slice(args);
    match c.cmd(&line) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO replied {other:?}"),
    }
}

fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
}

#[test]
fn info_selects_sections_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for args in [&[][..], &["default"], &["all"], &["everything"]] {
        let t = info(&mut c, args);
        for section in ["# Server", "# Clients", "# Memory", "# CPU", "# Stats", "# Keyspace"] {
            assert!(t.contains(section), "{args:?} lacks {section}");
        }
        let every = matches!(args.first(), Some(&"all" | &"everything"));
        assert_eq!(t.contains("# Commandstats"), every, "{args:?}");
    }
    let t = info(&mut c, &["cpu"]);
    assert!(field(&t, "used_cpu_user").is_some() && field(&t, "used_cpu_sys_children").is_some());
    assert!(!t.contains("used_memory"));
    let t = info(&mut c, &["CPU", "sentinel", "commandSTATS"]);
    assert!(t.contains("# CPU") && t.contains("# Commandstats") && !t.contains("# Memory"));
    let t = info(&mut c, &["cpu", "all"]);
    assert_eq!(t.matches("used_cpu_user_children").count(), 1, "a section given twice shows once");
}

#[test]
fn command_and_error_statistics_count_calls_refusals_and_failures() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "s", "v"]);
    c.cmd(&["SET", "s", "w"]);
    c.cmd(&["INCR", "s"]); // fails: not an integer
    c.cmd(&["LPUSH", "s", "x"]); // fails: WRONGTYPE
    c.cmd(&["GET"]); // refused: arity
    c.cmd(&["NOSUCH"]); // refused, no command to count it under
    let t = info(&mut c, &["commandstats"]);
    let set = field(&t, "cmdstat_set").unwrap();
    assert!(set.starts_with("calls=2,usec="), "{set}");
    assert!(set.ends_with("rejected_calls=0,failed_calls=0"), "{set}");
    assert!(field(&t, "cmdstat_incr").unwrap().ends_with("rejected_calls=0,failed_calls=1"));
    let get = field(&t, "cmdstat_get").unwrap();
    assert!(
        get.starts_with("calls=0,") && get.ends_with("rejected_calls=1,failed_calls=0"),
        "{get}"
    );
    let t = info(&mut c, &["errorstats"]);
    assert_eq!(field(&t, "errorstat_ERR"), Some("count=3"));
    assert_eq!(field(&t, "errorstat_WRONGTYPE"), Some("count=1"));
    assert_eq!(field(&info(&mut c, &["stats"]), "total_error_replies"), Some("4"));
}

#[test]
fn object_names_encodings_by_redis_rules() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let enc = |c: &mut Raw, k: &str| c.cmd(&["OBJECT", "ENCODING", k]);
    c.cmd(&["SADD", "ints", "1", "2", "-3"]);
    assert_eq!(enc(&mut c, "ints"), Reply::bulk("intset"));
    c.cmd(&["SADD", "ints", "01"]); // not canonical: not an integer to Redis
    assert_eq!(enc(&mut c, "ints"), Reply::bulk("hashtable"));
    c.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    assert_eq!(enc(&mut c, "z"), Reply::bulk("listpack"));
    c.cmd(&["CONFIG", "SET", "zset-max-ziplist-entries", "1"]);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "zset-max-listpack-entries"]),
        Reply::Array(vec![Reply::bulk("zset-max-listpack-entries"), Reply::bulk("1")])
    );
    assert_eq!(enc(&mut c, "z"), Reply::bulk("skiplist"));
    c.cmd(&["CONFIG", "SET", "zset-max-ziplist-entries", "128", "zset-max-listpack-value", "3"]);
    c.cmd(&["ZADD", "z", "3", "long-member"]);
    assert_eq!(enc(&mut c, "z"), Reply::bulk("skiplist"));
    c.cmd(&["RPUSH", "l", "x"]);
    assert_eq!(enc(&mut c, "l"), Reply::bulk("quicklist"));
    assert_eq!(enc(&mut c, "missing"), Reply::Null);
    assert_eq!(c.cmd(&["OBJECT", "REFCOUNT", "l"]), Reply::Int(1));
    assert_eq!(c.cmd(&["OBJECT", "REFCOUNT", "missing"]), Reply::Null);
    assert!(
        matches!(c.cmd(&["OBJECT", "FREQ", "l"]), Reply::Error(e) if e.starts_with("ERR An LFU maxmemory policy is not selected"))
    );
    assert!(matches!(c.cmd(&["OBJECT", "HELP"]), Reply::Array(lines) if lines.len() > 4));
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING"]),
        Reply::Error("ERR wrong number of arguments for 'object|encoding' command".into())
    );
}

#[test]
fn zrandmember_draws_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    let Reply::Bulk(one) = c.cmd(&["ZRANDMEMBER", "z"]) else { panic!() };
    assert!([&b"a"[..], b"b", b"c"].contains(&one.as_slice()));
    let Reply::Array(all) = c.cmd(&["ZRANDMEMBER", "z", "10", "WITHSCORES"]) else { panic!() };
    assert_eq!(all.len(), 6, "distinct: at most the set, with scores");
    let Reply::Array(drawn) = c.cmd(&["ZRANDMEMBER", "z", "-7"]) else { panic!() };
    assert_eq!(drawn.len(), 7, "a negative count draws with repeats");
    assert_eq!(c.cmd(&["ZRANDMEMBER", "z", "0"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["ZRANDMEMBER", "none", "5"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["ZRANDMEMBER", "none"]), Reply::Null);
    assert_eq!(
        c.cmd(&["ZRANDMEMBER", "z", "-9223372036854770000", "WITHSCORES"]),
        Reply::Error("ERR value is out of range".into())
    );
    assert!(
        matches!(c.cmd(&["ZRANDMEMBER", "z", "-9223372036854775808"]), Reply::Error(e) if e.starts_with("ERR value is out of range"))
    );
    assert!(
        matches!(c.cmd(&["ZRANDMEMBER", "z", "-100000000"]), Reply::Error(e) if e.starts_with("ERR count is too large"))
    );
    assert_eq!(
        c.cmd(&["ZRANDMEMBER", "z", "1", "SCORES"]),
        Reply::Error("ERR syntax error".into())
    );
}

#[test]
fn memory_usage_estimates_a_keys_records() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "s", "value"]);
    let Reply::Int(small) = c.cmd(&["MEMORY", "USAGE", "s"]) else { panic!() };
    assert!(small > 5, "{small}");
    let many: Vec<String> = (0..100).map(|i| format!("element-{i:04}")).collect();
    let mut push = vec!["RPUSH", "l"];
    push.extend(many.iter().map(String::as_str));
    c.cmd(&push);
    let Reply::Int(sampled) = c.cmd(&["MEMORY", "USAGE", "l"]) else { panic!() };
    let Reply::Int(all) = c.cmd(&["MEMORY", "USAGE", "l", "SAMPLES", "0"]) else { panic!() };
    assert!(all > 100 * 12, "every element counted: {all}");
    assert_eq!(sampled, all, "elements of one size: the sample stands for all");
    assert_eq!(c.cmd(&["MEMORY", "USAGE", "missing"]), Reply::Null);
    assert_eq!(
        c.cmd(&["MEMORY", "USAGE", "l", "SAMPLES", "x"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["MEMORY", "USAGE", "l", "FOO", "1"]),
        Reply::Error("ERR syntax error".into())
    );
    assert_eq!(
        c.cmd(&["MEMORY", "NOSUCH"]),
        Reply::Error("ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP.".into())
    );
    assert_eq!(
        c.cmd(&["MEMORY", "DOCTOR", "x"]),
        Reply::Error("ERR wrong number of arguments for 'memory|doctor' command".into())
    );
    assert_eq!(
        c.cmd(&["MEMORY", "HELP", "x"]),
        Reply::Error("ERR wrong number of arguments for 'memory|help' command".into())
    );
}

/// MEMORY STATS, DOCTOR, MALLOC-STATS and PURGE, and INFO memory: Redis 7.0's fields, with
/// figures that follow what the server holds (a script cached, CONFIG SET maxmemory).
#[test]
fn memory_stats_and_info_memory_report_what_the_server_holds() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "k", "v"]);
    let stats = |c: &mut Raw| -> Vec<(String, Reply)> {
        let Reply::Array(a) = c.cmd(&["MEMORY", "STATS"]) else { panic!() };
        a.chunks(2)
            .map(|p| match &p[0] {
                Reply::Bulk(k) => (String::from_utf8(k.clone()).unwrap(), p[1].clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let int = |s: &[(String, Reply)], k: &str| match s.iter().find(|e| e.0 == k) {
        Some((_, Reply::Int(n))) => *n,
        other => panic!("{k}: {other:?}"),
    };
    let before = stats(&mut c);
    let names: Vec<&str> = before.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names.len(), 28, "Redis's 27 fields and db.0: {names:?}");
    assert_eq!(&names[..3], ["peak.allocated", "total.allocated", "startup.allocated"]);
    assert!(names.contains(&"db.0") && names.contains(&"fragmentation.bytes"), "{names:?}");
    assert!(int(&before, "peak.allocated") >= int(&before, "total.allocated"));
    assert!(int(&before, "keys.count") >= 1);
    assert!(int(&before, "clients.normal") > 0, "this connection's buffers");
    let body = "return 'a script of some length, cached by EVAL'";
    c.cmd(&["EVAL", body, "0"]);
    let after = stats(&mut c);
    assert_eq!(int(&after, "lua.caches") - int(&before, "lua.caches"), body.len() as i64);

    let Reply::Bulk(doctor) = c.cmd(&["MEMORY", "DOCTOR"]) else { panic!() };
    assert!(!doctor.is_empty());
    let Reply::Bulk(malloc) = c.cmd(&["MEMORY", "MALLOC-STATS"]) else { panic!() };
    assert!(!malloc.is_empty());
    assert_eq!(c.cmd(&["MEMORY", "PURGE"]), Reply::Simple("OK".into()));

    let t = info(&mut c, &["memory"]);
    let num = |t: &str, k: &str| -> u64 { field(t, k).unwrap().parse().unwrap() };
    assert!(num(&t, "used_memory_peak") >= num(&t, "used_memory"), "{t}");
    assert_eq!(
        num(&t, "used_memory"),
        num(&t, "used_memory_overhead") + num(&t, "used_memory_dataset")
    );
    assert_eq!(field(&t, "maxmemory"), Some("0"));
    assert_eq!(field(&t, "number_of_cached_scripts"), Some("1"));
    c.cmd(&["CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru"]);
    let t = info(&mut c, &["memory"]);
    assert_eq!(field(&t, "maxmemory"), Some("104857600"));
    assert_eq!(field(&t, "maxmemory_human"), Some("100.00M"));
    assert_eq!(field(&t, "maxmemory_policy"), Some("allkeys-lru"));
    // RESP3: the percentages and ratios are doubles, the report verbatim text.
    c.cmd(&["HELLO", "3"]);
    let Reply::Map(m) = c.cmd(&["MEMORY", "STATS"]) else { panic!() };
    let frag = m.iter().find(|(k, _)| *k == Reply::Bulk(b"fragmentation".to_vec())).unwrap();
    assert!(matches!(frag.1, Reply::Double(_)), "{frag:?}");
    assert!(matches!(c.cmd(&["MEMORY", "DOCTOR"]), Reply::Verbatim(_)));
}

/// OBJECT IDLETIME as redis-server 7.0.15 keeps it: a key's reads and writes (and TOUCH) are
/// uses; TTL, TYPE, EXISTS and OBJECT look without using; RESTORE ... IDLETIME sets it.
/// Redis's own introspection-2 tests, in the same steps.
#[test]
fn object_idletime_counts_from_the_last_use() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let idle = |c: &mut Raw, k: &str| match c.cmd(&["OBJECT", "IDLETIME", k]) {
        Reply::Int(n) => n,
        other => panic!("OBJECT IDLETIME {k}: {other:?}"),
    };
    assert_eq!(c.cmd(&["SET", "foo", "bar"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "other", "x"]), Reply::Simple("OK".into()));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    for cmd in
        [&["TTL", "foo"][..], &["TYPE", "foo"], &["EXISTS", "foo"], &["OBJECT", "ENCODING", "foo"]]
    {
        c.cmd(cmd);
    }
    assert!(idle(&mut c, "foo") >= 2);
    assert_eq!(c.cmd(&["TOUCH", "foo", "nokey"]), Reply::Int(1));
    assert!(idle(&mut c, "foo") < 2);
    assert!(idle(&mut c, "other") >= 2);
    assert_eq!(c.cmd(&["GET", "other"]), Reply::bulk("x"));
    assert!(idle(&mut c, "other") < 2);
    assert_eq!(c.cmd(&["OBJECT", "IDLETIME", "nokey"]), Reply::Null);
    let Reply::Bulk(payload) = c.cmd(&["DUMP", "foo"]) else { panic!("DUMP") };
    c.send_raw(&Raw::encode(&[b"RESTORE", b"copy", b"0", &payload, b"IDLETIME", b"1000"]));
    assert_eq!(c.read(), Reply::Simple("OK".into()));
    let n = idle(&mut c, "copy");
    assert!((1000..=1010).contains(&n), "{n}");
}

/// SLOWLOG GET's entries as (id, duration, arguments, client address, client name).
fn slowlog(c: &mut Raw, count: Option<&str>) -> Vec<(i64, i64, Vec<String>, String, String)> {
    let mut line = vec!["SLOWLOG", "GET"];
    line.extend(count);
    let Reply::Array(entries) = c.cmd(&line) else { panic!("SLOWLOG GET") };
    let text = |r: &Reply| match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("{other:?}"),
    };
    entries
        .iter()
        .map(|e| {
            let Reply::Array(f) = e else { panic!("{e:?}") };
            assert_eq!(f.len(), 6, "{f:?}");
            let (Reply::Int(id), Reply::Int(time), Reply::Int(us), Reply::Array(args)) =
                (&f[0], &f[1], &f[2], &f[3])
            else {
                panic!("{f:?}")
            };
            assert!(*time > 1_700_000_000, "a Unix time: {time}");
            (*id, *us, args.iter().map(text).collect(), text(&f[4]), text(&f[5]))
        })
        .collect()
}

fn words(e: &(i64, i64, Vec<String>, String, String)) -> String {
    e.2.join(" ")
}

#[test]
fn slowlog_keeps_the_newest_slow_commands_with_their_client() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let Reply::Array(both) = c.cmd(&["CONFIG", "GET", "slowlog-*"]) else { panic!() };
    assert_eq!(both.len(), 4, "{both:?}");
    let Reply::Array(defaults) = c.cmd(&["CONFIG", "GET", "slowlog-log-slower-than"]) else {
        panic!()
    };
    assert_eq!(defaults[1], Reply::bulk("10000"));
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["CLIENT", "SETNAME", "foobar"]);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["INCR", "k"]); // fails: still logged
    let got = slowlog(&mut c, None);
    let lines: Vec<String> = got.iter().map(words).collect();
    assert_eq!(
        lines,
        ["INCR k", "SET k v", "CLIENT SETNAME foobar", "CONFIG SET slowlog-log-slower-than 0"]
    );
    let ids: Vec<i64> = got.iter().map(|e| e.0).collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1] + 1), "newest first, one apart: {ids:?}");
    assert!(got[0].3.starts_with("127.0.0.1:") && got[0].4 == "foobar", "{:?}", got[0]);
    assert_eq!(got[3].4, "", "named after it ran");
    assert_eq!(slowlog(&mut c, Some("1")).len(), 1);
    assert_eq!(slowlog(&mut c, Some("0")).len(), 0);
    // The GETs above are logged too.
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), Reply::Int(7));
    assert_eq!(slowlog(&mut c, Some("-1")).len(), 8);
    for bad in ["-2", "x", "99999999999999999999"] {
        assert_eq!(
            c.cmd(&["SLOWLOG", "GET", bad]),
            Reply::Error("ERR count should be greater than or equal to -1".into())
        );
    }
    // At most slowlog-max-len, trimmed at the next entry; RESET keeps the ids going.
    c.cmd(&["CONFIG", "SET", "slowlog-max-len", "3"]);
    for _ in 0..10 {
        c.cmd(&["PING"]);
    }
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), Reply::Int(3));
    let last = slowlog(&mut c, Some("1"))[0].0;
    assert_eq!(c.cmd(&["SLOWLOG", "RESET"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), Reply::Int(1), "RESET itself is logged");
    assert!(slowlog(&mut c, None)[1].0 > last);
    // Off: nothing more is logged.
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["PING"]);
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), Reply::Int(0));
    // Arguments past 128 bytes are cut (and say how many more there were).
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let long = "A".repeat(129);
    c.cmd(&["SADD", "set", "foo", &long]);
    assert_eq!(
        words(&slowlog(&mut c, Some("1"))[0]),
        format!("SADD set foo {}... (1 more bytes)", &long[..128])
    );
}

#[test]
fn slowlog_redacts_secrets_and_logs_what_transactions_and_scripts_ran() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["AUTH", "secret"]); // refused: no password here; still logged, redacted
    c.cmd(&["CONFIG", "SET", "masterauth", "secret"]);
    c.cmd(&["HELLO", "2", "AUTH", "default", "secret"]);
    let got: Vec<String> = slowlog(&mut c, None).iter().map(words).collect();
    assert_eq!(
        got[..3],
        [
            "HELLO 2 AUTH (redacted) (redacted)",
            "CONFIG SET masterauth (redacted)",
            "AUTH (redacted)"
        ]
    );
    // EXEC's commands one by one, not EXEC; a script's command, not what it calls.
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["INCR", "a"]);
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Simple("OK".into()), Reply::Int(2)]));
    c.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", "a"]);
    let got: Vec<String> = slowlog(&mut c, None).iter().map(words).collect();
    assert_eq!(
        got,
        [
            "EVAL return redis.call('get', KEYS[1]) 1 a",
            "INCR a",
            "SET a 1",
            "MULTI",
            "SLOWLOG RESET"
        ]
    );
}

#[test]
fn slowlog_logs_a_blocked_command_when_it_is_served_or_gives_up() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut waiter = srv.raw();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    waiter.send_raw(&Raw::encode(&[b"BLPOP", b"l", b"0"]));
    crate::common::wait_blocked(&mut c, 1);
    c.cmd(&["RPUSH", "l", "x"]);
    assert_eq!(waiter.read(), Reply::Array(vec![Reply::bulk("l"), Reply::bulk("x")]));
    assert_eq!(waiter.cmd(&["BLPOP", "none", "0.01"]), Reply::Null);
    let got: Vec<String> = slowlog(&mut c, None).iter().map(words).collect();
    let blpop: Vec<&String> = got.iter().filter(|l| l.starts_with("BLPOP")).collect();
    assert_eq!(blpop, ["BLPOP none 0.01", "BLPOP l 0"], "{got:?}");
}

#[test]
fn slowlog_refuses_bad_settings_and_subcommands_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let err = |c: &mut Raw, line: &[&str]| match c.cmd(line) {
        Reply::Error(e) => e,
        other => panic!("{line:?}: {other:?}"),
    };
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "slowlog-max-len", "-1"]),
        "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument \
         must be between 0 and 9223372036854775807 inclusive"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "-2"]),
        "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - \
         argument must be between -1 and 9223372036854775807 inclusive"
    );
    assert!(err(&mut c, &["CONFIG", "SET", "slowlog-max-len", "x"]).ends_with("integer"));
    assert_eq!(
        err(&mut c, &["SLOWLOG", "LEN", "x"]),
        "ERR wrong number of arguments for 'slowlog|len' command"
    );
    assert_eq!(
        err(&mut c, &["slowlog", "nope"]),
        "ERR unknown subcommand or wrong number of arguments for 'nope'. Try SLOWLOG HELP."
    );
    let Reply::Array(help) = c.cmd(&["SLOWLOG", "HELP"]) else { panic!() };
    assert_eq!(
        help[0],
        Reply::Simple("SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into())
    );
}

/// MONITOR: each command another client runs, as redis-server 7.0 shows it: after it ran
/// (EXEC after its commands), a script's command before the commands it calls (`lua`),
/// arguments quoted with Redis's escapes, AUTH's redacted, administrative commands hidden;
/// RESET ends it.
#[test]
fn monitor_shows_the_commands_others_run() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut m = srv.raw();
    assert_eq!(m.cmd(&["MONITOR"]), Reply::Simple("OK".into()));
    r.cmd(&["SET", "foo", "bar"]);
    r.cmd(&["GET", "foo"]);
    r.cmd(&["EVAL", "redis.call('set', KEYS[1], ARGV[1])", "1", "foo", "baz"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["SET", "a", "b"]);
    r.cmd(&["EXEC"]);
    r.cmd(&["CONFIG", "GET", "maxmemory"]);
    r.cmd(&["AUTH", "secret"]);
    r.cmd(&["SET", "a\nb", "q\"\u{1}"]);
    let mut lines = Vec::new();
    for _ in 0..8 {
        match m.read() {
            Reply::Simple(l) => lines.push(l),
            other => panic!("{other:?}"),
        }
    }
    // Each line: "<secs>.<micros> [0 <addr>] <args>"; the address is the client's.
    for l in &lines {
        let (stamp, _) = l.split_once(' ').unwrap();
        let (secs, micros) = stamp.split_once('.').unwrap();
        assert!(secs.parse::<u64>().unwrap() > 1_600_000_000 && micros.len() == 6, "{l}");
    }
    let shown: Vec<&str> = lines.iter().map(|l| l.split_once("] ").unwrap().1).collect();
    assert_eq!(
        shown,
        [
            r#""SET" "foo" "bar""#,
            r#""GET" "foo""#,
            r#""EVAL" "redis.call('set', KEYS[1], ARGV[1])" "1" "foo" "baz""#,
            r#""set" "foo" "baz""#,
            r#""MULTI""#,
            r#""SET" "a" "b""#,
            r#""EXEC""#,
            r#""AUTH" "(redacted)""#,
        ]
    );
    assert!(lines[0].contains(" [0 127.0.0.1:"), "{}", lines[0]);
    assert!(lines[3].contains(" [0 lua] "), "{}", lines[3]);
    match m.read() {
        Reply::Simple(l) => assert!(l.ends_with(r#"] "SET" "a\nb" "q\"\x01""#), "{l}"),
        other => panic!("{other:?}"),
    }
    // RESET ends MONITOR mode: nothing more arrives.
    assert_eq!(m.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    r.cmd(&["SET", "x", "y"]);
    assert_eq!(m.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

/// CLIENT LIST's `cmd` is each connection's last command (a container's by its subcommand,
/// `NULL` before any) and `idle` the seconds since it began.
#[test]
fn client_list_shows_each_connections_last_command_and_idle_time() {
    let srv = Server::start(&[]);
    let mut me = srv.raw();
    let mut other = srv.raw();
    let fresh = srv.raw();
    let line_of = |list: &str, id: i64| -> String {
        list.lines().find(|l| l.starts_with(&format!("id={id} "))).unwrap().to_string()
    };
    let field = |line: &str, name: &str| -> String {
        let prefix = format!("{name}=");
        line.split(' ').find_map(|f| f.strip_prefix(prefix.as_str())).unwrap().to_string()
    };
    let id = |c: &mut Raw| match c.cmd(&["CLIENT", "ID"]) {
        Reply::Int(n) => n,
        r => panic!("{r:?}"),
    };
    let (my_id, other_id) = (id(&mut me), id(&mut other));
    assert_eq!(other.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(other.cmd(&["SET", "k", "v"]), Reply::Simple("QUEUED".into()));
    assert!(matches!(other.cmd(&["EXEC"]), Reply::Array(_)));
    let listed = |c: &mut Raw| match c.cmd(&["CLIENT", "LIST"]) {
        Reply::Verbatim(s) => s,
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        r => panic!("{r:?}"),
    };
    assert_eq!(field(&line_of(&listed(&mut me), other_id), "cmd"), "exec", "not its SET");
    assert_eq!(other.cmd(&["GET", "k"]), Reply::bulk("v"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let list = listed(&mut me);
    let mine = line_of(&list, my_id);
    assert_eq!(field(&mine, "cmd"), "client|list");
    assert_eq!(field(&mine, "idle"), "0");
    let theirs = line_of(&list, other_id);
    assert_eq!(field(&theirs, "cmd"), "get");
    assert!(field(&theirs, "idle").parse::<u64>().unwrap() >= 1, "{theirs}");
    let fresh_line = list
        .lines()
        .find(|l| !l.contains(&format!("id={my_id} ")) && !l.contains(&format!("id={other_id} ")))
        .unwrap();
    assert_eq!(field(fresh_line, "cmd"), "NULL");
    drop(fresh);
}

/// The kernel's word on whether transparent huge pages are on for process `pid`.
fn thp_enabled(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("THP_enabled:").map(|v| v.trim().to_string()))
}

/// `disable-thp` as Redis has it: on by default, the process then runs without transparent
/// huge pages; `no` leaves them to the system; CONFIG GET reports it and CONFIG SET refuses
/// it as immutable.
#[test]
fn disable_thp_turns_huge_pages_off_unless_told_no() {
    let on = Server::start(&[]);
    let off = Server::start(&["--disable-thp", "no"]);
    match (thp_enabled(on.child.id()), thp_enabled(off.child.id())) {
        (Some(a), Some(b)) => assert_eq!((a.as_str(), b.as_str()), ("0", "1")),
        // A kernel without the status line (before 6.x) cannot be asked.
        _ => eprintln!("skipped the kernel check: no THP_enabled in /proc/PID/status"),
    }
    let mut c = on.raw();
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "disable-thp"]),
        Reply::Array(vec![Reply::Bulk(b"disable-thp".to_vec()), Reply::Bulk(b"yes".to_vec())])
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "disable-thp", "no"]),
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'disable-thp') - can't set \
             immutable config"
                .into()
        )
    );
    let mut c = off.raw();
    let Reply::Array(got) = c.cmd(&["CONFIG", "GET", "disable-thp"]) else { panic!() };
    assert_eq!(got[1], Reply::Bulk(b"no".to_vec()));
}

#[test]
fn client_no_evict_is_recorded_and_shown_in_client_list_flags() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let flags = |c: &mut Raw| match c.cmd(&["CLIENT", "INFO"]) {
        Reply::Bulk(b) => {
            let line = String::from_utf8(b).unwrap();
            line.split(' ').find_map(|f| f.strip_prefix("flags=")).unwrap().to_string()
        }
        other => panic!("CLIENT INFO replied {other:?}"),
    };
    assert_eq!(flags(&mut c), "N");
    assert_eq!(c.cmd(&["CLIENT", "NO-EVICT", "on"]), Reply::Simple("OK".into()));
    assert_eq!(flags(&mut c), "e");
    assert_eq!(c.cmd(&["CLIENT", "NO-EVICT", "maybe"]), Reply::Error("ERR syntax error".into()));
    assert_eq!(
        c.cmd(&["CLIENT", "NO-EVICT"]),
        Reply::Error("ERR wrong number of arguments for 'client|no-evict' command".into())
    );
    assert_eq!(c.cmd(&["CLIENT", "NO-EVICT", "OFF"]), Reply::Simple("OK".into()));
    assert_eq!(flags(&mut c), "N");
}

/// Sends `walker` a pipeline of 100 `walk` commands, then a PING from `pinger`: the PING is
/// answered before every walk is (their replies go out together at the pipeline's end), and
/// each walk then replies `want`.
fn walks_leave_the_thread(walker: &mut Raw, pinger: &mut Raw, walk: &[&[u8]], want: &Reply) {
    let walks = 100;
    walker.send_raw(&Raw::encode(walk).repeat(walks));
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(pinger.cmd(&["PING"]), Reply::Simple("PONG".into()));
    walker.stream.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let mut early = 0;
    while walker.try_read().is_some() {
        early += 1;
    }
    assert!(early < walks, "the PING waited for all {walks} of {walk:?}");
    walker.stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    for _ in early..walks {
        assert_eq!(&walker.read(), want);
    }
}

/// DBSIZE, INFO and KEYS walk the key space (the first two where Redis answers at once from
/// its counts): they run on a blocking thread, and their connection thread serves its other
/// clients meanwhile. With one connection thread, a PING sent while a pipeline of DBSIZEs (or
/// of KEYS) walks is answered before the pipeline ends (its replies go out together at its
/// end); run on the thread, the PING waited for all of them.
#[test]
fn a_walk_of_the_key_space_leaves_its_connection_thread_to_the_others() {
    let srv = Server::start(&["--io-threads", "1"]);
    let mut c = srv.raw();
    let keys = 20_000;
    for chunk in 0..keys / 1000 {
        let mut args = vec!["MSET".to_string()];
        for i in chunk * 1000..(chunk + 1) * 1000 {
            args.extend([format!("key:{i}"), "v".to_string()]);
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(c.cmd(&a), Reply::Simple("OK".into()));
    }
    let mut walker = srv.raw();
    let mut pinger = srv.raw();
    walks_leave_the_thread(&mut walker, &mut pinger, &[b"DBSIZE"], &Reply::Int(keys as i64));
    // KEYS too: walks matching nothing.
    let none = Reply::Array(Vec::new());
    walks_leave_the_thread(&mut walker, &mut pinger, &[b"KEYS", b"none:*"], &none);
    match walker.cmd(&["KEYS", "key:1999?"]) {
        Reply::Array(found) => assert_eq!(found.len(), 10, "key:19990 to key:19999"),
        other => panic!("KEYS replied {other:?}"),
    }
    let text = info(&mut walker, &["keyspace"]);
    assert_eq!(field(&text, "db0"), Some("keys=20000,expires=0,avg_ttl=0"));
    // Inside a transaction it runs in place, as every queued command.
    assert_eq!(walker.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(walker.cmd(&["DBSIZE"]), Reply::Simple("QUEUED".into()));
    assert_eq!(walker.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(keys as i64)]));
}

#[test]
fn hidden_parameters_answer_their_exact_name_only() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let Reply::Array(all) = c.cmd(&["CONFIG", "GET", "*"]) else { panic!() };
    assert!(!all.contains(&Reply::bulk("key-load-delay")), "a pattern leaves it out");
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "KEY-load-delay"]),
        Reply::Array(vec![Reply::bulk("key-load-delay"), Reply::bulk("0")])
    );
    assert_eq!(c.cmd(&["CONFIG", "GET", "key-load-*"]), Reply::Array(vec![]));
}

/// CLIENT LIST's and CLIENT INFO's figures are each connection's own, as Redis reports
/// them: `qbuf` counts the running command's bytes (26 for a lone `CLIENT INFO`) and an
/// incomplete command's, `argv-mem` the running command's arguments, `multi` and
/// `multi-mem` a transaction's queue, `sub`/`psub`/`ssub` the subscriptions, `rbs`/`rbp`
/// the read buffer's size and peak; INFO's `client_recent_max_input_buffer` the largest.
#[test]
fn client_list_figures_follow_each_connections_buffers_and_state() {
    let srv = Server::start(&[]);
    let mut me = srv.raw();
    let info = |c: &mut Raw| match c.cmd(&["CLIENT", "INFO"]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        r => panic!("{r:?}"),
    };
    let field = |line: &str, name: &str| -> String {
        let prefix = format!("{name}=");
        let f = line.split(' ').find_map(|f| f.strip_prefix(prefix.as_str()));
        f.unwrap_or_else(|| panic!("no {name} in {line}")).trim_end().to_string()
    };
    let num = |line: &str, name: &str| -> i64 { field(line, name).parse().unwrap() };
    let mine = info(&mut me);
    assert_eq!((num(&mine, "qbuf"), num(&mine, "argv-mem")), (26, 10), "{mine}");
    assert_eq!(num(&mine, "qbuf") + num(&mine, "qbuf-free"), num(&mine, "rbs"), "{mine}");
    assert!(num(&mine, "rbs") >= 16 * 1024, "{mine}");
    assert!(num(&mine, "fd") > 2, "a socket's descriptor: {mine}");
    assert!(num(&mine, "tot-mem") > num(&mine, "rbs"), "{mine}");
    assert_eq!(field(&mine, "multi"), "-1");
    assert_eq!(field(&mine, "events"), "r");

    let id_of = |c: &mut Raw| -> i64 {
        let Reply::Int(id) = c.cmd(&["CLIENT", "ID"]) else { panic!() };
        id
    };
    let line_of = |me: &mut Raw, id: i64| -> String {
        let list = match me.cmd(&["CLIENT", "LIST"]) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            r => panic!("{r:?}"),
        };
        list.lines().find(|l| l.starts_with(&format!("id={id} "))).unwrap().to_string()
    };
    // A transaction's queue.
    let mut tx = srv.raw();
    let tx_id = id_of(&mut tx);
    let queued = line_of(&mut me, tx_id);
    assert_eq!((field(&queued, "multi"), num(&queued, "qbuf")), ("-1".into(), 0), "{queued}");
    tx.cmd(&["MULTI"]);
    tx.cmd(&["SET", "k", "v"]);
    tx.cmd(&["SET", "k2", "vv"]);
    let queued = line_of(&mut me, tx_id);
    assert_eq!((num(&queued, "multi"), num(&queued, "multi-mem")), (2, 12), "{queued}");
    assert_eq!(num(&queued, "argv-mem"), 0, "between commands: {queued}");
    tx.cmd(&["DISCARD"]);
    let done = line_of(&mut me, tx_id);
    assert_eq!((num(&done, "multi"), num(&done, "multi-mem")), (-1, 0), "{done}");

    // Subscriptions, counted by kind (the line read from a third connection, the subscriber
    // answering only subscription commands).
    let mut sub = srv.raw();
    let Reply::Int(sub_id) = sub.cmd(&["CLIENT", "ID"]) else { panic!() };
    sub.send_raw(&Raw::encode(&[b"SUBSCRIBE", b"a", b"b"]));
    sub.read();
    sub.read();
    sub.cmd(&["PSUBSCRIBE", "p*"]);
    let list = match me.cmd(&["CLIENT", "LIST", "ID", &sub_id.to_string()]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        r => panic!("{r:?}"),
    };
    let counts = [num(&list, "sub"), num(&list, "psub"), num(&list, "ssub")];
    assert_eq!(counts, [2, 1, 0], "{list}");
    assert_eq!(list.lines().count(), 1, "only the id named: {list}");

    // CLIENT LIST's filters.
    let ids = |me: &mut Raw, args: &[&str]| -> Vec<i64> {
        let list = match me.cmd(&[&["CLIENT", "LIST"], args].concat()) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            r => panic!("{args:?}: {r:?}"),
        };
        list.lines().map(|l| num(l, "id")).collect()
    };
    let my_id = id_of(&mut me);
    assert_eq!(ids(&mut me, &["TYPE", "pubsub"]), [sub_id]);
    assert_eq!(ids(&mut me, &["type", "NORMAL"]), [my_id, tx_id]);
    assert!(ids(&mut me, &["TYPE", "replica"]).is_empty());
    assert!(ids(&mut me, &["TYPE", "master"]).is_empty());
    let (sub_s, my_s) = (sub_id.to_string(), my_id.to_string());
    assert_eq!(
        ids(&mut me, &["ID", &sub_s, "99999", &my_s]),
        [sub_id, my_id],
        "in the order named"
    );
    for (args, err) in [
        (&["TYPE", "bus"][..], "ERR Unknown client type 'bus'"),
        (&["ID", "1", "x"], "ERR Invalid client ID"),
        (&["ID"], "ERR syntax error"),
        (&["TYPE", "normal", "ID"], "ERR syntax error"),
        (&["everyone"], "ERR syntax error"),
    ] {
        assert_eq!(
            me.cmd(&[&["CLIENT", "LIST"], args].concat()),
            Reply::Error(err.into()),
            "{args:?}"
        );
    }

    // An incomplete command waits in the buffer; a large one grows it, and its peak stays.
    let mut big = srv.raw();
    let big_id = id_of(&mut big);
    big.send_raw(b"*3\r\n$3\r\nSET\r\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut holding = String::new();
    while std::time::Instant::now() < deadline {
        let list = match me.cmd(&["CLIENT", "LIST"]) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            r => panic!("{r:?}"),
        };
        holding = list.lines().find(|l| l.contains(" qbuf=13 ")).unwrap_or_default().into();
        if !holding.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!holding.is_empty(), "the incomplete SET's 13 bytes never showed");
    // The rest of the SET and a CLIENT INFO in one read: the buffer holds both while they run.
    let mut rest = b"$3\r\nbig\r\n$400000\r\n".to_vec();
    rest.extend(std::iter::repeat_n(b'A', 400_000));
    rest.extend_from_slice(b"\r\n");
    rest.extend(Raw::encode(&[b"CLIENT", b"INFO"]));
    big.send_raw(&rest);
    assert_eq!(big.read(), Reply::Simple("OK".into()));
    let Reply::Bulk(grown) = big.read() else { panic!() };
    let grown = String::from_utf8(grown).unwrap();
    assert!(num(&grown, "qbuf") > 400_000, "{grown}");
    assert!(num(&grown, "rbs") > 400_000 && num(&grown, "rbp") > 400_000, "{grown}");
    let _ = big_id;
}

/// The read buffer follows its use as Redis's does: a large one shrinks to what recent
/// commands needed, and an idle connection (more than 2 s) lets go of its buffers.
#[test]
fn read_buffers_shrink_with_their_use_and_idle_connections_let_go_of_them() {
    let srv = Server::start(&[]);
    let mut me = srv.raw();
    let num = |line: &str, name: &str| -> i64 {
        let prefix = format!("{name}=");
        line.split(' ').find_map(|f| f.strip_prefix(prefix.as_str())).unwrap().parse().unwrap()
    };
    let line_of = |me: &mut Raw, id: i64| -> String {
        match me.cmd(&["CLIENT", "LIST", "ID", &id.to_string()]) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            r => panic!("{r:?}"),
        }
    };
    let until = |what: &str, me: &mut Raw, id: i64, ok: &dyn Fn(&str) -> bool| -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let line = line_of(me, id);
            if ok(&line) {
                return line;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {line}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut c = srv.raw();
    let Reply::Int(id) = c.cmd(&["CLIENT", "ID"]) else { panic!() };
    let first = line_of(&mut me, id);
    let room = num(&first, "qbuf") + num(&first, "qbuf-free");
    assert!((16_384..32_768).contains(&room), "{first}");
    until("an idle connection's buffers let go of", &mut me, id, &|l| {
        num(l, "rbs") == 0 && num(l, "qbuf-free") == 0
    });
    // It reads again once data comes.
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let big = "A".repeat(400_000);
    assert_eq!(c.cmd(&["SET", "x", &big]), Reply::Simple("OK".into()));
    let grown = num(&line_of(&mut me, id), "rbs");
    assert!(grown > 32_768, "{grown}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        assert_eq!(c.cmd(&["SET", "x", "small"]), Reply::Simple("OK".into()));
        let rbs = num(&line_of(&mut me, id), "rbs");
        if rbs > 0 && rbs < grown {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never shrank below {grown}: {rbs}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// CONFIG SET port moves the listener as Redis does: new connections on the new port, none
/// on the old one, the connections open stay; INFO and CONFIG GET report it.
#[test]
fn config_set_port_moves_the_listener_and_keeps_open_connections() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::Simple("OK".into()));
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let p = port.to_string();
    assert_eq!(c.cmd(&["CONFIG", "SET", "port", &p]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"), "the open connection stays");
    let want = Reply::Array(vec![Reply::bulk("port"), Reply::bulk(&p)]);
    assert_eq!(c.cmd(&["CONFIG", "GET", "port"]), want);
    assert_eq!(info_field(&mut c, "server", "tcp_port"), p);
    let mut moved = Raw::connect(port);
    assert_eq!(moved.cmd(&["GET", "k"]), Reply::bulk("v"));
    // The old port closes once the accept loop took the new listener.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", srv.port)).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the old port still accepts");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Back to the first port.
    let back = srv.port.to_string();
    assert_eq!(moved.cmd(&["CONFIG", "SET", "port", &back]), Reply::Simple("OK".into()));
    let mut again = Raw::connect(srv.port);
    assert_eq!(again.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

/// With DEBUG `sub hold` an expired key stays (lazy expiry only); after `sub resume` active
/// expiry deletes it, `expired_keys` reaching `deleted`.
fn expiry_held(c: &mut Raw, [sub, hold, resume]: [&str; 3], deleted: u64) {
    assert_eq!(c.cmd(&["DEBUG", sub, hold]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "e", "1", "PX", "1"]), Reply::Simple("OK".into()));
    std::thread::sleep(Duration::from_millis(600));
    let expired = |c: &mut Raw| info_field(c, "stats", "expired_keys").parse::<u64>().unwrap();
    assert_eq!(expired(c), deleted - 1, "{sub} {hold}");
    assert_eq!(c.cmd(&["DEBUG", sub, resume]), Reply::Simple("OK".into()));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while expired(c) != deleted {
        assert!(std::time::Instant::now() < deadline, "{sub} {resume}: expiry never resumed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// DEBUG RELOAD's options as redis-server 7.0.15 answers them: a reload that neither flushes
/// nor merges fails while a function library or a key (in any database) exists, where
/// Redis's load meets them again (a library: this error; a key: Redis ends, here the same
/// error); with MERGE, or nothing to meet, it succeeds; an unknown option is refused. Nothing
/// is lost either way.
#[test]
fn debug_reload_checks_its_options_as_redis_does() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    let ok = || Reply::Simple("OK".into());
    let failed = Reply::Error("ERR Error trying to load the RDB dump".into());
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOFLUSH"]), ok());
    let lib = "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), Reply::bulk("lib1"));
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "noflush"]), failed);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOFLUSH", "MERGE"]), ok());
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]), ok());
    assert_eq!(c.cmd(&["FCALL", "f1", "0"]), Reply::Int(1));
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]), ok());
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOFLUSH", "NOSAVE"]), failed);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
    assert_eq!(
        c.cmd(&["DEBUG", "RELOAD", "MERGE", "BOGUS"]),
        Reply::Error(
            "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.".into()
        )
    );
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    assert_eq!(c.cmd(&["FLUSHALL"]), ok());
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOFLUSH"]), ok());
}

/// DEBUG SLEEP stops the whole server, as redis-server's one thread sleeps: a client served
/// by another connection thread waits for its end too (Sentinel's and Redis's tests stall a
/// server so).
#[test]
fn debug_sleep_holds_every_connection() {
    let srv = Server::start(&["--enable-debug-command", "yes", "--io-threads", "2"]);
    // Two connections, one on each thread (a new one goes to the thread with fewer).
    let (mut a, mut b) = (srv.raw(), srv.raw());
    assert_eq!(b.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let started = std::time::Instant::now();
    a.send_raw(&Raw::encode(&[b"DEBUG", b"SLEEP", b"0.6"]));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(b.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(550), "answered after {waited:?}");
    assert_eq!(a.read(), Reply::Simple("OK".into()));
    assert_eq!(a.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

/// DEBUG as redis-server 7.0 guards it: refused by default (`enable-debug-command no`) with
/// Redis's text, after the arity check; with `yes` (or `local`, from loopback) it serves
/// OBJECT, SLEEP, SET-ACTIVE-EXPIRE, PAUSE-CRON, RELOAD (a SAVE), ERROR and HELP.
#[test]
fn debug_is_refused_unless_enabled_and_then_serves_its_subcommands() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let refused = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \
                   \"local\", you can run it from a local connection, otherwise you need to set \
                   this option in the configuration file, and then restart the server.";
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), Reply::Error(refused.into()));
    assert_eq!(
        c.cmd(&["DEBUG"]),
        Reply::Error("ERR wrong number of arguments for 'debug' command".into())
    );
    for setting in ["yes", "local"] {
        let srv = Server::start(&["--enable-debug-command", setting]);
        let mut c = srv.raw();
        assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::Simple("OK".into()));
        match c.cmd(&["DEBUG", "OBJECT", "k"]) {
            Reply::Simple(s) => {
                assert!(s.contains(" encoding:embstr serializedlength:2 "), "{s}");
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(c.cmd(&["DEBUG", "OBJECT", "none"]), Reply::Error("ERR no such key".into()));
        assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0.01"]), Reply::Simple("OK".into()));
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), Reply::Simple("OK".into()));
        assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
        assert_eq!(c.cmd(&["DEBUG", "ERROR", "BAD thing"]), Reply::Error("BAD thing".into()));
        assert_eq!(
            c.cmd(&["DEBUG", "NOSUCH"]),
            Reply::Error("ERR unknown subcommand 'NOSUCH'. Try DEBUG HELP.".into())
        );
        // Active expiry off, or every periodic round held: an expired key stays until read
        // (lazy expiry), and the rounds back delete it.
        expiry_held(&mut c, ["SET-ACTIVE-EXPIRE", "0", "1"], 1);
        expiry_held(&mut c, ["PAUSE-CRON", "1", "0"], 2);
    }
    // A bad value stops the start; a server that started anyway is stopped after 10 s.
    let dir = tempfile::tempdir().unwrap();
    let mut bad = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--enable-debug-command", "maybe", "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = bad.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            bad.kill().unwrap();
            panic!("the server started with --enable-debug-command maybe");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(&mut bad.stderr.take().unwrap(), &mut said).unwrap();
    assert!(said.contains("one of the following: no, yes, local"), "{said}");
}

/// Checked against redis-server 7.0.15: DEBUG POPULATE makes `key:<n>` (or `<prefix>:<n>`)
/// holding `value:<n>`, cut or padded with zero bytes to a size, and leaves the keys there.
#[test]
fn debug_populate_makes_the_keys_that_are_not_there() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "key:1", "mine"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "3"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.cmd(&["MGET", "key:0", "key:1", "key:2"]),
        Reply::Array(vec![Reply::bulk("value:0"), Reply::bulk("mine"), Reply::bulk("value:2")])
    );
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2", "p", "3"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "p:1"]), Reply::bulk("val"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "1", "q", "10"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "q:0"]), Reply::Bulk(b"value:0\0\0\0".to_vec()));
    let positive = Reply::Error("ERR value is out of range, must be positive".into());
    for bad in [&["-1"][..], &["x"], &["1", "a", "-2"]] {
        let mut args = vec!["DEBUG", "POPULATE"];
        args.extend_from_slice(bad);
        assert_eq!(c.cmd(&args), positive, "{bad:?}");
    }
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2500", "big"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2506));
    assert_eq!(c.cmd(&["GET", "big:2499"]), Reply::bulk("value:2499"));
}

/// DEBUG DIGEST and DIGEST-VALUE tell equal datasets and values apart from different ones
/// (a COPY against its source, an expiry, DEBUG RELOAD); DEBUG PROTOCOL replies with each
/// RESP type; scripts may call DEBUG only after SET-DISABLE-DENY-SCRIPTS, as in Redis.
#[test]
fn debug_digests_protocol_replies_and_the_scripts_rule() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    let zeros = Reply::Simple("0".repeat(40));
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), zeros, "an empty dataset");
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    c.cmd(&["HSET", "h", "f", "1", "g", "2"]);
    c.cmd(&["ZADD", "z", "1", "a", "2.5", "b"]);
    c.cmd(&["SADD", "s", "x", "y"]);
    c.cmd(&["XADD", "x", "1-1", "f", "v"]);
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    assert!(matches!(&digest, Reply::Simple(d) if d.len() == 40 && digest != zeros), "{digest:?}");
    for k in ["l", "h", "z", "s", "x"] {
        let copy = format!("{k}-copy");
        assert_eq!(c.cmd(&["COPY", k, &copy]), Reply::Int(1));
        let Reply::Array(d) = c.cmd(&["DEBUG", "DIGEST-VALUE", k, &copy, "missing"]) else {
            panic!()
        };
        assert_eq!(d[0], d[1], "{k}: a copy digests as its source");
        assert_ne!(d[0], zeros, "{k}");
        assert_eq!(d[2], zeros, "a missing key");
    }
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), digest, "more keys");
    for k in ["l", "h", "z", "s", "x"] {
        c.cmd(&["DEL", &format!("{k}-copy")]);
    }
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest, "the same keys again");
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest, "a reload keeps the dataset");
    c.cmd(&["HSET", "h", "f", "2"]);
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), digest, "one field changed");
    c.cmd(&["HSET", "h", "f", "1"]);
    c.cmd(&["PEXPIREAT", "h", "99999999999999"]);
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), digest, "an expiry");
    c.cmd(&["PERSIST", "h"]);
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    c.cmd(&["SELECT", "1"]);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["SELECT", "0"]);
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), digest, "a key in another database");

    // PROTOCOL, in RESP2 and RESP3.
    assert_eq!(
        c.cmd(&["DEBUG", "PROTOCOL", "bignum"]),
        Reply::bulk("1234567999999999999999999999999999999")
    );
    assert_eq!(c.cmd(&["DEBUG", "PROTOCOL", "true"]), Reply::Int(1));
    assert_eq!(c.cmd(&["DEBUG", "PROTOCOL", "double"]), Reply::bulk("3.141"));
    assert!(
        matches!(c.cmd(&["DEBUG", "PROTOCOL", "push"]), Reply::Error(e) if e.contains("RESP2"))
    );
    assert!(
        matches!(c.cmd(&["DEBUG", "PROTOCOL", "nosuch"]), Reply::Error(e) if e.contains("string|integer"))
    );
    c.cmd(&["HELLO", "3"]);
    c.send_raw(b"DEBUG PROTOCOL bignum\r\nDEBUG PROTOCOL map\r\nDEBUG PROTOCOL false\r\n");
    c.send_raw(b"DEBUG PROTOCOL attrib\r\n");
    let mut raw = Vec::new();
    let want =
        b"(1234567999999999999999999999999999999\r\n%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n\
                 #f\r\n|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
                 $39\r\nSome real reply following the attribute\r\n";
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while raw.len() < want.len() && std::time::Instant::now() < deadline {
        let mut chunk = [0u8; 512];
        let n = std::io::Read::read(&mut c.stream, &mut chunk).unwrap();
        raw.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&raw), String::from_utf8_lossy(want));
    c.cmd(&["HELLO", "2"]);

    // Scripts: DEBUG is `noscript` until SET-DISABLE-DENY-SCRIPTS.
    let script = "return redis.call('debug', 'protocol', 'integer')";
    let refused = c.cmd(&["EVAL", script, "0"]);
    assert!(
        matches!(&refused, Reply::Error(e) if e.contains("not allowed from script")),
        "{refused:?}"
    );
    assert_eq!(c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["EVAL", script, "0"]), Reply::Int(12345));
    assert_eq!(c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]), Reply::Simple("OK".into()));
    assert!(matches!(c.cmd(&["EVAL", script, "0"]), Reply::Error(_)));
    let refused = c.cmd(&["EVAL", "return redis.call('config', 'get', 'port')", "0"]);
    assert!(
        matches!(&refused, Reply::Error(e) if e.contains("not allowed from script")),
        "{refused:?}"
    );

    // A script's clock stands still: what it wrote does not expire under it.
    let held = "redis.call('SET', 'held', 'v', 'PX', 1) redis.call('DEBUG', 'SLEEP', 0.02) \
                return redis.call('EXISTS', 'held')";
    assert_eq!(c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["EVAL", held, "0"]), Reply::Int(1));
    assert_eq!(c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["EXISTS", "held"]), Reply::Int(0));
    // DEBUG OBJECT finds a key whose time is up while it is still stored.
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), Reply::Simple("OK".into()));
    c.cmd(&["SET", "stale", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    assert!(
        matches!(c.cmd(&["DEBUG", "OBJECT", "stale"]), Reply::Simple(s) if s.contains("encoding:"))
    );
    assert_eq!(c.cmd(&["EXISTS", "stale"]), Reply::Int(0));
    let gone = c.cmd(&["DEBUG", "OBJECT", "stale"]);
    assert_eq!(gone, Reply::Error("ERR no such key".into()), "the read removed it");
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), Reply::Simple("OK".into()));

    assert_eq!(c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1b"]), Reply::Simple("OK".into()));
    let bad = c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb"]);
    assert!(matches!(&bad, Reply::Error(e) if e.contains("smaller than 4gb")), "{bad:?}");
}

/// DBSIZE and INFO keyspace count a key whose expiry passed until it is removed, as Redis's
/// counts do (active expiry off: the read that finds it expired removes it); BGREWRITEAOF
/// runs as a background save with its own INFO fields.
#[test]
fn expired_keys_count_until_removed_and_bgrewriteaof_runs_in_the_background() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), Reply::Simple("OK".into()));
    for k in ["a", "b", "c"] {
        c.cmd(&["PSETEX", k, "100", "v"]);
    }
    c.cmd(&["SET", "kept", "v"]);
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(4));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(4), "expired, still stored");
    assert!(info(&mut c, &["keyspace"]).contains("db0:keys=4,expires=3"));
    assert_eq!(c.cmd(&["MGET", "a", "b"]), Reply::Array(vec![Reply::Null, Reply::Null]));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2), "the reads removed two");
    assert_eq!(c.cmd(&["KEYS", "*"]), Reply::Array(vec![Reply::bulk("kept")]), "never listed");
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), Reply::Simple("OK".into()));

    let started = c.cmd(&["BGREWRITEAOF"]);
    assert_eq!(started, Reply::Simple("Background append only file rewriting started".into()));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let t = info(&mut c, &["persistence"]);
        if field(&t, "aof_rewrite_in_progress") == Some("0")
            && field(&t, "aof_rewrites") == Some("1")
        {
            assert_eq!(field(&t, "aof_last_bgrewrite_status"), Some("ok"));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{t}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.cmd(&["GET", "kept"]), Reply::bulk("v"));
}
