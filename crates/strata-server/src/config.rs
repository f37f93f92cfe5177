//! Configuration: a redis.conf-style file (`key value` lines, `#` comments, quoted values)
//! overridden by command-line flags, then defaults.
//!
//! Flags (stable; scripts rely on them): `--port` (6379; 0 = pick a free port and print it),
//! `--bind` (127.0.0.1), `--dir` (./strata-data), `--requirepass`, `--user` (an ACL user, a
//! configuration file's `user` line; repeated), `--rename-command OLD NEW` (a file's
//! `rename-command` line; repeated: `renames`), `--appendfsync
//! always|everysec|no` (everysec), `--write-buffer-size` (16 MiB: see
//! [`DEFAULT_WRITE_BUFFER_SIZE`]), `--block-cache-size` (a quarter of
//! physical memory, at most 4 GiB, at least 32 MiB: see [`default_block_cache_size`]),
//! `--max-background-jobs`, `--proto-max-bulk-len` (512 MiB), `--hash-max-listpack-entries`
//! (128) and `--hash-max-listpack-value` (128; when a hash is compact, see
//! `storage::compact_hash`), `--databases` (16: SELECT's range, `storage::databases`; 1 in
//! cluster mode), `--disable-thp yes|no` (yes: the process runs without transparent huge
//! pages, as redis-server does), `--notify-keyspace-events` (empty: none; Redis's class
//! characters, `types::notify`), the cluster-mode flags (`--cluster-enabled yes|no`,
//! `--cluster-node-id`, `--cluster-nodes`, `--cluster-partitions`, `--cluster-replicas`,
//! `--cluster-bootstrap yes|no`, `--cluster-node-timeout MS`: `cluster::spec`), and a config
//! file path as the first positional argument.

pub mod redis_params;
pub mod renames;
pub mod rewrite;
pub mod values;

use crate::storage::SyncPolicy;
use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Redis 7.0's parameters with their older names: both names set and report one value.
pub const ALIASES: &[(&str, &str)] = &[
    ("hash-max-listpack-entries", "hash-max-ziplist-entries"),
    ("hash-max-listpack-value", "hash-max-ziplist-value"),
    ("zset-max-listpack-entries", "zset-max-ziplist-entries"),
    ("zset-max-listpack-value", "zset-max-ziplist-value"),
    ("list-max-listpack-size", "list-max-ziplist-size"),
    ("busy-reply-threshold", "lua-time-limit"),
    ("min-replicas-to-write", "min-slaves-to-write"),
    ("min-replicas-max-lag", "min-slaves-max-lag"),
    ("replica-read-only", "slave-read-only"),
    ("replica-serve-stale-data", "slave-serve-stale-data"),
    ("replica-ignore-maxmemory", "slave-ignore-maxmemory"),
    ("replica-lazy-flush", "slave-lazy-flush"),
    ("replica-priority", "slave-priority"),
    ("replica-announce-ip", "slave-announce-ip"),
    ("replica-announce-port", "slave-announce-port"),
    ("repl-ping-replica-period", "repl-ping-slave-period"),
];

/// The parameter a name sets: an older alias names its Redis 7.0 parameter ([`ALIASES`]).
pub fn canonical(k: &str) -> &str {
    ALIASES.iter().find(|(_, alias)| *alias == k).map_or(k, |(name, _)| name)
}

/// Redis's default number of databases.
pub const DEFAULT_DATABASES: usize = 16;

/// The Redis version the server answers as (HELLO, INFO, `redis.REDIS_VERSION`).
pub const REDIS_VERSION: &str = "7.2.0";

