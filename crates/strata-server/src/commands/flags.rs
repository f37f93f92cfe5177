//! What COMMAND says of each command beside its arity and key positions: Redis 7's command
//! flags (`write`, `readonly`, `fast`, `pubsub`, ...) and ACL categories (`@read`,
//! `@string`, ...), as clients read them. redis-py's cluster client finds a command's keys by
//! the flags (`movablekeys`: ask COMMAND GETKEYS; `pubsub`: the channel), go-redis's tells
//! reads (`readonly`) from writes, and `COMMAND LIST FILTERBY ACLCAT` selects by category.
//!
//! [`TABLE`] holds, per command, the flags Redis 7.0 reports for it but `movablekeys` where
//! that follows from the key table (`KeySpec::movable`; SORT_RO's keys are all fixed here, but
//! Redis calls them movable, so its entry says so) and the categories that do not follow from
//! the flags; [`categories`] adds those as Redis does (`write` gives `@write`, `readonly`
//! `@read` outside scripting, `admin` `@admin` and `@dangerous`, `pubsub` `@pubsub`, `fast`
//! `@fast` and its absence `@slow`, `blocking` `@blocking`). Both are listed in Redis's order.
//! A container command (CONFIG, CLIENT, OBJECT, ...) has the container's own entry, as in
//! Redis, where its subcommands carry theirs (`subcommands.rs`).

use super::Command;

/// Command flags in the order COMMAND lists them (`movablekeys` last).
pub const FLAG_ORDER: &[&str] = &[
    "write",
    "readonly",
    "denyoom",
    "admin",
    "pubsub",
    "noscript",
    "blocking",
    "loading",
    "stale",
    "skip_monitor",
    "skip_slowlog",
    "fast",
    "no_auth",
    "may_replicate",
    "no_mandatory_keys",
    "no_async_loading",
    "no_multi",
    "allow_busy",
    "movablekeys",
];

