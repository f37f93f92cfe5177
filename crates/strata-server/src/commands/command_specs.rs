//! What COMMAND INFO's last elements say of each command beyond its flags: its tips (how a
//! cluster client should route and merge it: `request_policy:all_shards`, ...) and its key
//! specifications (which arguments are keys, and how a client finds them: a start at an
//! index or after a keyword, then a range or a count of keys), as redis-server 7.0.15 reports
//! them. [`TABLE`] holds, per command (and `container|sub`) sorted by name, the facts of
//! Redis 7.0.15's `src/commands/*.json` (its `command_tips` and `key_specs`; a spec's `notes`,
//! prose, are left out; `python3 bench/redis-command-specs.py DIR` prints the rows from a
//! Redis source tree); commands absent have neither. The flags of a spec are those
//! `key_flags` checks ACL permissions and GETKEYSANDFLAGS by (a test holds the two tables
//! together).

/// Where a key specification's search starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// At this argument (the command name is 0).
    Index(i64),
    /// After this keyword, searched from argument `startfrom` (negative: from the end,
    /// backwards).
    Keyword(&'static str, i64),
    /// Not expressible (the command finds its keys itself).
    Unknown,
}

/// How a key specification's keys are found from the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Find {
    /// `lastkey` (relative to the start; negative: from the end), `keystep`, `limit` (0: no
    /// limit; else up to 1/limit of the remaining arguments).
    Range(i64, i64, i64),
    /// `keynumidx` (the count's argument, relative to the start), `firstkey` (relative to
    /// the start), `keystep`.
    Keynum(i64, i64, i64),
    /// Not expressible.
    Unknown,
}

/// One key specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Its flags' names (`key_flags::NAMES`), space-separated.
    pub flags: &'static str,
    /// Where its search starts.
    pub begin: Begin,
    /// How its keys are found.
    pub find: Find,
}

/// The tips (space-separated) and key specifications of `name` (`container|sub` for a
/// subcommand, lower case).
pub fn of(name: &str) -> (&'static str, &'static [Spec]) {
    match TABLE.binary_search_by(|row| row.0.cmp(name)) {
        Ok(i) => (TABLE[i].1, TABLE[i].2),
        Err(_) => ("", &[]),
    }
}