/// Command-line flags; `None` means "from the file, else the default".
#[derive(Parser, Debug, Default)]
#[command(name = "strata-server", about = "A Redis-protocol server on the Strata engine")]
pub struct Flags {
    /// A redis.conf-style configuration file.
    pub config_file: Option<PathBuf>,
    /// TCP port (0 = any free port, printed at start).
    #[arg(long)]
    pub port: Option<u16>,
    /// Address to listen on.
    #[arg(long)]
    pub bind: Option<String>,
    /// Database directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Password clients must AUTH with.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// An ACL user, as a configuration file's `user` line has it (`--user "alice on >pw ~*
    /// +@read"`); repeated for more users, after the file's.
    #[arg(long = "user")]
    pub users: Vec<String>,
    /// Serves a command under another name, or not at all with "" (`--rename-command flushall
    /// ""`), as a configuration file's `rename-command` line; repeated, after the file's.
    #[arg(long = "rename-command", num_args = 2, value_names = ["COMMAND", "NEW_NAME"])]
    pub renames: Vec<String>,
    /// WAL sync policy: always | everysec | no.
    #[arg(long)]
    pub appendfsync: Option<String>,
    /// Engine memtable size in bytes (default 16 MiB).
    #[arg(long)]
    pub write_buffer_size: Option<usize>,
    /// Engine block cache size in bytes (default: a quarter of physical memory, 32 MiB to 4 GiB).
    #[arg(long)]
    pub block_cache_size: Option<usize>,
    /// Engine background flush/compaction threads.
    #[arg(long)]
    pub max_background_jobs: Option<usize>,
    /// Largest bulk string accepted in a request, in bytes.
    #[arg(long)]
    pub proto_max_bulk_len: Option<usize>,
    /// Threads serving connections, each with its own event loop (in cluster mode: the async
    /// runtime's workers). Default: one per core.
    #[arg(long)]
    pub io_threads: Option<usize>,
    /// Most fields of a compact hash (0: every hash keeps one sub-key per field).
    #[arg(long)]
    pub hash_max_listpack_entries: Option<usize>,
    /// How many databases SELECT reaches (16; cluster mode has only database 0).
    #[arg(long)]
    pub databases: Option<usize>,
    /// yes (the default, as Redis's): the process runs without transparent huge pages.
    #[arg(long)]
    pub disable_thp: Option<String>,
    /// Whether DEBUG runs: no (the default, as Redis's), yes, or local (from loopback
    /// clients only).
    #[arg(long)]
    pub enable_debug_command: Option<String>,
    /// Longest field or value of a compact hash, in bytes.
    #[arg(long)]
    pub hash_max_listpack_value: Option<usize>,
    /// A Unix socket to accept connections on too (its path; a file there is replaced).
    #[arg(long)]
    pub unixsocket: Option<String>,
    /// The Unix socket's permission bits, in octal (`700`); 0 (the default): the umask's.
    #[arg(long)]
    pub unixsocketperm: Option<String>,
    /// Keyspace notifications to publish: Redis's class characters (K E g $ l s h z x e t m
    /// d n A); empty (the default): none.
    #[arg(long)]
    pub notify_keyspace_events: Option<String>,
    /// Cluster mode: yes | no (no).
    #[arg(long)]
    pub cluster_enabled: Option<String>,
    /// This node's id in the cluster (a positive integer named in --cluster-nodes).
    #[arg(long)]
    pub cluster_node_id: Option<u64>,
    /// Every node of the cluster, comma-separated `id=host:port:raft_port` (the client port,
    /// then the port of the Raft transport between nodes).
    #[arg(long)]
    pub cluster_nodes: Option<String>,
    /// Partitions (Raft groups) the 16384 slots are split into (default 16).
    #[arg(long)]
    pub cluster_partitions: Option<u16>,
    /// Replicas of each partition (default 3, or the number of nodes when fewer).
    #[arg(long)]
    pub cluster_replicas: Option<usize>,
    /// yes: this node's empty directory starts a new cluster (give it to every node of the
    /// cluster's first start, never to a node that lost its directory); no (the default): a
    /// node on an empty directory joins a cluster that exists and catches up before it votes.
    #[arg(long)]
    pub cluster_bootstrap: Option<String>,
    /// Milliseconds without a leader's word after which a replica calls an election (each
    /// group's election timeout is drawn between half of it and it; leaders send heartbeats
    /// every sixth of it). Default 300 (Redis: 15000).
    #[arg(long)]
    pub cluster_node_timeout: Option<u64>,
}

/// `cluster-node-timeout` when not given, in milliseconds (`cluster::spec::NodeTimeout`).
pub const DEFAULT_NODE_TIMEOUT_MS: u64 = 300;

/// Cluster mode's settings as given (`cluster::spec` checks and interprets them).
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// `cluster-enabled yes`.
    pub enabled: bool,
    /// `cluster-node-id`.
    pub node_id: Option<u64>,
    /// `cluster-nodes`.
    pub nodes: Option<String>,
    /// `cluster-partitions`.
    pub partitions: Option<u16>,
    /// `cluster-replicas`.
    pub replicas: Option<usize>,
    /// `cluster-bootstrap yes`.
    pub bootstrap: bool,
    /// `cluster-node-timeout`, in milliseconds.
    pub node_timeout: Option<u64>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// TCP port; 0 = any.
    pub port: u16,
    /// Listen address.
    pub bind: String,
    /// Data directory.
    pub dir: PathBuf,
    /// AUTH password (empty = none).
    pub requirepass: String,
    /// No transparent huge pages for the process (Redis's `disable-thp`, `main.rs`).
    pub disable_thp: bool,
    /// WAL sync policy.
    pub appendfsync: SyncPolicy,
    /// Engine memtable size.
    pub write_buffer_size: Option<usize>,
    /// Engine block cache size.
    pub block_cache_size: Option<usize>,
    /// Engine background jobs.
    pub max_background_jobs: Option<usize>,
    /// Largest request bulk string.
    pub proto_max_bulk_len: usize,
    /// Connection threads, or in cluster mode the runtime's workers (`None`: one per core).
    pub io_threads: Option<usize>,
    /// Most fields of a compact hash.
    pub hash_max_listpack_entries: usize,
    /// How many databases SELECT reaches (`storage::databases`).
    pub databases: usize,
    /// Longest field or value of a compact hash.
    pub hash_max_listpack_value: usize,
    /// The keyspace notification classes enabled (`types::notify`'s flags).
    pub notify_keyspace_events: u32,
    /// Cluster mode.
    pub cluster: ClusterOptions,
    /// Every `key value` of the file, for CONFIG GET of settings without their own field.
    pub extra: BTreeMap<String, String>,
    /// The file's `user` directives, each the text after `user` (ACL users: `acl`).
    pub users: Vec<String>,
    /// The file's `rename-command` lines, then `--rename-command`'s, in order
    /// (`config::renames`; the server applies them at start).
    pub renames: Vec<renames::Rename>,
    /// The configuration file it was read from, as an absolute path (CONFIG REWRITE writes
    /// it): `None` without one.
    pub config_file: Option<PathBuf>,
}

