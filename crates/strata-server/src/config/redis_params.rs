//! Redis 7.0's configuration parameters beyond this server's own (`Config::params`), with
//! redis-server 7.0.15's defaults: CONFIG GET lists them and CONFIG SET keeps a value of the
//! right shape, with no effect here. They name what this server does not have (replication
//! links, RDB and AOF files, TLS, ACL files, memory policies, logging and process settings),
//! and clients and test suites set them all the same (`docs/redis-compat.md`, "Settings").
//!
//! A value is checked by its default's shape ([`check`]): `yes` or `no` for a flag; an
//! integer for a number, a memory value (`1gb`) for a size in bytes, either or a percentage
//! for `maxmemory-clients`; anything for text (Redis's enums and lists are not checked here).
//! Also the parameters Redis refuses to set at run time: [`IMMUTABLE`] ones and [`PROTECTED`]
//! ones.

/// `client-output-buffer-limit`'s default, Redis 7.0's.
pub const OUTPUT_BUFFER_LIMITS: &str =
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// Parameter and default, sorted by name.
pub static ACCEPTED: &[(&str, &str)] = &[
    ("acl-pubsub-default", "resetchannels"),
    ("aclfile", ""),
    ("acllog-max-len", "128"),
    ("active-defrag-cycle-max", "25"),
    ("active-defrag-cycle-min", "1"),
    ("active-defrag-ignore-bytes", "104857600"),
    ("active-defrag-max-scan-fields", "1000"),
    ("active-defrag-threshold-lower", "10"),
    ("active-defrag-threshold-upper", "100"),
    ("active-expire-effort", "1"),
    ("activedefrag", "no"),
    ("activerehashing", "yes"),
    ("always-show-logo", "no"),
    ("aof-disable-auto-gc", "no"),
    ("aof-load-truncated", "yes"),
    ("aof-rewrite-incremental-fsync", "yes"),
    ("aof-timestamp-enabled", "no"),
    ("aof-use-rdb-preamble", "yes"),
    ("aof_rewrite_cpulist", ""),
    ("appenddirname", "appendonlydir"),
    ("appendfilename", "appendonly.aof"),
    ("auto-aof-rewrite-min-size", "67108864"),
    ("auto-aof-rewrite-percentage", "100"),
    ("bgsave_cpulist", ""),
    ("bind-source-addr", ""),
    ("bio_cpulist", ""),
    ("client-output-buffer-limit", OUTPUT_BUFFER_LIMITS),
    ("client-query-buffer-limit", "1073741824"),
    ("cluster-allow-pubsubshard-when-down", "yes"),
    ("cluster-allow-reads-when-down", "no"),
    ("cluster-allow-replica-migration", "yes"),
    ("cluster-announce-bus-port", "0"),
    ("cluster-announce-hostname", ""),
    ("cluster-announce-ip", ""),
    ("cluster-announce-port", "0"),
    ("cluster-announce-tls-port", "0"),
    ("cluster-config-file", "nodes.conf"),
    ("cluster-link-sendbuf-limit", "0"),
    ("cluster-migration-barrier", "1"),
    ("cluster-port", "0"),
    ("cluster-preferred-endpoint-type", "ip"),
    ("cluster-replica-no-failover", "no"),
    ("cluster-replica-validity-factor", "10"),
    ("cluster-require-full-coverage", "yes"),
    ("cluster-slave-no-failover", "no"),
    ("cluster-slave-validity-factor", "10"),
    ("crash-log-enabled", "yes"),
    ("crash-memcheck-enabled", "yes"),
    ("daemonize", "no"),
    ("dbfilename", "dump.rdb"),
    ("dynamic-hz", "yes"),
    ("enable-debug-command", "no"),
    ("enable-module-command", "no"),
    ("enable-protected-configs", "no"),
    ("ignore-warnings", ""),
    ("io-threads", "1"),
    ("io-threads-do-reads", "no"),
    ("jemalloc-bg-thread", "yes"),
    ("key-load-delay", "0"),
    ("latency-monitor-threshold", "0"),
    ("latency-tracking", "yes"),
    ("latency-tracking-info-percentiles", "50 99 99.9"),
    ("lazyfree-lazy-eviction", "no"),
    ("lazyfree-lazy-expire", "no"),
    ("lazyfree-lazy-server-del", "no"),
    ("lazyfree-lazy-user-del", "no"),
    ("lazyfree-lazy-user-flush", "no"),
    ("lfu-decay-time", "1"),
    ("lfu-log-factor", "10"),
    ("loading-process-events-interval-bytes", "2097152"),
    ("logfile", ""),
    ("loglevel", "notice"),
    ("masterauth", ""),
    ("masteruser", ""),
    ("maxmemory-clients", "0"),
    ("maxmemory-eviction-tenacity", "10"),
    ("maxmemory-samples", "5"),
    ("no-appendfsync-on-rewrite", "no"),
    ("oom-score-adj", "no"),
    ("oom-score-adj-values", "0 200 800"),
    ("pidfile", ""),
    ("proc-title-template", "{title} {listen-addr} {server-mode}"),
    ("propagation-error-behavior", "ignore"),
    ("protected-mode", "yes"),
    ("rdb-del-sync-files", "no"),
    ("rdb-key-save-delay", "0"),
    ("rdb-save-incremental-fsync", "yes"),
    ("rdbchecksum", "yes"),
    ("rdbcompression", "yes"),
    ("repl-backlog-size", "1048576"),
    ("repl-backlog-ttl", "3600"),
    ("repl-disable-tcp-nodelay", "no"),
    ("repl-diskless-load", "disabled"),
    ("repl-diskless-sync", "yes"),
    ("repl-diskless-sync-delay", "5"),
    ("repl-diskless-sync-max-replicas", "0"),
    ("repl-ping-replica-period", "10"),
    ("repl-ping-slave-period", "10"),
    ("repl-timeout", "60"),
    ("replica-announce-ip", ""),
    ("replica-announce-port", "0"),
    ("replica-announced", "yes"),
    ("replica-ignore-disk-write-errors", "no"),
    ("replica-ignore-maxmemory", "yes"),
    ("replica-lazy-flush", "no"),
    ("replica-priority", "100"),
    ("replica-read-only", "yes"),
    ("replica-serve-stale-data", "yes"),
    ("replicaof", ""),
    ("server_cpulist", ""),
    ("set-proc-title", "yes"),
    ("shutdown-on-sigint", "default"),
    ("shutdown-on-sigterm", "default"),
    ("shutdown-timeout", "10"),
    ("slave-announce-ip", ""),
    ("slave-announce-port", "0"),
    ("slave-ignore-maxmemory", "yes"),
    ("slave-lazy-flush", "no"),
    ("slave-priority", "100"),
    ("slave-read-only", "yes"),
    ("slave-serve-stale-data", "yes"),
    ("slaveof", ""),
    ("socket-mark-id", "0"),
    ("stop-writes-on-bgsave-error", "yes"),
    ("supervised", "no"),
    ("syslog-enabled", "no"),
    ("syslog-facility", "local0"),
    ("syslog-ident", "redis"),
    ("tcp-backlog", "511"),
    ("tls-auth-clients", "yes"),
    ("tls-ca-cert-dir", ""),
    ("tls-ca-cert-file", ""),
    ("tls-cert-file", ""),
    ("tls-ciphers", ""),
    ("tls-ciphersuites", ""),
    ("tls-client-cert-file", ""),
    ("tls-client-key-file", ""),
    ("tls-client-key-file-pass", ""),
    ("tls-cluster", "no"),
    ("tls-dh-params-file", ""),
    ("tls-key-file", ""),
    ("tls-key-file-pass", ""),
    ("tls-port", "0"),
    ("tls-prefer-server-ciphers", "no"),
    ("tls-protocols", ""),
    ("tls-replication", "no"),
    ("tls-session-cache-size", "20480"),
    ("tls-session-cache-timeout", "300"),
    ("tls-session-caching", "yes"),
    ("tracking-table-max-keys", "1000000"),
    ("unixsocket", ""),
    ("unixsocketperm", "0"),
    ("use-exit-on-panic", "no"),
    ("watchdog-period", "0"),
];