/// ACL categories in the order COMMAND lists them (without their `@`).
pub const CATEGORY_ORDER: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Per command, sorted by name: its flags but a `movablekeys` its keys give, and its
/// categories that the flags do not give (module doc), each a space-separated list in the
/// orders above.
pub static TABLE: &[(&str, &str, &str)] = &[
    ("acl", "", ""),
    ("append", "write denyoom fast", "string"),
    ("asking", "fast", "connection"),
    ("auth", "noscript loading stale fast no_auth allow_busy", "connection"),
    ("bgrewriteaof", "admin noscript no_async_loading", ""),
    ("bgsave", "admin noscript no_async_loading", ""),
    ("bitcount", "readonly", "bitmap"),
    ("bitfield", "write denyoom", "bitmap"),
    ("bitfield_ro", "readonly fast", "bitmap"),
    ("bitop", "write denyoom", "bitmap"),
    ("bitpos", "readonly", "bitmap"),
    ("blmove", "write denyoom noscript blocking", "list"),
    ("blmpop", "write blocking", "list"),
    ("blpop", "write noscript blocking", "list"),
    ("brpop", "write noscript blocking", "list"),
    ("brpoplpush", "write denyoom noscript blocking", "list"),
    ("bzmpop", "write blocking", "sortedset"),
    ("bzpopmax", "write noscript blocking fast", "sortedset"),
    ("bzpopmin", "write noscript blocking fast", "sortedset"),
    ("client", "", ""),
    ("cluster", "", ""),
    ("command", "loading stale", "connection"),
    ("config", "", ""),
    ("copy", "write denyoom", "keyspace"),
    ("dbsize", "readonly fast", "keyspace"),
    ("debug", "admin noscript loading stale", ""),
    ("decr", "write denyoom fast", "string"),
    ("decrby", "write denyoom fast", "string"),
    ("del", "write", "keyspace"),
    ("discard", "noscript loading stale fast allow_busy", "transaction"),
    ("dump", "readonly", "keyspace"),
    ("echo", "loading stale fast", "connection"),
    ("eval", "noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("eval_ro", "readonly noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("evalsha", "noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("evalsha_ro", "readonly noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("exec", "noscript loading stale skip_slowlog", "transaction"),
    ("exists", "readonly fast", "keyspace"),
    ("expire", "write fast", "keyspace"),
    ("expireat", "write fast", "keyspace"),
    ("expiretime", "readonly fast", "keyspace"),
    ("failover", "admin noscript stale", ""),
    ("fcall", "noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("fcall_ro", "readonly noscript stale skip_monitor no_mandatory_keys", "scripting"),
    ("flushall", "write", "keyspace dangerous"),
    ("flushdb", "write", "keyspace dangerous"),
    ("function", "", ""),
    ("geoadd", "write denyoom", "geo"),
    ("geodist", "readonly", "geo"),
    ("geohash", "readonly", "geo"),
    ("geopos", "readonly", "geo"),
    ("georadius", "write denyoom", "geo"),
    ("georadius_ro", "readonly", "geo"),
    ("georadiusbymember", "write denyoom", "geo"),
    ("georadiusbymember_ro", "readonly", "geo"),
    ("geosearch", "readonly", "geo"),
    ("geosearchstore", "write denyoom", "geo"),
    ("get", "readonly fast", "string"),
    ("getbit", "readonly fast", "bitmap"),
    ("getdel", "write fast", "string"),
    ("getex", "write fast", "string"),
    ("getrange", "readonly", "string"),
    ("getset", "write denyoom fast", "string"),
    ("hdel", "write fast", "hash"),
    ("hello", "noscript loading stale fast no_auth allow_busy", "connection"),
    ("hexists", "readonly fast", "hash"),
    ("hget", "readonly fast", "hash"),
    ("hgetall", "readonly", "hash"),
    ("hincrby", "write denyoom fast", "hash"),
    ("hincrbyfloat", "write denyoom fast", "hash"),
    ("hkeys", "readonly", "hash"),
    ("hlen", "readonly fast", "hash"),
    ("hmget", "readonly fast", "hash"),
    ("hmset", "write denyoom fast", "hash"),
    ("hrandfield", "readonly", "hash"),
    ("hscan", "readonly", "hash"),
    ("hset", "write denyoom fast", "hash"),
    ("hsetnx", "write denyoom fast", "hash"),
    ("hstrlen", "readonly fast", "hash"),
    ("hvals", "readonly", "hash"),
    ("incr", "write denyoom fast", "string"),
    ("incrby", "write denyoom fast", "string"),
    ("incrbyfloat", "write denyoom fast", "string"),
    ("info", "loading stale", "dangerous"),
    ("keys", "readonly", "keyspace dangerous"),
    ("lastsave", "loading stale fast", "admin dangerous"),
    ("latency", "", ""),
    ("lcs", "readonly", "string"),
    ("lindex", "readonly", "list"),
    ("linsert", "write denyoom", "list"),
    ("llen", "readonly fast", "list"),
    ("lmove", "write denyoom", "list"),
    ("lmpop", "write", "list"),
    ("lpop", "write fast", "list"),
    ("lpos", "readonly", "list"),
    ("lpush", "write denyoom fast", "list"),
    ("lpushx", "write denyoom fast", "list"),
    ("lrange", "readonly", "list"),
    ("lrem", "write", "list"),
    ("lset", "write denyoom", "list"),
    ("ltrim", "write", "list"),
    ("memory", "", ""),
    ("mget", "readonly fast", "string"),
    ("migrate", "write", "keyspace dangerous"),
    ("monitor", "admin noscript loading stale", ""),
    ("move", "write fast", "keyspace"),
    ("mset", "write denyoom", "string"),
    ("msetnx", "write denyoom", "string"),
    ("multi", "noscript loading stale fast allow_busy", "transaction"),
    ("object", "", ""),
    ("persist", "write fast", "keyspace"),
    ("pexpire", "write fast", "keyspace"),
    ("pexpireat", "write fast", "keyspace"),
    ("pexpiretime", "readonly fast", "keyspace"),
    ("pfadd", "write denyoom fast", "hyperloglog"),
    ("pfcount", "readonly", "hyperloglog"),
    ("pfdebug", "write denyoom admin", "hyperloglog"),
    ("pfmerge", "write denyoom", "hyperloglog"),
    ("pfselftest", "admin", "hyperloglog"),
    ("ping", "fast", "connection"),
    ("psetex", "write denyoom", "string"),
    ("psubscribe", "pubsub noscript loading stale", ""),
    ("psync", "admin noscript no_async_loading no_multi", ""),
    ("pttl", "readonly fast", "keyspace"),
    ("publish", "pubsub loading stale fast", ""),
    ("pubsub", "", ""),
    ("punsubscribe", "pubsub noscript loading stale", ""),
    ("quit", "noscript loading stale fast no_auth allow_busy", "connection"),
    ("randomkey", "readonly", "keyspace"),
    ("readonly", "loading stale fast", "connection"),
    ("readwrite", "loading stale fast", "connection"),
    ("rename", "write", "keyspace"),
    ("renamenx", "write fast", "keyspace"),
    ("replconf", "admin noscript loading stale allow_busy", ""),
    ("replicaof", "admin noscript stale no_async_loading", ""),
    ("reset", "noscript loading stale fast no_auth allow_busy", "connection"),
    ("restore", "write denyoom", "keyspace dangerous"),
    ("role", "noscript loading stale fast", "admin dangerous"),
    ("rpop", "write fast", "list"),
    ("rpoplpush", "write denyoom", "list"),
    ("rpush", "write denyoom fast", "list"),
    ("rpushx", "write denyoom fast", "list"),
    ("sadd", "write denyoom fast", "set"),
    ("save", "admin noscript no_async_loading no_multi", ""),
    ("scan", "readonly", "keyspace"),
    ("scard", "readonly fast", "set"),
    ("script", "", ""),
    ("sdiff", "readonly", "set"),
    ("sdiffstore", "write denyoom", "set"),
    ("select", "loading stale fast", "connection"),
    ("set", "write denyoom", "string"),
    ("setbit", "write denyoom", "bitmap"),
    ("setex", "write denyoom", "string"),
    ("setnx", "write denyoom fast", "string"),
    ("setrange", "write denyoom", "string"),
    ("shutdown", "admin noscript loading stale no_multi allow_busy", ""),
    ("sinter", "readonly", "set"),
    ("sintercard", "readonly", "set"),
    ("sinterstore", "write denyoom", "set"),
    ("sismember", "readonly fast", "set"),
    ("slaveof", "admin noscript stale no_async_loading", ""),
    ("slowlog", "", ""),
    ("smembers", "readonly", "set"),
    ("smismember", "readonly fast", "set"),
    ("smove", "write fast", "set"),
    ("sort", "write denyoom", "set sortedset list dangerous"),
    ("sort_ro", "readonly movablekeys", "set sortedset list dangerous"),
    ("spop", "write fast", "set"),
    ("spublish", "pubsub loading stale fast", ""),
    ("srandmember", "readonly", "set"),
    ("srem", "write fast", "set"),
    ("sscan", "readonly", "set"),
    ("ssubscribe", "pubsub noscript loading stale", ""),
    ("strlen", "readonly fast", "string"),
    ("subscribe", "pubsub noscript loading stale", ""),
    ("substr", "readonly", "string"),
    ("sunion", "readonly", "set"),
    ("sunionstore", "write denyoom", "set"),
    ("sunsubscribe", "pubsub noscript loading stale", ""),
    ("swapdb", "write fast", "keyspace dangerous"),
    ("sync", "admin noscript no_async_loading no_multi", ""),
    ("time", "loading stale fast", ""),
    ("touch", "readonly fast", "keyspace"),
    ("ttl", "readonly fast", "keyspace"),
    ("type", "readonly fast", "keyspace"),
    ("unlink", "write fast", "keyspace"),
    ("unsubscribe", "pubsub noscript loading stale", ""),
    ("unwatch", "noscript loading stale fast allow_busy", "transaction"),
    ("wait", "noscript", "connection"),
    ("watch", "noscript loading stale fast allow_busy", "transaction"),
    ("xack", "write fast", "stream"),
    ("xadd", "write denyoom fast", "stream"),
    ("xautoclaim", "write fast", "stream"),
    ("xclaim", "write fast", "stream"),
    ("xdel", "write fast", "stream"),
    ("xgroup", "", ""),
    ("xinfo", "", ""),
    ("xlen", "readonly fast", "stream"),
    ("xpending", "readonly", "stream"),
    ("xrange", "readonly", "stream"),
    ("xread", "readonly blocking", "stream"),
    ("xreadgroup", "write blocking", "stream"),
    ("xrevrange", "readonly", "stream"),
    ("xsetid", "write denyoom fast", "stream"),
    ("xtrim", "write", "stream"),
    ("zadd", "write denyoom fast", "sortedset"),
    ("zcard", "readonly fast", "sortedset"),
    ("zcount", "readonly fast", "sortedset"),
    ("zdiff", "readonly", "sortedset"),
    ("zdiffstore", "write denyoom", "sortedset"),
    ("zincrby", "write denyoom fast", "sortedset"),
    ("zinter", "readonly", "sortedset"),
    ("zintercard", "readonly", "sortedset"),
    ("zinterstore", "write denyoom", "sortedset"),
    ("zlexcount", "readonly fast", "sortedset"),
    ("zmpop", "write", "sortedset"),
    ("zmscore", "readonly fast", "sortedset"),
    ("zpopmax", "write fast", "sortedset"),
    ("zpopmin", "write fast", "sortedset"),
    ("zrandmember", "readonly", "sortedset"),
    ("zrange", "readonly", "sortedset"),
    ("zrangebylex", "readonly", "sortedset"),
    ("zrangebyscore", "readonly", "sortedset"),
    ("zrangestore", "write denyoom", "sortedset"),
    ("zrank", "readonly fast", "sortedset"),
    ("zrem", "write fast", "sortedset"),
    ("zremrangebylex", "write", "sortedset"),
    ("zremrangebyrank", "write", "sortedset"),
    ("zremrangebyscore", "write", "sortedset"),
    ("zrevrange", "readonly", "sortedset"),
    ("zrevrangebylex", "readonly", "sortedset"),
    ("zrevrangebyscore", "readonly", "sortedset"),
    ("zrevrank", "readonly fast", "sortedset"),
    ("zscan", "readonly", "sortedset"),
    ("zscore", "readonly fast", "sortedset"),
    ("zunion", "readonly", "sortedset"),
    ("zunionstore", "write denyoom", "sortedset"),
];

/// The table's entry of the command named `name` (lower case).
fn entry(name: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    TABLE.binary_search_by(|e| e.0.cmp(name)).ok().map(|i| &TABLE[i])
}

/// Whether the table gives command `name` (lower case) the flag `flag` (a command's own
/// entry: a container's subcommands have none here).
pub fn has(name: &str, flag: &str) -> bool {
    entry(name).is_some_and(|e| e.1.split_whitespace().any(|f| f == flag))
}

/// Whether command `c` as `argv` calls it has flag `flag`: its own entry's, or for a
/// container, its subcommand's (`subcommands.rs`).
pub fn line_has(c: &'static Command, argv: &[Vec<u8>], flag: &str) -> bool {
    has(c.name, flag)
        || super::subcommands::subcommand_of(c, argv)
            .is_some_and(|(_, e)| super::subcommands::words(e.2).any(|f| f == flag))
}

/// Whether Redis marks command `name` `may-replicate` without `write` (its
/// `CMD_MAY_REPLICATE`, which COMMAND does not list): a read-only script may not call it and
/// CLIENT PAUSE WRITE holds it. EVAL, EVALSHA and FCALL carry the mark too; whether they may
/// write is their script's (`scripting::declares_no_writes`).
pub fn may_replicate(name: &str) -> bool {
    matches!(name, "publish" | "spublish" | "pfcount")
}

/// The flags COMMAND lists for `c`, in order.
pub fn flags(c: &Command) -> Vec<&'static str> {
    let mut f: Vec<&str> = entry(c.name).map_or("", |e| e.1).split_whitespace().collect();
    if c.keys.movable() && f.last() != Some(&"movablekeys") {
        f.push("movablekeys");
    }
    f
}

/// The ACL categories COMMAND lists for `c` (without their `@`), in order (module doc).
pub fn categories(c: &Command) -> Vec<&'static str> {
    let (flags, explicit) = entry(c.name).map_or(("", ""), |e| (e.1, e.2));
    let has = |list: &str, w: &str| list.split_whitespace().any(|x| x == w);
    let scripting = has(explicit, "scripting");
    CATEGORY_ORDER
        .iter()
        .copied()
        .filter(|&cat| {
            has(explicit, cat)
                || match cat {
                    "write" => has(flags, "write"),
                    "read" => has(flags, "readonly") && !scripting,
                    "admin" | "dangerous" => has(flags, "admin"),
                    "pubsub" => has(flags, "pubsub"),
                    "fast" => has(flags, "fast"),
                    "slow" => !has(flags, "fast"),
                    "blocking" => has(flags, "blocking"),
                    _ => false,
                }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::{lookup, COMMANDS};

    fn listed_in_order(list: &str, order: &[&str]) -> bool {
        let pos: Option<Vec<usize>> =
            list.split_whitespace().map(|w| order.iter().position(|o| *o == w)).collect();
        pos.is_some_and(|p| p.windows(2).all(|w| w[0] < w[1]))
    }

    #[test]
    fn every_command_has_one_entry_and_every_entry_a_command() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no name twice");
        for c in COMMANDS {
            assert!(entry(c.name).is_some(), "{} has no entry", c.name);
        }
        for e in TABLE {
            assert!(lookup(e.0.as_bytes()).is_some(), "{} is no command", e.0);
        }
    }

    #[test]
    fn entries_name_known_flags_and_categories_in_order() {
        for (name, flags, cats) in TABLE {
            assert!(listed_in_order(flags, FLAG_ORDER), "{name}: flags {flags:?}");
            let movable = lookup(name.as_bytes()).is_some_and(|c| c.keys.movable());
            let said = flags.split_whitespace().any(|f| f == "movablekeys");
            assert!(!(said && movable), "{name}: movablekeys follows from its keys");
            assert!(listed_in_order(cats, CATEGORY_ORDER), "{name}: categories {cats:?}");
        }
    }

    #[test]
    fn categories_follow_the_flags_as_redis_derives_them() {
        let of = |n: &str| {
            let c = lookup(n.as_bytes()).unwrap();
            (flags(c).join(" "), categories(c).join(" "))
        };
        assert_eq!(of("get"), ("readonly fast".into(), "read string fast".into()));
        assert_eq!(of("publish"), ("pubsub loading stale fast".into(), "pubsub fast".into()));
        assert_eq!(
            of("eval"),
            (
                "noscript stale skip_monitor no_mandatory_keys movablekeys".into(),
                "slow scripting".into()
            )
        );
        assert_eq!(
            of("eval_ro").1,
            "slow scripting",
            "readonly gives no @read to a scripting command"
        );
        assert_eq!(
            of("blpop"),
            ("write noscript blocking".into(), "write list slow blocking".into())
        );
        assert_eq!(of("flushall").1, "keyspace write slow dangerous");
        assert_eq!(of("save").1, "admin slow dangerous");
        assert_eq!(of("zunionstore").0, "write denyoom movablekeys");
        assert_eq!(of("cluster"), (String::new(), "slow".into()));
        assert_eq!(of("sort_ro").0, "readonly movablekeys", "as Redis, once");
        assert!(has("shutdown", "admin") && has("pfdebug", "admin") && !has("get", "admin"));
        assert!(!has("config", "admin"), "a container's subcommands carry theirs");
    }
}