/// The memtable size a server gets when none is configured: 16 MiB, against the engine's
/// 64 MiB (RocksDB's).
///
/// A server's writes are mostly small records at random keys, each an insert into the
/// memtable's skiplist, whose search is a chain of dependent loads. A memtable that fits in
/// the CPU's last-level cache (tens of MiB on server CPUs, shared by the cores) takes those
/// loads from the cache rather than from memory (`docs/measurements.md` has the figures).
/// The cost is four times as many flushes, each a smaller table for compaction to merge; at
/// `appendfsync always` that background work shares the device with the WAL's syncs, and an
/// update-heavy load right after a bulk load measured slower for it; a standalone server
/// therefore flushes [`DEFAULT_MEMTABLES_TO_MERGE`] of them together.
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 16 << 20;

/// Memtables of [`DEFAULT_WRITE_BUFFER_SIZE`] a standalone server flushes together as one L0
/// table (the engine's `min_write_buffer_number_to_merge`; one more may exist, the active
/// one): L0 tables and compactions of the engine default's size, from memtables that fit the
/// cache. Only with the default size, and not in cluster mode, whose many partition families
/// would each hold that many.
pub const DEFAULT_MEMTABLES_TO_MERGE: usize = 4;

/// The block cache a server gets when none is configured: a quarter of physical memory, at
/// most 4 GiB and at least 32 MiB (the engine's own default, also used when the memory size
/// is unknown).
///
/// A served store's clients expect a Redis-like working set to be answered from memory: with
/// the engine's 32 MiB, a 100 MB YCSB table went to the page cache on most reads (a `pread`,
/// a checksum and a decompression each) while redis-server answered from its heap. The cache
/// fills only as blocks are read, so an idle or small server uses no more memory than before.
pub fn default_block_cache_size() -> usize {
    const MIN: usize = 32 << 20;
    const MAX: usize = 4 << 30;
    // SAFETY: sysconf only reads a system constant.
    let (pages, page) =
        unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages <= 0 || page <= 0 {
        return MIN;
    }
    let quarter = (pages as u64).saturating_mul(page as u64) / 4;
    usize::try_from(quarter).unwrap_or(MAX).clamp(MIN, MAX)
}

/// `unixsocketperm`'s mode bits (octal, as Redis reads it), or why not.
pub fn unix_perm(v: &str) -> Result<u32, String> {
    u32::from_str_radix(v, 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("unixsocketperm `{v}`: expected octal permission bits such as 700"))
}

/// The text after `user` of each `user` directive of a config file's text, in order.
pub fn user_directives(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| {
            let (k, v) = l.split_once(char::is_whitespace)?;
            k.eq_ignore_ascii_case("user").then(|| v.trim().to_string())
        })
        .collect()
}

/// Parses a config file's text into `key -> value` (the last occurrence wins); a value a
/// parameter does not take is an error naming its line ([`values::check`]).
pub fn parse_file(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut m = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let Some((k, v)) = directive(line).map_err(|why| format!("line {}: {why}", n + 1))? else {
            continue;
        };
        if k == "user" || k == "rename-command" {
            // Repeated and applied in order: `user_directives`, `renames::directives`.
            continue;
        }
        // An alias sets its parameter: the last line under either name wins, as in Redis.
        let k = canonical(&k).to_string();
        // A directive nothing reads would be a setting silently not in force (a misspelt
        // `requirepass`): the start stops, as redis-server's does.
        if !known_directive(&k) {
            let why = match k.as_str() {
                "include" => "include is not supported here: one file holds the settings",
                "loadmodule" => "modules are not supported here",
                _ => "Bad directive or wrong number of arguments",
            };
            return Err(format!("line {}: `{}`: {why}", n + 1, line.trim()));
        }
        // A value CONFIG SET would refuse stops the start, as redis-server's fatal config
        // error does, instead of being taken as the default.
        values::check(&k, v.as_bytes())
            .map_err(|why| format!("line {}: `{}`: {why}", n + 1, line.trim()))?;
        let v = fold_line(&k, m.get(&k).map(String::as_str), &v);
        m.insert(k, v);
    }
    Ok(m)
}

/// The directives a config file may hold besides Redis 7.0's other parameters
/// (`redis_params`): the parameters `Config::params` reports and those only a file or a
/// flag sets.
const OWN_DIRECTIVES: &[&str] = &[
    "appendfsync",
    "appendonly",
    "bind",
    "block-cache-size",
    "busy-reply-threshold",
    "cluster-bootstrap",
    "cluster-enabled",
    "cluster-node-id",
    "cluster-node-timeout",
    "cluster-nodes",
    "cluster-partitions",
    "cluster-replicas",
    "databases",
    "dir",
    "disable-thp",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hll-sparse-max-bytes",
    "hz",
    "io-threads",
    "list-compress-depth",
    "list-max-listpack-size",
    "max-background-jobs",
    "maxclients",
    "maxmemory",
    "maxmemory-policy",
    "min-replicas-max-lag",
    "min-replicas-to-write",
    "notify-keyspace-events",
    "port",
    "proto-max-bulk-len",
    "requirepass",
    "sanitize-dump-payload",
    "save",
    "set-max-intset-entries",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "tcp-keepalive",
    "timeout",
    "write-buffer-size",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
];