/// Redis's hidden parameters: CONFIG GET reports one asked by its exact name only, never
/// for a pattern (they are Redis's testing knobs; kept here without effect).
pub static HIDDEN: &[&str] = &[
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "rdb-key-save-delay",
    "use-exit-on-panic",
    "watchdog-period",
];

/// What Redis refuses to set at run time: "can't set immutable config".
pub static IMMUTABLE: &[&str] = &[
    "aclfile",
    "always-show-logo",
    "aof_rewrite_cpulist",
    "appenddirname",
    "appendfilename",
    "bgsave_cpulist",
    "bio_cpulist",
    "cluster-config-file",
    "cluster-enabled",
    "cluster-port",
    "daemonize",
    "databases",
    "disable-thp",
    "enable-debug-command",
    "enable-module-command",
    "enable-protected-configs",
    "io-threads",
    "io-threads-do-reads",
    "logfile",
    "pidfile",
    "rdbchecksum",
    "replicaof",
    "server_cpulist",
    "set-proc-title",
    "slaveof",
    "socket-mark-id",
    "supervised",
    "syslog-enabled",
    "syslog-facility",
    "syslog-ident",
    "tcp-backlog",
    "unixsocket",
    "unixsocketperm",
];

/// What Redis refuses to set unless `enable-protected-configs` says otherwise: "can't set
/// protected config".
pub static PROTECTED: &[&str] = &["dbfilename", "dir"];

