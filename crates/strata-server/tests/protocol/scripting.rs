//! Scripting: EVAL/EVALSHA/SCRIPT and FUNCTION/FCALL replies (checked against redis-server
//! 7.0.15), a script atomic against other clients (every key lock held, one batch), BUSY
//! and SCRIPT KILL for a script that runs too long, and clients blocked on a key a script
//! wrote served when it ends.

use crate::common::{Raw, Reply, Server};
use std::time::{Duration, Instant};

fn err_starting(r: Reply, prefix: &str) {
    match r {
        Reply::Error(e) => assert!(e.starts_with(prefix), "{e:?} does not start with {prefix:?}"),
        other => panic!("{other:?} is no error"),
    }
}

#[test]
fn eval_replies_and_the_script_cache() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(
        c.cmd(&["EVAL", "return {1, 'two', {3}}", "0"]),
        Reply::Array(vec![Reply::Int(1), Reply::bulk("two"), Reply::Array(vec![Reply::Int(3)])])
    );
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; // SHA1 of "return 1"
    assert_eq!(c.cmd(&["SCRIPT", "EXISTS", sha]), Reply::Array(vec![Reply::Int(0)]));
    err_starting(c.cmd(&["EVALSHA", sha, "0"]), "NOSCRIPT No matching script");
    assert_eq!(c.cmd(&["SCRIPT", "LOAD", "return 1"]), Reply::bulk(sha));
    assert_eq!(c.cmd(&["EVALSHA", &sha.to_uppercase(), "0"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SCRIPT", "FLUSH"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SCRIPT", "EXISTS", sha]), Reply::Array(vec![Reply::Int(0)]));
    // Errors: a command's, raised with the script's position; a script's own; refusals.
    c.cmd(&["SET", "s", "x"]);
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('incr', 's')", "0"]),
        Reply::Error("ERR value is not an integer or out of range script: 70abbef89e172316f9219e67e313f248a5b98d9b, on @user_script:1.".into())
    );
    assert_eq!(
        c.cmd(&["EVAL", "return redis.pcall('incr', 's')", "0"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    err_starting(
        c.cmd(&["EVAL", "return redis.call('multi')", "0"]),
        "ERR This Redis command is not allowed from script",
    );
    err_starting(
        c.cmd(&["EVAL", "return redis.call('blpop', 'q', 0)", "0"]),
        "ERR This Redis command is not allowed from script",
    );
    // What Redis 7.0 does not flag `noscript` runs: BLMPOP (without blocking, as in
    // MULTI), a container's HELP; its subcommands that are flagged do not.
    let blmpop = "return redis.call('blmpop', 0, 1, 'q', 'LEFT')";
    assert_eq!(c.cmd(&["EVAL", blmpop, "0"]), Reply::Null);
    assert!(matches!(
        c.cmd(&["EVAL", "return redis.call('client', 'help')", "0"]),
        Reply::Array(_)
    ));
    err_starting(
        c.cmd(&["EVAL", "return redis.call('client', 'id')", "0"]),
        "ERR This Redis command is not allowed from script",
    );
    err_starting(
        c.cmd(&["EVAL_RO", "return redis.call('del', 'k')", "0"]),
        "ERR Write commands are not allowed from read-only scripts.",
    );
    // What may be replicated counts as a write for a read-only script (Redis 7.0).
    for script in ["return redis.call('publish', 'ch', 'm')", "return redis.call('pfcount', 'h')"] {
        err_starting(
            c.cmd(&["EVAL_RO", script, "0"]),
            "ERR Write commands are not allowed from read-only scripts.",
        );
    }
    let no_writes = "#!lua flags=no-writes\nreturn redis.call('publish', 'ch', 'm')";
    err_starting(
        c.cmd(&["EVAL", no_writes, "0"]),
        "ERR Write commands are not allowed from read-only scripts.",
    );
    assert_eq!(c.cmd(&["EVAL", "return redis.call('publish', 'ch', 'm')", "0"]), Reply::Int(0));
    err_starting(
        c.cmd(&["EVAL", "x = 1", "0"]),
        "ERR user_script:1: Attempt to modify a readonly table",
    );
    err_starting(
        c.cmd(&["EVAL", "return (", "0"]),
        "ERR Error compiling script (new function): user_script:1:",
    );
    assert_eq!(
        c.cmd(&["EVAL", "return 1", "-1"]),
        Reply::Error("ERR Number of keys can't be negative".into())
    );
    assert_eq!(
        c.cmd(&["EVAL", "return cjson.encode({a = {1, 2}})", "0"]),
        Reply::bulk(r#"{"a":[1,2]}"#)
    );
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('set', 'n', 9007199254740991)", "0"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.cmd(&["GET", "n"]), Reply::bulk("9007199254740991"));
}

#[test]
fn functions_load_call_list_delete_and_survive_a_restart() {
    let mut srv = Server::start(&[]);
    let mut c = srv.raw();
    let lib = "#!lua name=counter\nredis.register_function('bump', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\nredis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), Reply::bulk("counter"));
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", lib]),
        Reply::Error("ERR Library 'counter' already exists".into())
    );
    assert_eq!(c.cmd(&["FCALL", "bump", "1", "c", "5"]), Reply::Int(5));
    assert_eq!(c.cmd(&["FCALL_RO", "peek", "1", "c"]), Reply::bulk("5"));
    err_starting(
        c.cmd(&["FCALL_RO", "bump", "1", "c", "1"]),
        "ERR Can not execute a script with write flag using *_ro command.",
    );
    assert_eq!(c.cmd(&["FCALL", "nosuch", "0"]), Reply::Error("ERR Function not found".into()));
    let Reply::Array(libs) = c.cmd(&["FUNCTION", "LIST"]) else { panic!() };
    assert_eq!(libs.len(), 1);
    srv.stop();
    let dir = srv.keep_dir();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["FCALL", "bump", "1", "c", "2"]), Reply::Int(7), "the library was kept");
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "counter"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.cmd(&["FCALL", "bump", "1", "c", "2"]),
        Reply::Error("ERR Function not found".into())
    );
}

