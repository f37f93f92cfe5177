//! maxmemory: over the limit, what Redis 7.0 refuses is refused with its OOM reply (commands,
//! MULTI and EXEC, scripts and functions by their flags) while reads and DISCARD run and no
//! key is evicted; below a limit the block cache fits under, the cache gives its blocks back
//! and nothing is refused.

use crate::common::{info_field, Raw, Reply, Server};

const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

fn ok(r: Reply) {
    assert_eq!(r, Reply::Simple("OK".into()));
}

fn err(r: Reply, text: &str) {
    match r {
        Reply::Error(e) => assert!(e.starts_with(text), "{e:?} does not start with {text:?}"),
        other => panic!("{other:?} is no error"),
    }
}

fn stat_line(c: &mut Raw, section: &str, name: &str) -> String {
    let Reply::Bulk(info) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
    let info = String::from_utf8(info).unwrap();
    info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_default().to_string()
}

/// Checked against redis-server 7.0.15, the same commands in the same order.
#[test]
fn over_maxmemory_what_may_grow_memory_is_refused_as_redis_refuses_it() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut admin = srv.raw();
    ok(c.cmd(&["SET", "x", "123"]));
    let register = "#!lua name=lib\n\
                    redis.register_function('plain', function() return redis.call('set', 'x', 'f') end)\n\
                    redis.register_function{function_name='roomy', callback=function() \
                    return redis.call('set', 'x', 'r') end, flags={'allow-oom'}}";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", register]), Reply::bulk("lib"));
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
    ok(c.cmd(&["CONFIG", "RESETSTAT"]));

    // A denyoom command is refused and counted as rejected; reads and deletions run.
    err(c.cmd(&["SET", "x", "1"]), OOM);
    err(c.cmd(&["LPUSH", "l", "a"]), OOM);
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("123"));
    assert_eq!(c.cmd(&["DEL", "absent"]), Reply::Int(0));
    assert!(stat_line(&mut c, "commandstats", "cmdstat_set")
        .ends_with("calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0"));
    assert_eq!(stat_line(&mut c, "errorstats", "errorstat_OOM"), "errorstat_OOM:count=2");

    // Inside MULTI every command but EXEC/DISCARD is refused, and dooms the transaction.
    ok(c.cmd(&["MULTI"]));
    err(c.cmd(&["GET", "x"]), OOM);
    err(c.cmd(&["EXEC"]), "EXECABORT Transaction discarded because of previous errors.");
    ok(c.cmd(&["MULTI"]));
    err(c.cmd(&["SET", "x", "1"]), OOM);
    ok(c.cmd(&["DISCARD"]));
    // A transaction queued before: its EXEC runs if it only reads, is refused if it writes.
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    ok(c.cmd(&["MULTI"]));
    assert_eq!(c.cmd(&["GET", "x"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Array(vec![Reply::bulk("123"), Reply::Simple("PONG".into())])
    );
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    ok(c.cmd(&["MULTI"]));
    assert_eq!(c.cmd(&["SET", "x", "1"]), Reply::Simple("QUEUED".into()));
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Error(format!("EXECABORT Transaction discarded because of: {OOM}"))
    );
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("123"));

    // Scripts: without flags, refused at the first denyoom call unless they wrote before it;
    // with flags, refused up front unless `allow-oom` or `no-writes`.
    err(c.cmd(&["EVAL", "redis.call('set', KEYS[1], 1) return 1", "1", "x"]), OOM);
    let pcall = "local t = redis.pcall('set', KEYS[1], 1) return t['err']";
    assert_eq!(c.cmd(&["EVAL", pcall, "1", "x"]), Reply::bulk(OOM));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", "x"]), Reply::bulk("123"));
    let wrote_first = "redis.call('del', KEYS[2]) return redis.call('set', KEYS[2], 'v')";
    assert_eq!(c.cmd(&["EVAL", wrote_first, "2", "x", "y"]), Reply::Simple("OK".into()));
    err(c.cmd(&["EVAL", "#!lua flags=\nreturn 1", "0"]), OOM);
    assert_eq!(
        c.cmd(&["EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "x"]),
        Reply::bulk("123")
    );
    let roomy = "#!lua flags=allow-oom\nredis.call('set', KEYS[1], 'e') return 1";
    assert_eq!(c.cmd(&["EVAL", roomy, "1", "x"]), Reply::Int(1));
    // Functions by their flags; FUNCTION LOAD is denyoom.
    err(c.cmd(&["FCALL", "plain", "1", "x"]), OOM);
    assert_eq!(c.cmd(&["FCALL", "roomy", "1", "x"]), Reply::Simple("OK".into()));
    err(c.cmd(&["FUNCTION", "LOAD", "REPLACE", register]), OOM);

    // Nothing was evicted; the limit lifted, writes run again.
    ok(admin.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2));
    ok(c.cmd(&["SET", "x", "1"]));
    err(
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "lru"]),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) \
         must be one of the following: volatile-lru",
    );
    ok(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]));
}

