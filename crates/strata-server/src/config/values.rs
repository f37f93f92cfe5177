//! Whether a value is one a parameter takes, with Redis's reason when it is not: the one rule
//! for CONFIG SET (which prefixes Redis's `CONFIG SET failed` to the reason) and for the
//! config file (which names the file and line, and refuses to start, as redis-server does).
//!
//! The parameters this server acts on are checked by their own bounds (Redis's); the others
//! Redis has are checked by their default's shape ([`redis_params::check`]); a name neither
//! knows is not checked here.

use super::redis_params;
use crate::storage::SyncPolicy;
use crate::types::notify;
use std::borrow::Cow;

/// Redis 7.0's `maxmemory-policy` values (none evicts a key here: `commands::oom`).
const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

const NOT_INT: &str = "argument couldn't be parsed into an integer";

/// Whether `raw` is a value parameter `k` (lower case) takes; Redis's reason if not.
pub fn check(k: &str, raw: &[u8]) -> Result<(), Cow<'static, str>> {
    let v = String::from_utf8_lossy(raw);
    match k {
        "maxmemory" | "proto-max-bulk-len" | "stream-node-max-bytes" | "hll-sparse-max-bytes"
            if super::parse_size(&v).is_none() =>
        {
            Err("argument must be a memory value".into())
        }
        "maxmemory-policy" if !MAXMEMORY_POLICIES.iter().any(|o| v.eq_ignore_ascii_case(o)) => {
            Err("argument(s) must be one of the following: volatile-lru, volatile-lfu, \
                 volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, \
                 noeviction"
                .into())
        }
        "sanitize-dump-payload"
            if !["no", "yes", "clients"].iter().any(|o| v.eq_ignore_ascii_case(o)) =>
        {
            Err("argument(s) must be one of the following: no, yes, clients".into())
        }
        "client-output-buffer-limit" => {
            super::output_limit_groups(&v).map(|_| ()).map_err(Cow::Borrowed)
        }
        "enable-debug-command" | "enable-module-command" | "enable-protected-configs" => {
            if ["no", "yes", "local"].iter().any(|o| v.eq_ignore_ascii_case(o)) {
                Ok(())
            } else {
                Err("argument(s) must be one of the following: no, yes, local".into())
            }
        }
        // Redis's bounds: -1 (off) up, and 0 up.
        "slowlog-log-slower-than"
        | "slowlog-max-len"
        | "tracking-table-max-keys"
        | "latency-monitor-threshold" => {
            let least = if k == "slowlog-log-slower-than" { -1 } else { 0 };
            match v.parse::<i64>() {
                Err(_) => Err(NOT_INT.into()),
                Ok(n) if n < least => {
                    Err(format!("argument must be between {least} and {} inclusive", i64::MAX)
                        .into())
                }
                Ok(_) => Ok(()),
            }
        }
        "active-expire-effort" => match v.parse::<i64>() {
            Err(_) => Err(NOT_INT.into()),
            Ok(n) if !(1..=10).contains(&n) => {
                Err("argument must be between 1 and 10 inclusive".into())
            }
            Ok(_) => Ok(()),
        },
        "latency-tracking-info-percentiles"
            if !v
                .split_whitespace()
                .all(|p| p.parse::<f64>().is_ok_and(|p| (0.0..=100.0).contains(&p))) =>
        {
            Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                .into())
        }
        // Negative: a size class of list node (Redis's -5 to -1), so any int.
        "list-max-listpack-size" | "list-max-ziplist-size" if v.parse::<i32>().is_err() => {
            Err(NOT_INT.into())
        }
        "stream-node-max-entries" if v.parse::<u64>().is_err() => Err(NOT_INT.into()),
        "notify-keyspace-events" if notify::parse_classes(raw).is_none() => {
            Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
        }
        "maxclients"
        | "timeout"
        | "tcp-keepalive"
        | "hz"
        | "list-compress-depth"
        | "set-max-intset-entries"
        | "zset-max-listpack-entries"
        | "zset-max-listpack-value"
        | "zset-max-ziplist-entries"
        | "zset-max-ziplist-value"
        | "lua-time-limit"
        | "busy-reply-threshold"
        | "min-replicas-to-write"
        | "min-slaves-to-write"
        | "min-replicas-max-lag"
        | "min-slaves-max-lag"
            if v.parse::<u32>().is_err() =>
        {
            Err(NOT_INT.into())
        }
        "appendfsync" if SyncPolicy::parse(&v).is_none() => {
            Err("argument(s) must be one of the following: always, everysec, no".into())
        }
        "hash-max-listpack-entries"
        | "hash-max-listpack-value"
        | "hash-max-ziplist-entries"
        | "hash-max-ziplist-value"
            if super::parse_size(&v).and_then(|n| usize::try_from(n).ok()).is_none() =>
        {
            Err(NOT_INT.into())
        }
        // Redis's parameters kept without effect, by their default's shape.
        _ => redis_params::check(k, &v).map_err(Cow::Borrowed),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn values_are_checked_by_the_parameters_bounds_and_shapes() {
        assert!(check("slowlog-max-len", b"0").is_ok());
        assert_eq!(
            check("slowlog-max-len", b"-1").unwrap_err(),
            format!("argument must be between 0 and {} inclusive", i64::MAX)
        );
        assert!(check("slowlog-log-slower-than", b"-1").is_ok());
        assert!(check("tracking-table-max-keys", b"many").is_err());
        assert!(check("hz", b"ten").is_err());
        assert!(check("active-expire-effort", b"10").is_ok());
        assert_eq!(
            check("active-expire-effort", b"11").unwrap_err(),
            "argument must be between 1 and 10 inclusive"
        );
        assert!(check("appendfsync", b"sometimes").is_err());
        assert!(check("maxmemory", b"1gb").is_ok());
        assert!(check("repl-backlog-ttl", b"1kb").is_err(), "by its default's shape");
        assert!(check("no-such-parameter", b"anything").is_ok());
    }
}