/// Scripts move amounts between two keys while other clients read both with MGET and add
/// to a third: every MGET sees the two keys' sum unchanged, and the third ends right.
#[test]
fn a_script_is_atomic_against_other_clients() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let mut c = srv.raw();
    c.cmd(&["MSET", "a{t}", "1000", "b{t}", "0"]);
    let script = "local n = tonumber(ARGV[1]) redis.call('decrby', KEYS[1], n) local x = 0 for i = 1, 2000 do x = x + i end redis.call('incrby', KEYS[2], n) return x";
    let movers: Vec<_> = (0..2)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for j in 0..200 {
                    let (from, to) =
                        if (i + j) % 2 == 0 { ("a{t}", "b{t}") } else { ("b{t}", "a{t}") };
                    assert!(matches!(c.cmd(&["EVAL", script, "2", from, to, "3"]), Reply::Int(_)));
                }
            })
        })
        .collect();
    let reader = std::thread::spawn(move || {
        let mut c = Raw::connect(port);
        for _ in 0..400 {
            let Reply::Array(v) = c.cmd(&["MGET", "a{t}", "b{t}"]) else { panic!() };
            let n: Vec<i64> = v
                .iter()
                .map(|r| match r {
                    Reply::Bulk(b) => String::from_utf8_lossy(b).parse().unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(n[0] + n[1], 1000, "a script's writes seen in part");
            assert!(matches!(c.cmd(&["INCR", "other"]), Reply::Int(_)));
        }
    });
    for m in movers {
        m.join().unwrap();
    }
    reader.join().unwrap();
    assert_eq!(c.cmd(&["GET", "other"]), Reply::bulk("400"));
}

#[test]
fn a_long_script_makes_others_busy_until_killed() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "50"]);
    let mut runner = srv.raw();
    runner.send_raw(&Raw::encode(&[b"EVAL", b"while true do end", b"0"]));
    let start = Instant::now();
    loop {
        match c.cmd(&["PING"]) {
            Reply::Error(e) if e.starts_with("BUSY Redis is busy running a script.") => break,
            _ => assert!(start.elapsed() < Duration::from_secs(10), "never BUSY"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Another script waits for its turn, then is refused as in Redis.
    err_starting(srv.raw().cmd(&["EVAL", "return 1", "0"]), "BUSY Redis is busy running a script.");
    assert_eq!(c.cmd(&["SCRIPT", "KILL"]), Reply::Simple("OK".into()));
    err_starting(runner.read(), "ERR Script killed by user with SCRIPT KILL");
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(
        c.cmd(&["SCRIPT", "KILL"]),
        Reply::Error("NOTBUSY No scripts in execution right now.".into())
    );
    // A script that wrote cannot be killed. A kill that comes before its first write stops
    // it with nothing written (regression: the two raced, and a kill answered OK could
    // stop the script after its write); then it is tried again.
    let script = "redis.call('set', 'w', 1) local i = 0 while i < 3e7 do i = i + 1 end return i";
    for attempt in 0.. {
        assert!(attempt < 20, "never UNKILLABLE");
        runner.send_raw(&Raw::encode(&[b"EVAL", script.as_bytes(), b"0"]));
        let start = Instant::now();
        let killed = loop {
            match c.cmd(&["SCRIPT", "KILL"]) {
                Reply::Error(e) if e.starts_with("UNKILLABLE") => break false,
                Reply::Simple(ok) if ok == "OK" => break true,
                _ => assert!(start.elapsed() < Duration::from_secs(10), "never running"),
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if !killed {
            assert!(matches!(runner.read(), Reply::Int(_)));
            assert_eq!(c.cmd(&["GET", "w"]), Reply::bulk("1"));
            break;
        }
        err_starting(runner.read(), "ERR Script killed by user with SCRIPT KILL");
        assert_eq!(c.cmd(&["GET", "w"]), Reply::Null, "killed after its write");
    }
}

#[test]
fn a_script_leaves_its_connection_thread_to_the_others() {
    // One connection thread: the function's connection, the one that watches and kills it
    // and a writer all share it. The function runs on a blocking thread; the writer's SET
    // waits for it as a task until busy-reply-threshold, then is refused as by Redis.
    let srv = Server::start(&["--io-threads", "1"]);
    let mut c = srv.raw();
    c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "1000"]);
    let lib =
        "#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), Reply::bulk("spinlib"));
    let mut runner = srv.raw();
    runner.send_raw(&Raw::encode(&[b"FCALL", b"spin", b"0"]));
    let start = Instant::now();
    // FUNCTION STATS: ["running_script", nil or what runs, "engines", ...].
    let running = |r: Reply| match r {
        Reply::Array(items) => !matches!(items.get(1), Some(Reply::Null) | None),
        other => panic!("{other:?}"),
    };
    while !running(c.cmd(&["FUNCTION", "STATS"])) {
        assert!(start.elapsed() < Duration::from_secs(10), "the function never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut writer = srv.raw();
    let sent = Instant::now();
    writer.send_raw(&Raw::encode(&[b"SET", b"k", b"v"]));
    // Served meanwhile: a read of one key does not wait for the function.
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Null);
    err_starting(writer.read(), "BUSY Redis is busy running a script.");
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert_eq!(c.cmd(&["FUNCTION", "KILL"]), Reply::Simple("OK".into()));
    err_starting(runner.read(), "ERR Script killed by user with");
    assert_eq!(writer.cmd(&["SET", "k", "v"]), Reply::Simple("OK".into()));
    assert_eq!(runner.cmd(&["GET", "k"]), Reply::bulk("v"));
}

#[test]
fn a_write_racing_a_starting_script_never_holds_its_connection_thread() {
    // Regression: a write that had looked (no script, its stripe free) could be overtaken by
    // a script taking every stripe, and then waited for the whole script on its thread. With
    // one connection thread, the SCRIPT KILL below shares that thread with the writer and was
    // never answered. Each round starts an endless script while pipelined SETs stream in.
    let srv = Server::start(&["--io-threads", "1"]);
    let mut c = srv.raw();
    c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "600000"]);
    for round in 0..20 {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (mut w, stop) = (srv.raw(), stop.clone());
            std::thread::spawn(move || {
                let mut batch = Vec::new();
                for i in 0..32 {
                    let key = format!("k{i}");
                    batch.extend(Raw::encode(&[b"SET", key.as_bytes(), b"v"]));
                }
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    w.send_raw(&batch);
                    for _ in 0..32 {
                        assert_eq!(w.read(), Reply::Simple("OK".into()));
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        let mut runner = srv.raw();
        runner.send_raw(&Raw::encode(&[b"EVAL", b"while true do end", b"0"]));
        let start = Instant::now();
        loop {
            let asked = Instant::now();
            let reply = c.cmd(&["SCRIPT", "KILL"]);
            assert!(asked.elapsed() < Duration::from_secs(5), "round {round}: SCRIPT KILL waited");
            match reply {
                Reply::Simple(ok) if ok == "OK" => break,
                Reply::Error(e) if e.starts_with("NOTBUSY") => {}
                other => panic!("round {round}: {other:?}"),
            }
            assert!(start.elapsed() < Duration::from_secs(10), "round {round}: never ran");
        }
        err_starting(runner.read(), "ERR Script killed by user with SCRIPT KILL");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
    }
}

#[test]
fn clients_blocked_on_what_a_script_wrote_are_served_after_it() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut waiter = srv.raw();
    waiter.send_raw(&Raw::encode(&[b"BLPOP", b"q", b"0"]));
    let start = Instant::now();
    while !matches!(c.cmd(&["INFO", "clients"]), Reply::Bulk(b) if String::from_utf8_lossy(&b).contains("blocked_clients:1"))
    {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        c.cmd(&["EVAL", "redis.call('rpush', 'q', 'a', 'b') return redis.call('llen', 'q')", "0"]),
        Reply::Int(2)
    );
    assert_eq!(waiter.read(), Reply::Array(vec![Reply::bulk("q"), Reply::bulk("a")]));
    assert_eq!(c.cmd(&["LRANGE", "q", "0", "-1"]), Reply::Array(vec![Reply::bulk("b")]));
}

/// Checked against redis-server 7.0.15: error statistics count a script's own errors once
/// (a command's error it passes on was counted when the command failed), `error_reply`
/// shapes its code as Redis does, `min-replicas-to-write` refuses writes (a standalone server
/// has no replicas) and scripts that may write, `cmsgpack` is there, a call may take
/// thousands of arguments, and INFO counts the cached scripts.
#[test]
fn script_errors_replicas_msgpack_and_many_arguments() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let stat = |c: &mut Raw, code: &str| -> Option<String> {
        let Reply::Bulk(info) = c.cmd(&["INFO", "errorstats"]) else { panic!() };
        let info = String::from_utf8(info).unwrap();
        let line = info.lines().find(|l| l.starts_with(&format!("errorstat_{code}:")))?;
        Some(line.split_once(':').unwrap().1.to_string())
    };
    c.cmd(&["CONFIG", "RESETSTAT"]);
    err_starting(
        c.cmd(&["EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", "0"]),
        "MY_ERR_CODE custom msg",
    );
    assert_eq!(stat(&mut c, "MY_ERR_CODE").as_deref(), Some("count=1"));
    assert_eq!(c.cmd(&["EVAL", "return redis.error_reply('')", "0"]), Reply::Error("ERR ".into()));
    c.cmd(&["SET", "s", "abc"]);
    err_starting(
        c.cmd(&["EVAL", "return redis.call('incr', 's')", "0"]),
        "ERR value is not an integer",
    );
    err_starting(
        c.cmd(&["EVAL", "return redis.pcall('incr', 's')", "0"]),
        "ERR value is not an integer",
    );
    err_starting(
        c.cmd(&["EVAL", "return redis.call('incr', 's', 'x')", "0"]),
        "ERR Wrong number of args",
    );
    // The empty error_reply, two INCRs, the refused call: one each.
    assert_eq!(stat(&mut c, "ERR").as_deref(), Some("count=4"));

    c.cmd(&["SET", "x", "some value"]);
    assert_eq!(c.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "min-slaves-to-write"]),
        Reply::Array(vec![Reply::bulk("min-slaves-to-write"), Reply::bulk("1")])
    );
    err_starting(c.cmd(&["SET", "x", "1"]), "NOREPLICAS Not enough good replicas to write.");
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("some value"));
    let get = "return redis.call('get', KEYS[1])";
    assert_eq!(
        c.cmd(&["EVAL", &format!("#!lua flags=no-writes\n{get}"), "1", "x"]),
        Reply::bulk("some value")
    );
    assert_eq!(c.cmd(&["EVAL", get, "1", "x"]), Reply::bulk("some value"));
    err_starting(c.cmd(&["EVAL", &format!("#!lua\n{get}"), "1", "x"]), "NOREPLICAS");
    err_starting(c.cmd(&["EVAL", "return redis.call('set', KEYS[1], 1)", "1", "x"]), "NOREPLICAS");
    c.cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"]);
    assert_eq!(c.cmd(&["SET", "x", "1"]), Reply::Simple("OK".into()));

    let hex = "local e = cmsgpack.pack(ARGV[1] + 0) local h = '' for i = 1, #e do \
               h = h .. string.format('%02x', string.byte(e, i)) end return h";
    assert_eq!(c.cmd(&["EVAL", hex, "0", "-1099511627776"]), Reply::bulk("d3ffffff0000000000"));
    let massive =
        "local a = {} for i = 1, 7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))";
    assert_eq!(c.cmd(&["EVAL", massive, "0"]), Reply::Int(7999));

    // XREAD and XREADGROUP may not block from a script; CLUSTER RESET is not run from one.
    c.cmd(&["XGROUP", "CREATE", "st", "g", "$", "MKSTREAM"]);
    let read = "return redis.pcall('xread', 'STREAMS', KEYS[1], '$')";
    assert_eq!(c.cmd(&["EVAL", read, "1", "st"]), Reply::Null);
    let block = "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')";
    err_starting(
        c.cmd(&["EVAL", block, "1", "st"]),
        "ERR xread command is not allowed with BLOCK option from scripts",
    );
    let block =
        "return redis.pcall('XREADGROUP', 'group', 'g', 'c', 'BLOCK', 0, 'STREAMS', KEYS[1], '>')";
    err_starting(
        c.cmd(&["EVAL", block, "1", "st"]),
        "ERR XREADGROUP command is not allowed with BLOCK",
    );
    err_starting(
        c.cmd(&["EVAL", "return redis.call('cluster', 'reset', 'hard')", "0"]),
        "ERR This Redis command is not allowed from script",
    );

    c.cmd(&["SCRIPT", "FLUSH"]);
    for j in 0..5 {
        c.cmd(&["SCRIPT", "LOAD", &format!("return {j}")]);
    }
    let Reply::Bulk(info) = c.cmd(&["INFO", "memory"]) else { panic!() };
    assert!(String::from_utf8(info).unwrap().contains("number_of_cached_scripts:5\r\n"));
}