/// Command, tips, key specifications; sorted by command.
pub static TABLE: &[(&str, &str, &[Spec])] = &[
    (
        "append",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "bitcount",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "bitfield",
        "",
        &[Spec {
            flags: "RW update access variable_flags",
            begin: Begin::Index(1),
            find: Find::Range(0, 1, 0),
        }],
    ),
    (
        "bitfield_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "bitop",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(3), find: Find::Range(-1, 1, 0) },
        ],
    ),
    (
        "bitpos",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "blmove",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "blmpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "blpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }],
    ),
    (
        "brpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }],
    ),
    (
        "brpoplpush",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "bzmpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "bzpopmax",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }],
    ),
    (
        "bzpopmin",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }],
    ),
    ("client|info", "nondeterministic_output", &[]),
    ("client|list", "nondeterministic_output", &[]),
    ("cluster|bumpepoch", "nondeterministic_output", &[]),
    ("cluster|count-failure-reports", "nondeterministic_output", &[]),
    ("cluster|getkeysinslot", "nondeterministic_output", &[]),
    ("cluster|info", "nondeterministic_output", &[]),
    ("cluster|links", "nondeterministic_output", &[]),
    ("cluster|nodes", "nondeterministic_output", &[]),
    ("cluster|replicas", "nondeterministic_output", &[]),
    ("cluster|shards", "nondeterministic_output", &[]),
    ("cluster|slaves", "nondeterministic_output", &[]),
    ("cluster|slots", "nondeterministic_output", &[]),
    ("command", "nondeterministic_output_order", &[]),
    ("command|docs", "nondeterministic_output_order", &[]),
    ("command|info", "nondeterministic_output_order", &[]),
    ("command|list", "nondeterministic_output_order", &[]),
    ("config|set", "request_policy:all_nodes response_policy:all_succeeded", &[]),
    (
        "copy",
        "",
        &[
            Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "OW update", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    ("dbsize", "request_policy:all_shards response_policy:agg_sum", &[]),
    (
        "decr",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "decrby",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "del",
        "request_policy:multi_shard response_policy:agg_sum",
        &[Spec { flags: "RM delete", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "dump",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "eval",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "eval_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "evalsha",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "evalsha_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "exists",
        "request_policy:multi_shard response_policy:agg_sum",
        &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "expire",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "expireat",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "expiretime",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "fcall",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "fcall_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }],
    ),
    ("flushall", "request_policy:all_shards response_policy:all_succeeded", &[]),
    ("flushdb", "request_policy:all_shards response_policy:all_succeeded", &[]),
    ("function|delete", "request_policy:all_shards response_policy:all_succeeded", &[]),
    ("function|flush", "request_policy:all_shards response_policy:all_succeeded", &[]),
    ("function|kill", "request_policy:all_shards response_policy:one_succeeded", &[]),
    ("function|list", "nondeterministic_output_order", &[]),
    ("function|load", "request_policy:all_shards response_policy:all_succeeded", &[]),
    ("function|restore", "request_policy:all_shards response_policy:all_succeeded", &[]),
    (
        "function|stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        &[],
    ),
    (
        "geoadd",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "geodist",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "geohash",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "geopos",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "georadius",
        "",
        &[
            Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec {
                flags: "OW update",
                begin: Begin::Keyword("STORE", 6),
                find: Find::Range(0, 1, 0),
            },
            Spec {
                flags: "OW update",
                begin: Begin::Keyword("STOREDIST", 6),
                find: Find::Range(0, 1, 0),
            },
        ],
    ),
    (
        "georadius_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "georadiusbymember",
        "",
        &[
            Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec {
                flags: "OW update",
                begin: Begin::Keyword("STORE", 5),
                find: Find::Range(0, 1, 0),
            },
            Spec {
                flags: "OW update",
                begin: Begin::Keyword("STOREDIST", 5),
                find: Find::Range(0, 1, 0),
            },
        ],
    ),
    (
        "georadiusbymember_ro",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "geosearch",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "geosearchstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    ("get", "", &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "getbit",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "getdel",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "getex",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "getrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "getset",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hdel",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("hexists", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "hget",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hgetall",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hincrby",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hincrbyfloat",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hkeys",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("hlen", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "hmget",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hmset",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hrandfield",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hscan",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hset",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "hsetnx",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("hstrlen", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "hvals",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "incr",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "incrby",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "incrbyfloat",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("info", "nondeterministic_output request_policy:all_shards response_policy:special", &[]),
    ("keys", "request_policy:all_shards nondeterministic_output_order", &[]),
    ("lastsave", "nondeterministic_output", &[]),
    (
        "latency|doctor",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        &[],
    ),
    (
        "latency|graph",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        &[],
    ),
    (
        "latency|histogram",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        &[],
    ),
    (
        "latency|history",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        &[],
    ),
    (
        "latency|latest",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        &[],
    ),
    ("latency|reset", "request_policy:all_nodes response_policy:all_succeeded", &[]),
    ("lcs", "", &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(1, 1, 0) }]),
    (
        "lindex",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "linsert",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("llen", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "lmove",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "lmpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "lpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lpos",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lpush",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lpushx",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lrem",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "lset",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "ltrim",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "memory|doctor",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        &[],
    ),
    (
        "memory|malloc-stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        &[],
    ),
    ("memory|purge", "request_policy:all_shards response_policy:all_succeeded", &[]),
    (
        "memory|stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        &[],
    ),
    (
        "memory|usage",
        "",
        &[Spec { flags: "RO", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "mget",
        "request_policy:multi_shard",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "migrate",
        "nondeterministic_output",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(3), find: Find::Range(0, 1, 0) },
            Spec {
                flags: "RW access delete incomplete",
                begin: Begin::Keyword("KEYS", -2),
                find: Find::Range(-1, 1, 0),
            },
        ],
    ),
    ("module|list", "nondeterministic_output_order", &[]),
    (
        "move",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "mset",
        "request_policy:multi_shard response_policy:all_succeeded",
        &[Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }],
    ),
    (
        "msetnx",
        "request_policy:multi_shard response_policy:agg_min",
        &[Spec { flags: "OW insert", begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }],
    ),
    (
        "object|encoding",
        "nondeterministic_output",
        &[Spec { flags: "RO", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "object|freq",
        "nondeterministic_output",
        &[Spec { flags: "RO", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "object|idletime",
        "nondeterministic_output",
        &[Spec { flags: "RO", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "object|refcount",
        "nondeterministic_output",
        &[Spec { flags: "RO", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "persist",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pexpire",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pexpireat",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pexpiretime",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pfadd",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pfcount",
        "",
        &[Spec { flags: "RW access", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "pfdebug",
        "",
        &[Spec { flags: "RW access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pfmerge",
        "",
        &[
            Spec { flags: "RW access insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(-1, 1, 0) },
        ],
    ),
    ("ping", "request_policy:all_shards response_policy:all_succeeded", &[]),
    (
        "psetex",
        "",
        &[Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "pttl",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("randomkey", "request_policy:all_shards nondeterministic_output", &[]),
    (
        "rename",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "OW update", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "renamenx",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "OW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "restore",
        "",
        &[Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "restore-asking",
        "",
        &[Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "rpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "rpoplpush",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "rpush",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "rpushx",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "sadd",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("scan", "nondeterministic_output request_policy:special", &[]),
    ("scard", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("script|exists", "request_policy:all_shards response_policy:agg_logical_and", &[]),
    ("script|flush", "request_policy:all_nodes response_policy:all_succeeded", &[]),
    ("script|kill", "request_policy:all_shards response_policy:one_succeeded", &[]),
    ("script|load", "request_policy:all_nodes response_policy:all_succeeded", &[]),
    (
        "sdiff",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "sdiffstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(-1, 1, 0) },
        ],
    ),
    (
        "set",
        "",
        &[Spec {
            flags: "RW access update variable_flags",
            begin: Begin::Index(1),
            find: Find::Range(0, 1, 0),
        }],
    ),
    (
        "setbit",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "setex",
        "",
        &[Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "setnx",
        "",
        &[Spec { flags: "OW insert", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "setrange",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "sinter",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "sintercard",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "sinterstore",
        "",
        &[
            Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(-1, 1, 0) },
        ],
    ),
    ("sismember", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("slowlog|get", "request_policy:all_nodes nondeterministic_output", &[]),
    (
        "slowlog|len",
        "request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
        &[],
    ),
    ("slowlog|reset", "request_policy:all_nodes response_policy:all_succeeded", &[]),
    (
        "smembers",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "smismember",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "smove",
        "",
        &[
            Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "sort",
        "",
        &[
            Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Unknown, find: Find::Unknown },
            Spec { flags: "OW update", begin: Begin::Unknown, find: Find::Unknown },
        ],
    ),
    (
        "sort_ro",
        "",
        &[
            Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Unknown, find: Find::Unknown },
        ],
    ),
    (
        "spop",
        "nondeterministic_output",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "spublish",
        "",
        &[Spec { flags: "not_key", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "srandmember",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "srem",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "sscan",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "ssubscribe",
        "",
        &[Spec { flags: "not_key", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    ("strlen", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "substr",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "sunion",
        "nondeterministic_output_order",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "sunionstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(-1, 1, 0) },
        ],
    ),
    (
        "sunsubscribe",
        "",
        &[Spec { flags: "not_key", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    ("time", "nondeterministic_output", &[]),
    (
        "touch",
        "request_policy:multi_shard response_policy:agg_sum",
        &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    (
        "ttl",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("type", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "unlink",
        "request_policy:multi_shard response_policy:agg_sum",
        &[Spec { flags: "RM delete", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }],
    ),
    ("wait", "request_policy:all_shards response_policy:agg_min", &[]),
    ("watch", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    (
        "xack",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xadd",
        "nondeterministic_output",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xautoclaim",
        "nondeterministic_output",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xclaim",
        "nondeterministic_output",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xdel",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xgroup|create",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xgroup|createconsumer",
        "",
        &[Spec { flags: "RW insert", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xgroup|delconsumer",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xgroup|destroy",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xgroup|setid",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xinfo|consumers",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xinfo|groups",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xinfo|stream",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) }],
    ),
    ("xlen", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "xpending",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xread",
        "",
        &[Spec {
            flags: "RO access",
            begin: Begin::Keyword("STREAMS", 1),
            find: Find::Range(-1, 1, 2),
        }],
    ),
    (
        "xreadgroup",
        "",
        &[Spec {
            flags: "RO access",
            begin: Begin::Keyword("STREAMS", 4),
            find: Find::Range(-1, 1, 2),
        }],
    ),
    (
        "xrevrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xsetid",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "xtrim",
        "nondeterministic_output",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zadd",
        "",
        &[Spec { flags: "RW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    ("zcard", "", &[Spec { flags: "RO", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    (
        "zcount",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zdiff",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "zdiffstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) },
        ],
    ),
    (
        "zincrby",
        "",
        &[Spec { flags: "RW access update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zinter",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "zintercard",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "zinterstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) },
        ],
    ),
    (
        "zlexcount",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zmpop",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "zmscore",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zpopmax",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zpopmin",
        "",
        &[Spec { flags: "RW access delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrandmember",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrangebylex",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrangebyscore",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrangestore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Range(0, 1, 0) },
        ],
    ),
    (
        "zrank",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrem",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zremrangebylex",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zremrangebyrank",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zremrangebyscore",
        "",
        &[Spec { flags: "RW delete", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrevrange",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrevrangebylex",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrevrangebyscore",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zrevrank",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zscan",
        "nondeterministic_output",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zscore",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Range(0, 1, 0) }],
    ),
    (
        "zunion",
        "",
        &[Spec { flags: "RO access", begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }],
    ),
    (
        "zunionstore",
        "",
        &[
            Spec { flags: "OW update", begin: Begin::Index(1), find: Find::Range(0, 1, 0) },
            Spec { flags: "RO access", begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) },
        ],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::key_flags::{self, KeyFlags};

    #[test]
    fn the_table_is_sorted_and_its_flags_are_known_names() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no name twice");
        for (name, _, specs) in TABLE {
            for s in *specs {
                let names: Vec<_> = KeyFlags::parse(s.flags).names().collect();
                assert_eq!(names.len(), s.flags.split_whitespace().count(), "{name}: {}", s.flags);
            }
        }
    }

    /// The specs' flags are those the ACL checks use (`key_flags::TABLE`), SORT's second
    /// spec (BY and GET's patterns) aside: it names no key in a command line.
    #[test]
    fn its_flags_are_the_acl_checks_flags() {
        // The commands and subcommands this server serves.
        let served = |name: &str| match name.split_once('|') {
            None => crate::commands::lookup(name.as_bytes()).is_some(),
            Some((c, _)) => crate::commands::subcommands::of(c).any(|e| e.0 == name),
        };
        for (name, _, specs) in TABLE.iter().filter(|row| served(row.0)) {
            let mut flags: Vec<KeyFlags> = specs.iter().map(|s| KeyFlags::parse(s.flags)).collect();
            if *name == "sort" || *name == "sort_ro" {
                flags.remove(1);
            }
            assert_eq!(key_flags::specs_of(name), flags, "{name}");
        }
    }

    #[test]
    fn a_command_is_found_by_name() {
        let (tips, specs) = of("zunionstore");
        assert_eq!(tips, "");
        assert_eq!(specs[1].find, Find::Keynum(0, 1, 1));
        assert_eq!(of("dbsize").0, "request_policy:all_shards response_policy:agg_sum");
        assert_eq!(of("nosuch"), ("", &[][..]));
    }
}