/// Whether a config file's directive `k` (its parameter's name, [`canonical`]) sets
/// something.
fn known_directive(k: &str) -> bool {
    OWN_DIRECTIVES.contains(&k) || redis_params::default_of(k).is_some()
}

/// The value parameter `k` has after one more of its lines in a config file (`line`, the
/// line's value; `before`, what its earlier lines gave). Most parameters take the line's
/// value; as Redis reads them, `save` lines add their pairs to the earlier lines' (an empty
/// one clears them), and `client-output-buffer-limit` lines set the limits of the classes
/// they name (`replica` is `slave`), the other classes keeping theirs (Redis's defaults, or an
/// earlier line's). A `client-output-buffer-limit` value not made of `class hard soft
/// seconds` groups of known classes is taken as it is.
pub fn fold_line(k: &str, before: Option<&str>, line: &str) -> String {
    match (k, before) {
        ("save", Some(b)) if !b.is_empty() && !line.is_empty() => format!("{b} {line}"),
        ("client-output-buffer-limit", _) => {
            let base = before.unwrap_or(redis_params::OUTPUT_BUFFER_LIMITS);
            output_limits(base, line).unwrap_or_else(|| line.to_string())
        }
        _ => line.to_string(),
    }
}

/// `base`'s classes (`client-output-buffer-limit` form) with those `line` sets; `None` when
/// either is not that form.
fn output_limits(base: &str, line: &str) -> Option<String> {
    let mut limits: Vec<Option<String>> = vec![None; OUTPUT_CLASSES.len()];
    for (at, g) in
        output_limit_groups(base).ok()?.into_iter().chain(output_limit_groups(line).ok()?)
    {
        limits[at] = Some(g);
    }
    Some(limits.into_iter().flatten().collect::<Vec<_>>().join(" "))
}

/// Redis's client classes, by the names its `getClientTypeByName` knows: CLIENT LIST's and
/// CLIENT KILL's `TYPE`, and `client-output-buffer-limit`'s classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientClass {
    /// `normal`.
    Normal,
    /// `slave` or `replica` (none here: no replication links).
    Slave,
    /// `pubsub`: a connection subscribed to anything.
    Pubsub,
    /// `master` (none here).
    Master,
}

impl ClientClass {
    /// The class named `name` (any case).
    pub fn by_name(name: &[u8]) -> Option<ClientClass> {
        let classes = [
            ("normal", ClientClass::Normal),
            ("slave", ClientClass::Slave),
            ("replica", ClientClass::Slave),
            ("pubsub", ClientClass::Pubsub),
            ("master", ClientClass::Master),
        ];
        classes.into_iter().find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes())).map(|c| c.1)
    }
}

/// The client classes of `client-output-buffer-limit`, in the order CONFIG GET lists them.
const OUTPUT_CLASSES: [(ClientClass, &str); 3] = [
    (ClientClass::Normal, "normal"),
    (ClientClass::Slave, "slave"),
    (ClientClass::Pubsub, "pubsub"),
];

/// A `client-output-buffer-limit` value's `class hard soft seconds` groups, each as its
/// class's place in [`OUTPUT_CLASSES`] and its text as CONFIG GET shows it (sizes in bytes,
/// `replica` as `slave`); Redis's error for a value not of that form.
pub fn output_limit_groups(text: &str) -> Result<Vec<(usize, String)>, &'static str> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.");
    }
    words
        .chunks(4)
        .map(|g| {
            let class = ClientClass::by_name(g[0].as_bytes());
            let Some(at) = OUTPUT_CLASSES.iter().position(|c| Some(c.0) == class) else {
                return Err("Invalid client class specified in buffer limit configuration.");
            };
            let class = OUTPUT_CLASSES[at].1;
            let (hard, soft) = (parse_size(g[1]), parse_size(g[2]));
            match (hard, soft, g[3].parse::<u32>()) {
                (Some(h), Some(s), Ok(secs)) => Ok((at, format!("{class} {h} {s} {secs}"))),
                _ => Err("Error in hard, soft or soft_seconds setting in buffer limit \
                          configuration."),
            }
        })
        .collect()
}

/// One line of a config file as `(key in lower case, value)`: the line's words as Redis splits
/// them (`resp::args`: quotes group and are removed), the value the words after the key
/// joined by one space; `None` for a blank or comment line.
pub fn directive(line: &str) -> Result<Option<(String, String)>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let words = crate::resp::args::split_args(line.as_bytes())
        .ok_or_else(|| format!("`{line}`: unbalanced quotes"))?;
    let Some((k, rest)) = words.split_first() else { return Ok(None) };
    if k.is_empty() {
        return Err(format!("`{line}`: expected `key value`"));
    }
    let text = |w: &[u8]| String::from_utf8_lossy(w).into_owned();
    let value = rest.iter().map(|w| text(w)).collect::<Vec<_>>().join(" ");
    Ok(Some((text(k).to_ascii_lowercase(), value)))
}

fn num<T: std::str::FromStr>(
    file: &BTreeMap<String, String>,
    key: &str,
) -> Result<Option<T>, String> {
    file.get(key)
        .map(|v| {
            parse_size(v)
                .and_then(|n| n.to_string().parse().ok())
                .ok_or_else(|| format!("config `{key}`: `{v}` is not a number"))
        })
        .transpose()
}