/// Checked against redis-server 7.0.15: function names are case-insensitive, FCALL's count
/// error, FUNCTION FLUSH's extra argument, and a name registered twice in one library is
/// reported as that before any collision with another library.
#[test]
fn function_names_and_their_errors() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let lib = "#!lua name=lib1\nredis.register_function('test', function() return 'hello1' end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), Reply::bulk("lib1"));
    assert_eq!(c.cmd(&["FCALL", "TEST", "0"]), Reply::bulk("hello1"));
    err_starting(c.cmd(&["FCALL", "test", "bad_arg"]), "ERR Bad number of keys provided");
    let twice = "#!lua name=lib2\nredis.register_function('Test', function() return 1 end)\n\
                 redis.register_function('x', function() return 1 end)\n\
                 redis.register_function('x', function() return 1 end)";
    err_starting(c.cmd(&["FUNCTION", "LOAD", twice]), "ERR Function already exists in the library");
    let case_twice = "#!lua name=lib2\nredis.register_function('Test', function() return 1 end)\n\
                      redis.register_function('x', function() return 1 end)\n\
                      redis.register_function('X', function() return 1 end)";
    err_starting(c.cmd(&["FUNCTION", "LOAD", case_twice]), "ERR Function Test already exists");
    let other = "#!lua name=lib2\nredis.register_function('TEST', function() return 1 end)";
    err_starting(c.cmd(&["FUNCTION", "LOAD", other]), "ERR Function TEST already exists");
    let quoted = "#!lua name=\"foo\"\nredis.register_function('foo', function() return 1 end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", quoted]), Reply::bulk("foo"));
    err_starting(
        c.cmd(&["function", "flush", "sync", "extra"]),
        "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.",
    );
    err_starting(
        c.cmd(&["FUNCTION", "FLUSH", "bad_arg"]),
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
    );
}