/// The block cache's usage (INFO strata's `strata_block_cache`).
fn cached(c: &mut Raw) -> u64 {
    let line = info_field(c, "strata", "strata_block_cache");
    let usage = line.split(',').next().and_then(|u| u.strip_prefix("usage="));
    usage.unwrap_or_else(|| panic!("{line}")).parse().unwrap()
}

/// The block cache is what gives room: with a limit below what the server holds but above
/// what it holds besides the cache, nothing is refused and the figures come under the limit.
#[test]
fn the_block_cache_gives_its_blocks_back_before_anything_is_refused() {
    let srv = Server::start(&["--block-cache-size", "33554432"]);
    let mut c = srv.raw();
    let value = "v".repeat(1000);
    for chunk in 0..40 {
        let mut args = vec!["MSET".to_string()];
        for i in 0..500 {
            args.push(format!("k{}", chunk * 500 + i));
            args.push(value.clone());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(c.cmd(&args));
    }
    ok(c.cmd(&["SAVE"]));
    for i in 0..20_000 {
        c.cmd(&["GET", &format!("k{i}")]);
    }
    let used: u64 = info_field(&mut c, "memory", "used_memory").parse().unwrap();
    let cache = cached(&mut c);
    assert!(cache > 8 << 20, "the reads filled {cache} bytes of cache");
    let limit = used - cache / 2;
    ok(c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]));
    ok(c.cmd(&["SET", "k0", "w"]));
    let now: u64 = info_field(&mut c, "memory", "used_memory").parse().unwrap();
    assert!(now <= limit, "{now} bytes counted over a limit of {limit}");
    assert_eq!(c.cmd(&["GET", "k1"]), Reply::bulk(&value));
    // The limit lifted, the cache fills again up to its configured size.
    ok(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    for i in 0..20_000 {
        c.cmd(&["GET", &format!("k{i}")]);
    }
    let refilled = cached(&mut c);
    assert!(refilled > cache / 2 + (1 << 20), "{refilled} bytes cached after the limit lifted");
}

/// Checked against redis-server 7.0.15: under an LFU policy OBJECT FREQ answers (5 for a new
/// key, raised by a use) and IDLETIME is refused, RESTORE's FREQ sets the counter; under the
/// others FREQ is refused.
#[test]
fn object_freq_counts_uses_under_an_lfu_policy() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    ok(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]));
    ok(c.cmd(&["SET", "k", "v"]));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Reply::Int(5));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Reply::Int(6));
    err(c.cmd(&["OBJECT", "IDLETIME", "k"]), "ERR An LFU maxmemory policy is selected, idle time");
    let Reply::Bulk(payload) = c.cmd(&["DUMP", "k"]) else { panic!("DUMP") };
    let restore = [b"RESTORE".as_slice(), b"r", b"0", &payload, b"FREQ", b"100"];
    c.send_raw(&Raw::encode(&restore));
    ok(c.read());
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "r"]), Reply::Int(100));
    ok(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]));
    err(c.cmd(&["OBJECT", "FREQ", "k"]), "ERR An LFU maxmemory policy is not selected");
    assert_eq!(c.cmd(&["OBJECT", "IDLETIME", "k"]), Reply::Int(0));
}