/// A `yes`/`no` setting (either case); absent is no.
fn yes_no(key: &str, value: Option<String>) -> Result<bool, String> {
    match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("no") => Ok(false),
        Some("yes") => Ok(true),
        Some(_) => Err(format!("{key} `{}`: expected yes or no", value.unwrap_or_default())),
    }
}

/// Parses `123`, `64mb`, `1gb`, `512k`... (redis.conf memory units).
pub fn parse_size(v: &str) -> Option<u64> {
    let l = v.to_ascii_lowercase();
    let (digits, mul) = [
        ("gb", 1u64 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(s, m)| l.strip_suffix(s).map(|d| (d.to_string(), *m)))
    .unwrap_or((l.clone(), 1));
    digits.trim().parse::<u64>().ok()?.checked_mul(mul)
}

impl Config {
    /// How many databases the server serves: `databases`, or 1 in cluster mode (Redis
    /// Cluster has only database 0).
    pub fn database_count(&self) -> usize {
        if self.cluster.enabled {
            1
        } else {
            self.databases
        }
    }

    /// Resolves flags over the file over defaults.
    pub fn resolve(flags: Flags) -> Result<Config, String> {
        let (mut file, users, mut renames) = match &flags.config_file {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| format!("cannot read config file {}: {e}", p.display()))?;
                let file = parse_file(&text).map_err(|e| format!("{}: {e}", p.display()))?;
                let renames =
                    renames::directives(&text).map_err(|e| format!("{}: {e}", p.display()))?;
                (file, user_directives(&text), renames)
            }
            None => (BTreeMap::new(), Vec::new(), Vec::new()),
        };
        renames.extend(flags.renames.chunks_exact(2).map(|p| renames::Rename {
            line: None,
            old: p[0].clone(),
            new: p[1].clone(),
        }));
        if let Some(v) = &flags.enable_debug_command {
            values::check("enable-debug-command", v.as_bytes())
                .map_err(|why| format!("--enable-debug-command `{v}`: {why}"))?;
            file.insert("enable-debug-command".into(), v.clone());
        }
        if let Some(v) = &flags.unixsocket {
            file.insert("unixsocket".into(), v.clone());
        }
        if let Some(v) = &flags.unixsocketperm {
            file.insert("unixsocketperm".into(), v.clone());
        }
        unix_perm(file.get("unixsocketperm").map_or("0", String::as_str))?;
        let users: Vec<String> = users.into_iter().chain(flags.users.iter().cloned()).collect();
        let fsync = flags
            .appendfsync
            .or_else(|| file.get("appendfsync").cloned())
            .unwrap_or_else(|| "everysec".into());
        let appendfsync = SyncPolicy::parse(&fsync)
            .ok_or_else(|| format!("appendfsync `{fsync}`: expected always, everysec or no"))?;
        let enabled =
            flags.cluster_enabled.clone().or_else(|| file.get("cluster-enabled").cloned());
        let cluster = ClusterOptions {
            enabled: yes_no("cluster-enabled", enabled)?,
            node_id: flags
                .cluster_node_id
                .map_or_else(|| num(&file, "cluster-node-id"), |v| Ok(Some(v)))?,
            nodes: flags.cluster_nodes.clone().or_else(|| file.get("cluster-nodes").cloned()),
            partitions: flags
                .cluster_partitions
                .map_or_else(|| num(&file, "cluster-partitions"), |v| Ok(Some(v)))?,
            replicas: flags
                .cluster_replicas
                .map_or_else(|| num(&file, "cluster-replicas"), |v| Ok(Some(v)))?,
            bootstrap: yes_no(
                "cluster-bootstrap",
                flags.cluster_bootstrap.clone().or_else(|| file.get("cluster-bootstrap").cloned()),
            )?,
            node_timeout: flags
                .cluster_node_timeout
                .map_or_else(|| num(&file, "cluster-node-timeout"), |v| Ok(Some(v)))?,
        };
        let events = flags
            .notify_keyspace_events
            .clone()
            .or_else(|| file.get("notify-keyspace-events").cloned())
            .unwrap_or_default();
        let notify_keyspace_events = crate::types::notify::parse_classes(events.as_bytes())
            .ok_or_else(|| {
                format!(
                    "notify-keyspace-events `{events}`: Invalid event class character. Use \
                     'Ag$lshzxeKEtmdn'."
                )
            })?;
        let port = match flags.port {
            Some(p) => p,
            None => num::<u16>(&file, "port")?.unwrap_or(6379),
        };
        Ok(Config {
            port,
            bind: flags
                .bind
                .or_else(|| {
                    file.get("bind").and_then(|b| b.split_whitespace().next().map(String::from))
                })
                .unwrap_or_else(|| "127.0.0.1".into()),
            dir: flags
                .dir
                .or_else(|| file.get("dir").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("strata-data")),
            requirepass: flags
                .requirepass
                .or_else(|| file.get("requirepass").cloned())
                .unwrap_or_default(),
            appendfsync,
            disable_thp: match flags
                .disable_thp
                .clone()
                .or_else(|| file.get("disable-thp").cloned())
            {
                None => true,
                given => yes_no("disable-thp", given)?,
            },
            write_buffer_size: flags
                .write_buffer_size
                .map_or_else(|| num(&file, "write-buffer-size"), |v| Ok(Some(v)))?,
            block_cache_size: flags
                .block_cache_size
                .map_or_else(|| num(&file, "block-cache-size"), |v| Ok(Some(v)))?,
            max_background_jobs: flags
                .max_background_jobs
                .map_or_else(|| num(&file, "max-background-jobs"), |v| Ok(Some(v)))?,
            io_threads: flags
                .io_threads
                .map_or_else(|| num(&file, "io-threads"), |v| Ok(Some(v)))?
                .map(|n| n.max(1)),
            proto_max_bulk_len: flags
                .proto_max_bulk_len
                .map_or_else(|| num(&file, "proto-max-bulk-len"), |v| Ok(Some(v)))?
                .unwrap_or(512 << 20),
            hash_max_listpack_entries: flags
                .hash_max_listpack_entries
                .map_or_else(|| num(&file, "hash-max-listpack-entries"), |v| Ok(Some(v)))?
                .unwrap_or(crate::types::compact_hash::DEFAULT_MAX_ENTRIES),
            hash_max_listpack_value: flags
                .hash_max_listpack_value
                .map_or_else(|| num(&file, "hash-max-listpack-value"), |v| Ok(Some(v)))?
                .unwrap_or(crate::types::compact_hash::DEFAULT_MAX_VALUE),
            databases: match flags
                .databases
                .map_or_else(|| num(&file, "databases"), |v| Ok(Some(v)))?
            {
                None => DEFAULT_DATABASES,
                Some(n) if (1..=crate::storage::databases::MAX_DATABASES).contains(&n) => n,
                Some(n) => {
                    return Err(format!(
                        "databases: {n} is out of range (1 to {})",
                        crate::storage::databases::MAX_DATABASES
                    ))
                }
            },
            notify_keyspace_events,
            cluster,
            extra: file,
            users,
            renames,
            config_file: flags
                .config_file
                .as_ref()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        })
    }

    /// Engine options from this configuration.
    pub fn engine_options(&self) -> strata::Options {
        let mut o = strata::Options {
            write_buffer_size: self.write_buffer_size.unwrap_or(DEFAULT_WRITE_BUFFER_SIZE),
            block_cache_size: self.block_cache_size.unwrap_or_else(default_block_cache_size),
            // A cache sized for the working set rarely evicts: blocks of tables that
            // compaction deleted would otherwise stay until it fills.
            uncache_aggressiveness: 1,
            ..strata::Options::default()
        };
        if self.write_buffer_size.is_none() && !self.cluster.enabled {
            o.min_write_buffer_number_to_merge = DEFAULT_MEMTABLES_TO_MERGE;
            o.max_write_buffer_number = DEFAULT_MEMTABLES_TO_MERGE + 1;
        }
        // The families share one WAL, and some are written seldom (the server's own, a
        // database's scores): the WALs kept are bounded as RocksDB's default bounds them for
        // one family, not the sum over all of them the engine's default allows.
        o.max_total_wal_size = 4 * (o.write_buffer_size as u64) * o.max_write_buffer_number as u64;
        if let Some(v) = self.max_background_jobs {
            o.max_background_jobs = v.max(1);
        }
        o
    }

    /// The settings CONFIG GET reports (Redis names, lower case).
    pub fn params(&self) -> BTreeMap<String, String> {
        let mut m = self.extra.clone();
        let mut set = |k: &str, v: String| {
            m.insert(k.to_string(), v);
        };
        set("port", self.port.to_string());
        set("bind", self.bind.clone());
        set("dir", self.dir.display().to_string());
        set("requirepass", self.requirepass.clone());
        set("appendfsync", self.appendfsync.name().to_string());
        set("appendonly", "yes".into());
        set("proto-max-bulk-len", self.proto_max_bulk_len.to_string());
        set("hash-max-listpack-entries", self.hash_max_listpack_entries.to_string());
        set("hash-max-listpack-value", self.hash_max_listpack_value.to_string());
        // Redis 7's older names of the same two settings.
        set("hash-max-ziplist-entries", self.hash_max_listpack_entries.to_string());
        set("hash-max-ziplist-value", self.hash_max_listpack_value.to_string());
        set(
            "notify-keyspace-events",
            crate::types::notify::render_classes(self.notify_keyspace_events),
        );
        set("cluster-enabled", if self.cluster.enabled { "yes" } else { "no" }.to_string());
        let node_timeout = self.cluster.node_timeout.unwrap_or(DEFAULT_NODE_TIMEOUT_MS);
        set("cluster-node-timeout", node_timeout.to_string());
        set("databases", self.database_count().to_string());
        set("disable-thp", if self.disable_thp { "yes" } else { "no" }.to_string());
        for (k, v) in [
            ("save", ""),
            ("maxmemory", "0"),
            ("maxmemory-policy", "noeviction"),
            ("maxclients", "10000"),
            ("timeout", "0"),
            ("tcp-keepalive", "300"),
            ("hz", "10"),
            // Redis's encoding thresholds of lists, sets and sorted sets, with its defaults:
            // these types have one encoding each here (`docs/format/server-encoding.md`);
            // the set and sorted-set ones name the encoding OBJECT ENCODING reports, by
            // Redis's rules (`commands::keys::object`), and change nothing else.
            ("list-max-listpack-size", "-2"),
            ("list-max-ziplist-size", "-2"),
            ("list-compress-depth", "0"),
            ("set-max-intset-entries", "512"),
            ("zset-max-listpack-entries", "128"),
            ("zset-max-listpack-value", "64"),
            ("zset-max-ziplist-entries", "128"),
            ("zset-max-ziplist-value", "64"),
            // The size of a stream's nodes, which approximate trimming removes whole
            // (`types::stream::node`).
            ("stream-node-max-entries", "100"),
            ("stream-node-max-bytes", "4096"),
            // How long a script runs before other clients are told BUSY (milliseconds;
            // `busy-reply-threshold` is the same setting's newer name).
            ("lua-time-limit", "5000"),
            ("busy-reply-threshold", "5000"),
            // SLOWLOG's (`crate::slowlog`), with Redis's defaults.
            ("slowlog-log-slower-than", "10000"),
            ("slowlog-max-len", "128"),
            // RESTORE always makes Redis's deep checks of a payload (`types::rdb`): every
            // value is decoded whole before it is stored. The setting is kept for CONFIG.
            ("sanitize-dump-payload", "no"),
            // Writes need this many connected replicas (a standalone server has none:
            // above 0, writes are refused with NOREPLICAS); the lag is kept for CONFIG.
            ("min-replicas-to-write", "0"),
            ("min-slaves-to-write", "0"),
            ("min-replicas-max-lag", "10"),
            ("min-slaves-max-lag", "10"),
            // The largest sparse HyperLogLog (`types::hll`), Redis's default.
            ("hll-sparse-max-bytes", "3000"),
        ] {
            m.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        // Redis's other parameters, kept without effect (`redis_params`).
        for (k, v) in redis_params::ACCEPTED {
            m.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        // Both names of a parameter report its value (the file's lines are read under the
        // 7.0 name: `parse_file`).
        for (name, alias) in ALIASES {
            if let Some(v) = m.get(*name).cloned() {
                m.insert((*alias).to_string(), v);
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parameter written by CONFIG REWRITE (all of them, as off their default) passes
    /// the file's checks and reads back as CONFIG GET reported it (Redis's "CONFIG REWRITE
    /// sanity").
    #[test]
    fn every_parameter_rewritten_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let before = Config::resolve(Flags { dir: Some(dir.path().into()), ..Flags::default() })
            .unwrap()
            .params();
        let settings =
            rewrite::Settings { current: &before, defaults: &BTreeMap::new(), users: None };
        let text = rewrite::rewrite("", &settings);
        assert!(text.lines().count() > 100, "{text}");
        let path = dir.path().join("redis.conf");
        std::fs::write(&path, &text).unwrap();
        let after = Config::resolve(Flags { config_file: Some(path), ..Flags::default() });
        let after = after.unwrap_or_else(|e| panic!("{e}\n{text}")).params();
        for (k, v) in &before {
            assert_eq!(after.get(k), Some(v), "{k}");
        }
    }

    #[test]
    fn a_file_line_under_an_older_name_sets_the_parameter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redis.conf");
        let text =
            "hash-max-ziplist-entries 7\nzset-max-ziplist-value 9\nzset-max-listpack-value 11\n";
        std::fs::write(&path, text).unwrap();
        let cfg = Config::resolve(Flags { config_file: Some(path), ..Flags::default() }).unwrap();
        assert_eq!(cfg.hash_max_listpack_entries, 7);
        let p = cfg.params();
        assert_eq!(
            (p["hash-max-listpack-entries"].as_str(), p["hash-max-ziplist-entries"].as_str()),
            ("7", "7")
        );
        assert_eq!(
            (p["zset-max-listpack-value"].as_str(), p["zset-max-ziplist-value"].as_str()),
            ("11", "11"),
            "the last line wins"
        );
    }

    #[test]
    fn file_then_flags() {
        let f = parse_file("# c\nport 7000\nappendfsync always\nrequirepass \"pw x\"\n").unwrap();
        assert_eq!(f["port"], "7000");
        assert_eq!(f["requirepass"], "pw x");
        assert_eq!(parse_size("64mb"), Some(64 << 20));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn a_value_a_parameter_does_not_take_is_an_error_naming_its_line() {
        let err = parse_file("port 7000\nslowlog-max-len lots\n").unwrap_err();
        assert_eq!(
            err,
            "line 2: `slowlog-max-len lots`: argument couldn't be parsed into an integer"
        );
        let err = parse_file("tracking-table-max-keys -1\n").unwrap_err();
        assert!(err.starts_with("line 1: `tracking-table-max-keys -1`: argument must be"), "{err}");
        assert!(parse_file("lazyfree-lazy-eviction maybe\n").is_err(), "by its default's shape");
        let f = parse_file("slowlog-log-slower-than -1\nhz 20\n").unwrap();
        assert_eq!(f["slowlog-log-slower-than"], "-1");
    }

    #[test]
    fn keyspace_events_come_from_the_flag_over_the_file_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata.conf");
        std::fs::write(&path, "notify-keyspace-events \"Elx\"\n").unwrap();
        let file = Flags { config_file: Some(path.clone()), ..Flags::default() };
        assert_eq!(Config::resolve(file).unwrap().params()["notify-keyspace-events"], "lxE");
        let both = Flags {
            config_file: Some(path),
            notify_keyspace_events: Some("KA".into()),
            ..Flags::default()
        };
        assert_eq!(Config::resolve(both).unwrap().params()["notify-keyspace-events"], "AK");
        let none = Config::resolve(Flags::default()).unwrap();
        assert_eq!(none.notify_keyspace_events, 0);
        let bad = Flags { notify_keyspace_events: Some("Kq".into()), ..Flags::default() };
        let err = Config::resolve(bad).unwrap_err();
        assert!(err.contains("Invalid event class character"), "{err}");
    }

    #[test]
    fn disable_thp_is_yes_unless_the_flag_or_the_file_says_no() {
        assert!(Config::resolve(Flags::default()).unwrap().disable_thp);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata.conf");
        std::fs::write(&path, "disable-thp no\n").unwrap();
        let file = Flags { config_file: Some(path.clone()), ..Flags::default() };
        assert!(!Config::resolve(file).unwrap().disable_thp);
        let flag =
            Flags { config_file: Some(path), disable_thp: Some("YES".into()), ..Flags::default() };
        assert!(Config::resolve(flag).unwrap().disable_thp);
        let bad = Flags { disable_thp: Some("maybe".into()), ..Flags::default() };
        assert_eq!(Config::resolve(bad).unwrap_err(), "disable-thp `maybe`: expected yes or no");
    }

    #[test]
    fn block_cache_defaults_to_a_share_of_memory_unless_set() {
        let d = default_block_cache_size();
        assert!((32 << 20..=4 << 30).contains(&d), "{d}");
        let mut c = Config::resolve(Flags::default()).unwrap();
        assert_eq!(c.engine_options().block_cache_size, d);
        c.block_cache_size = Some(5 << 20);
        assert_eq!(c.engine_options().block_cache_size, 5 << 20);
    }

    #[test]
    fn memtables_default_to_the_servers_size_unless_set() {
        let c = Config::resolve(Flags::default()).unwrap();
        let o = c.engine_options();
        assert_eq!(o.write_buffer_size, DEFAULT_WRITE_BUFFER_SIZE);
        assert_eq!((o.min_write_buffer_number_to_merge, o.max_write_buffer_number), (4, 5));
        assert_eq!(o.max_total_wal_size, 320 << 20);
        let set = Flags { write_buffer_size: Some(3 << 20), ..Flags::default() };
        let o = Config::resolve(set).unwrap().engine_options();
        assert_eq!(o.write_buffer_size, 3 << 20);
        assert_eq!((o.min_write_buffer_number_to_merge, o.max_write_buffer_number), (1, 2));
        let mut cluster = Config::resolve(Flags::default()).unwrap();
        cluster.cluster.enabled = true;
        assert_eq!(cluster.engine_options().min_write_buffer_number_to_merge, 1);
    }

    /// Lines that add up as Redis reads them: `save`'s pairs (an empty one clears them) and
    /// `client-output-buffer-limit`'s classes; regression: only the last line was kept, so
    /// CONFIG GET showed one `save` pair of several.
    #[test]
    fn save_and_output_buffer_limit_lines_add_up() {
        let file = parse_file("save 900 1\nsave 300 10\n").unwrap();
        assert_eq!(file["save"], "900 1 300 10");
        let file = parse_file("save 900 1\nsave \"\"\nsave 60 5 30 7\n").unwrap();
        assert_eq!(file["save"], "60 5 30 7");
        assert_eq!(parse_file("save 900 1\nsave \"\"\n").unwrap()["save"], "");
        let file = parse_file(
            "client-output-buffer-limit replica 1 2 3\n\
             client-output-buffer-limit pubsub 4mb 2mb 9 normal 5 6 7\n",
        )
        .unwrap();
        assert_eq!(
            file["client-output-buffer-limit"],
            "normal 5 6 7 slave 1 2 3 pubsub 4194304 2097152 9"
        );
        for (bad, why) in [
            ("normal 1 2", "Wrong number of arguments in buffer limit configuration."),
            ("master 1 2 3", "Invalid client class specified in buffer limit configuration."),
            (
                "pubsub 1 x 3",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "pubsub 1 2 -3",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
        ] {
            assert_eq!(output_limit_groups(bad), Err(why), "{bad}");
            assert!(values::check("client-output-buffer-limit", bad.as_bytes()).is_err());
        }
        assert_eq!(fold_line("maxmemory", Some("1"), "2"), "2");
    }

    /// Every parameter the server reports is a directive a file may hold; a name nothing
    /// reads stops the start with its line (regression: it was taken and ignored, so a
    /// misspelt `requirepass` left the server open).
    #[test]
    fn a_directive_nothing_reads_stops_the_start() {
        let c = Config::resolve(Flags::default()).unwrap();
        for k in c.params().keys() {
            assert!(known_directive(canonical(k)), "{k} is reported but refused in a file");
        }
        let err = parse_file("port 7000\nrequirepas secret\n").unwrap_err();
        assert_eq!(err, "line 2: `requirepas secret`: Bad directive or wrong number of arguments");
        assert!(parse_file("rename-command FLUSHALL \"\"\nrename-command get fetch\n").is_ok());
        assert!(parse_file("hash-max-ziplist-entries 5\nreplicaof no one\n").is_ok());
    }
}