/// A function that kept the load-time `redis` cannot register functions after the load.
#[test]
fn registering_outside_the_load_is_refused() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let lib = "#!lua name=lib1\nlocal lib = redis\n\
               lib.register_function('f2', function() lib.register_function('f1', function() return 1 end) end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), Reply::bulk("lib1"));
    err_starting(
        c.cmd(&["FCALL", "f2", "0"]),
        "ERR redis.register_function can only be called on FUNCTION LOAD command",
    );
    err_starting(c.cmd(&["FCALL", "f1", "0"]), "ERR Function not found");
}

/// A replaced or deleted function library's memory goes at once, and a stream of scripts
/// leaves no garbage growing: INFO's `used_memory_lua` stays near where it started (Redis's
/// "does not leak in the Lua stack" test, in both forms).
#[test]
fn replaced_libraries_and_repeated_scripts_leave_the_lua_heap_where_it_was() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let lua_heap = |c: &mut Raw| -> u64 {
        let Reply::Bulk(t) = c.cmd(&["INFO", "memory"]) else { panic!() };
        let t = String::from_utf8(t).unwrap();
        let v = t.lines().find_map(|l| l.strip_prefix("used_memory_lua:")).unwrap();
        v.trim().parse().unwrap()
    };
    let lib = "#!lua name=test\nredis.register_function('test', function(KEYS, ARGV) \
               return redis.call('incr', KEYS[1]) end)";
    let mut pipeline = Vec::new();
    for _ in 0..3000 {
        pipeline.extend(Raw::encode(&[b"FUNCTION", b"LOAD", b"REPLACE", lib.as_bytes()]));
        pipeline.extend(Raw::encode(&[b"FCALL", b"test", b"1", b"x"]));
    }
    c.cmd(&["FUNCTION", "LOAD", lib]);
    let start = lua_heap(&mut c);
    c.send_raw(&pipeline);
    for _ in 0..6000 {
        c.read();
    }
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("3000"));
    let after = lua_heap(&mut c);
    assert!(after < start + start / 2, "{start} bytes, then {after} after 3,000 replacements");
    let mut evals = Vec::new();
    for _ in 0..5000 {
        evals.extend(Raw::encode(&[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"y"]));
    }
    c.send_raw(&evals);
    for _ in 0..5000 {
        c.read();
    }
    let after = lua_heap(&mut c);
    assert!(after < start * 2, "{start} bytes, then {after} after 5,000 runs");
}