/// The default of an accepted parameter.
pub fn default_of(name: &str) -> Option<&'static str> {
    ACCEPTED.binary_search_by(|(k, _)| k.cmp(&name)).ok().map(|i| ACCEPTED[i].1)
}

/// Whether `value` has the shape of `name`'s default (module doc); Redis's reason if not.
/// `Ok` for a name not accepted here.
pub fn check(name: &str, value: &str) -> Result<(), &'static str> {
    let Some(default) = default_of(name) else { return Ok(()) };
    if default == "yes" || default == "no" {
        if value.eq_ignore_ascii_case("yes") || value.eq_ignore_ascii_case("no") {
            return Ok(());
        }
        return Err("argument must be 'yes' or 'no'");
    }
    if name == "maxmemory-clients" {
        return match value.strip_suffix('%').map(str::parse::<u64>) {
            Some(Ok(p)) if p <= 100 => Ok(()),
            Some(Ok(_)) => Err("percentage argument must be less or equal to 100"),
            Some(Err(_)) => Err("argument must be a memory or percent value"),
            None if super::parse_size(value).is_some() => Ok(()),
            None => Err("argument must be a memory or percent value"),
        };
    }
    if MEMORY.contains(&name) {
        return match super::parse_size(value) {
            Some(_) => Ok(()),
            None => Err("argument must be a memory value"),
        };
    }
    if default.parse::<i64>().is_ok() && value.parse::<i64>().is_err() {
        return Err("argument couldn't be parsed into an integer");
    }
    Ok(())
}

/// The accepted numbers that are sizes in bytes: a memory value (`1gb`) is taken for them.
const MEMORY: &[&str] = &[
    "active-defrag-ignore-bytes",
    "auto-aof-rewrite-min-size",
    "client-query-buffer-limit",
    "cluster-link-sendbuf-limit",
    "repl-backlog-size",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_values_are_checked_by_shape() {
        assert!(ACCEPTED.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no name twice");
        assert!(IMMUTABLE.windows(2).all(|w| w[0] < w[1]));
        assert!(HIDDEN.iter().all(|h| default_of(h).is_some()), "hidden ones are accepted");
        assert_eq!(default_of("repl-backlog-size"), Some("1048576"));
        assert_eq!(default_of("nosuch"), None);
        assert_eq!(check("repl-backlog-size", "2mb"), Ok(()));
        assert_eq!(check("repl-backlog-size", "lots"), Err("argument must be a memory value"));
        assert_eq!(check("repl-backlog-ttl", "-1"), Ok(()));
        assert_eq!(
            check("repl-backlog-ttl", "1kb"),
            Err("argument couldn't be parsed into an integer"),
            "a plain number takes no unit"
        );
        assert_eq!(check("maxmemory-clients", "10%"), Ok(()));
        assert_eq!(check("maxmemory-clients", "1gb"), Ok(()));
        assert_eq!(
            check("maxmemory-clients", "101%"),
            Err("percentage argument must be less or equal to 100")
        );
        assert_eq!(check("lazyfree-lazy-eviction", "YES"), Ok(()));
        assert_eq!(check("lazyfree-lazy-eviction", "maybe"), Err("argument must be 'yes' or 'no'"));
        assert_eq!(check("loglevel", "anything"), Ok(()), "text is not checked");
        assert_eq!(check("nosuch", "x"), Ok(()));
    }
}