/// Regression: functions run in their own interpreter, as in Redis, so thousands of library
/// loads leave nothing in the scripts' heap (`used_memory_lua`, which Redis's "EVAL does not
/// leak in the Lua stack" reads in its FUNCTION pass), and their heap is
/// `used_memory_vm_functions`.
#[test]
fn functions_have_an_interpreter_of_their_own() {
    let mut srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SCRIPT", "FLUSH"]);
    let lib = "#!lua name=test\nredis.register_function('test', function(KEYS, ARGV) \
               return redis.call('incr', KEYS[1]) end)";
    // Pipelined a thousand loads and calls at a time.
    let mut calls = 0;
    for _ in 0..4 {
        let mut batch = Vec::new();
        for _ in 0..1_000 {
            batch.extend(Raw::encode(&[b"FUNCTION", b"LOAD", b"REPLACE", lib.as_bytes()]));
            batch.extend(Raw::encode(&[b"FCALL", b"test", b"1", b"x"]));
        }
        c.send_raw(&batch);
        for _ in 0..1_000 {
            calls += 1;
            assert_eq!(c.read_from(&mut srv), Reply::bulk("test"), "load {calls}");
            assert_eq!(c.read_from(&mut srv), Reply::Int(calls), "call {calls}");
        }
    }
    let field = |c: &mut Raw, f: &str| -> u64 {
        crate::common::info_field(c, "memory", f).parse().unwrap()
    };
    let lua = field(&mut c, "used_memory_lua");
    assert!(lua < 100 * 1024, "{lua} bytes in the scripts' interpreter");
    let functions = field(&mut c, "used_memory_vm_functions");
    assert!(functions > 0);
    assert_eq!(field(&mut c, "used_memory_vm_total"), lua + functions);
}
