//! The state commands run against: what every connection shares ([`Shared`]: the store, the
//! settings CONFIG shows, INFO's counters, the client list, scan cursors) and what one
//! connection holds ([`Conn`]). The network side ([`crate::server`]) creates both; commands
//! read and change them.

use crate::blocked::{Blocked, Outcome};
use crate::config::Config;
use crate::routing::Router;
use crate::script::Scripts;
use crate::storage::databases::Databases;
use crate::storage::Engine;
use crate::types::compact_hash::Limits;
use crate::types::notify::Notifier;
use crate::types::stream::NodeLimits;
use crate::types::{now_ms, Keyspace};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counters reported by INFO.
pub struct Stats {
    /// Commands executed.
    pub commands: AtomicU64,
    /// Error replies.
    pub errors: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open now.
    pub connected: AtomicUsize,
    /// Connections closed for a protocol error.
    pub protocol_errors: AtomicU64,
    /// Error replies to the master's commands (a replica's) or to a replica's (INFO
    /// `unexpected_error_replies`; `replicaof::stream`).
    pub unexpected_errors: AtomicU64,
    /// Per command (by its index in the command table): INFO commandstats.
    pub per_command: Box<[CommandCounters]>,
    /// Error replies by their code (`ERR`, `WRONGTYPE`...): INFO errorstats.
    pub error_codes: Mutex<BTreeMap<String, u64>>,
    /// Active expiry rounds stopped by their time limit with expired keys still being found
    /// (INFO's `expired_time_cap_reached_count`).
    pub expire_time_capped: AtomicU64,
    /// Time active expiry rounds took, in microseconds (INFO's
    /// `expire_cycle_cpu_milliseconds`).
    pub expire_micros: AtomicU64,
    /// Rounds the expiry walk took, and whether it patrols (`server::tasks::WalkPace`): INFO
    /// `strata`'s `strata_expiry_walk`, not reset by CONFIG RESETSTAT.
    pub expire_walk_rounds: AtomicU64,
    /// See [`Stats::expire_walk_rounds`].
    pub expire_walk_patrolling: AtomicBool,
    /// `latency-tracking`: whether runs go to the commands' histograms.
    pub latency_tracking: AtomicBool,
    /// The most memory seen in use (`commands::memory`; INFO's `used_memory_peak`).
    pub memory_peak: AtomicU64,
    /// The memory in use once the server started (INFO's `used_memory_startup`).
    pub memory_startup: AtomicU64,
    /// Values deleted that Redis would free lazily (INFO's `lazyfreed_objects`,
    /// `commands::lazyfree`).
    pub lazyfreed: AtomicU64,
}

/// The most commands and subcommands the tables may hold ([`Stats::per_command`]'s length).
pub const MAX_COMMANDS: usize = 512;

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            commands: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            connected: AtomicUsize::new(0),
            protocol_errors: AtomicU64::new(0),
            unexpected_errors: AtomicU64::new(0),
            per_command: (0..MAX_COMMANDS).map(|_| CommandCounters::default()).collect(),
            error_codes: Mutex::new(BTreeMap::new()),
            expire_time_capped: AtomicU64::new(0),
            expire_micros: AtomicU64::new(0),
            expire_walk_rounds: AtomicU64::new(0),
            expire_walk_patrolling: AtomicBool::new(false),
            latency_tracking: AtomicBool::new(true),
            memory_peak: AtomicU64::new(0),
            memory_startup: AtomicU64::new(0),
            lazyfreed: AtomicU64::new(0),
        }
    }
}

impl Stats {
    /// Counts a run of the command (or subcommand) at `index` that took `took`, failed or
    /// not; its time goes to the command's histogram while `latency-tracking` is on.
    pub fn count_run(&self, index: usize, took: std::time::Duration, ok: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(c) = self.per_command.get(index) else { return };
        c.calls.fetch_add(1, Relaxed);
        c.usec.fetch_add(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Relaxed);
        if !ok {
            c.failed.fetch_add(1, Relaxed);
        }
        if self.latency_tracking.load(Relaxed) {
            c.histogram.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
    }

    /// CONFIG RESETSTAT: the counters back to zero (not the gauges).
    pub fn reset(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        for c in [
            &self.commands,
            &self.errors,
            &self.connections,
            &self.protocol_errors,
            &self.unexpected_errors,
            &self.expire_time_capped,
            &self.expire_micros,
            // Redis's CONFIG RESETSTAT starts the peak over too.
            &self.memory_peak,
            &self.lazyfreed,
        ] {
            c.store(0, Relaxed);
        }
        for c in &self.per_command {
            for n in [&c.calls, &c.usec, &c.rejected, &c.failed] {
                n.store(0, Relaxed);
            }
            c.histogram.reset();
        }
        self.error_codes.lock().clear();
    }

    /// Counts an error reply under its code (the first word of `reply`).
    pub fn count_error(&self, reply: &str) {
        let code = reply.split(' ').next().unwrap_or("ERR");
        let mut codes = self.error_codes.lock();
        // Bounded as Redis bounds it (128 codes): a client cannot grow it without end.
        if codes.len() >= 128 && !codes.contains_key(code) {
            return;
        }
        *codes.entry(code.to_string()).or_insert(0) += 1;
    }
}

/// One command's counters (INFO commandstats, LATENCY HISTOGRAM), or one container's
/// subcommand's (`commands::stats_index`).
#[derive(Default)]
pub struct CommandCounters {
    /// Runs of its handler.
    pub calls: AtomicU64,
    /// Microseconds spent in them.
    pub usec: AtomicU64,
    /// Refused before running (arity, authentication, routing...).
    pub rejected: AtomicU64,
    /// Runs that replied with an error.
    pub failed: AtomicU64,
    /// The runs' times.
    pub histogram: crate::latency::Histogram,
}

/// What CLIENT LIST shows of a connection.
#[derive(Clone, Default)]
pub struct ClientEntry {
    /// Peer address.
    pub addr: String,
    /// Its socket's file descriptor (-1: none).
    pub fd: i64,
    /// CLIENT SETNAME.
    pub name: String,
    /// CLIENT SETINFO LIB-NAME / LIB-VER.
    pub lib: String,
    /// When it connected.
    pub since: Option<Instant>,
    /// Protocol version.
    pub resp: u8,
    /// The database it SELECTed.
    pub db: usize,
    /// The server's address of the connection (CLIENT LIST's `laddr`).
    pub laddr: String,
    /// Ends the connection's task (CLIENT KILL): its socket closes and its registration goes.
    pub kill: Option<tokio::task::AbortHandle>,
    /// Its last command and when it began (CLIENT LIST's `cmd` and `idle`).
    pub activity: Arc<Activity>,
    /// CLIENT NO-EVICT ON (CLIENT LIST's `e`; recorded only: `maxmemory-clients` evicts
    /// nothing here).
    pub no_evict: bool,
    /// The ACL user it authenticated as (CLIENT LIST's `user`; none: the default user, as it
    /// connected). The cell, not its name: a user deleted and made again is another.
    pub user: Option<Arc<crate::acl::UserCell>>,
    /// The replication link's client (`crate::replicaof`: CLIENT LIST's flag `M`, CLIENT KILL
    /// TYPE master), and its socket, which CLIENT KILL shuts (the link then connects again
    /// and resumes, as a redis-server replica does).
    pub master_link: Option<Arc<std::net::TcpStream>>,
    /// A connection to the Unix socket (CLIENT LIST's flag `U`).
    pub unix: bool,
}

/// What a connection did last and what it holds, written by its connection loop and command
/// dispatch, read by CLIENT LIST, CLIENT INFO and INFO.
#[derive(Default)]
pub struct Activity {
    /// When its last command began: milliseconds since [`Activity::clock`]'s start; 0 for
    /// none yet.
    at_ms: AtomicU64,
    /// Its last command: 1 + its index in `COMMANDS`, or 1 + `COMMANDS.len()` + the index of
    /// its subcommand's entry (`commands::subcommands`); 0 for none yet.
    command: AtomicU64,
    /// Its buffers and state as CLIENT LIST shows them.
    figures: [AtomicU64; Figure::COUNT],
    /// Set by the clients' round (`server::tasks`, ten times a second): the connection
    /// checks its read buffer against the peak since the last round (`BUFFERS_CHECK`), or
    /// lets go of its buffers while idle (`BUFFERS_RELEASE`, with `wake`).
    buffers: std::sync::atomic::AtomicU8,
    /// Wakes an idle connection told to let go of its buffers.
    pub wake: tokio::sync::Notify,
}

/// [`Activity::take_buffers_call`]: nothing asked.
pub const BUFFERS_NONE: u8 = 0;
/// [`Activity::take_buffers_call`]: shrink a read buffer much larger than its recent peak.
pub const BUFFERS_CHECK: u8 = 1;
/// [`Activity::take_buffers_call`]: idle for more than 2 s: let go of the buffers.
pub const BUFFERS_RELEASE: u8 = 2;

/// A connection's figures in CLIENT LIST (Redis's names). The read buffer holds what the
/// client sent that the connection has not yet let go of: while a read's commands run, all
/// of that read (theirs included, as Redis keeps its query buffer until the read's last
/// command ran), after them the start of a command still incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Bytes in the read buffer (`qbuf`).
    Qbuf,
    /// Its room left (`qbuf-free`).
    QbufFree,
    /// Its size (`rbs`).
    Rbs,
    /// The most it held since the clients' last round (`rbp`; Redis's `querybuf_peak`).
    Rbp,
    /// Bytes of the running command's arguments (`argv-mem`; 0 between commands).
    ArgvMem,
    /// Commands queued by MULTI, plus 1 (`multi`: -1 outside MULTI).
    MultiPlusOne,
    /// Bytes of their arguments (`multi-mem`).
    MultiMem,
    /// Channels subscribed (`sub`).
    Sub,
    /// Patterns subscribed (`psub`).
    Psub,
    /// Shard channels subscribed (`ssub`).
    Ssub,
    /// Reply bytes waiting to be written (`obl`).
    Obl,
    /// The reply buffer's size (part of `tot-mem`).
    OutSize,
}

impl Figure {
    const COUNT: usize = Figure::OutSize as usize + 1;
}

impl Activity {
    /// The memory the connection holds (CLIENT LIST's `tot-mem`, MEMORY STATS'
    /// `clients.normal`): its state, read buffer, arguments, MULTI queue and reply buffer.
    pub fn total_memory(&self) -> u64 {
        std::mem::size_of::<Conn>() as u64
            + self.get(Figure::Rbs)
            + self.get(Figure::ArgvMem)
            + self.get(Figure::MultiMem)
            + self.get(Figure::OutSize)
    }

    /// The clock's start (the first call's instant).
    fn clock() -> std::time::Instant {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        *START.get_or_init(std::time::Instant::now)
    }

    /// Records that the command coded `code` (see the field), of `argv` bytes of arguments,
    /// began at `at`.
    pub fn note(&self, code: u64, argv: usize, at: std::time::Instant) {
        let ms = at.saturating_duration_since(Self::clock()).as_millis() as u64;
        self.at_ms.store(ms.max(1), Ordering::Relaxed);
        self.command.store(code, Ordering::Relaxed);
        self.set(Figure::ArgvMem, argv);
    }

    /// The code of the last command (0: none) and the seconds since it began, or since
    /// `since` (the connection's start) before any.
    pub fn last(&self, since: Option<std::time::Instant>) -> (u64, u64) {
        let now = std::time::Instant::now().saturating_duration_since(Self::clock());
        let at = match self.at_ms.load(Ordering::Relaxed) {
            0 => since.map_or(now, |s| s.saturating_duration_since(Self::clock())),
            ms => std::time::Duration::from_millis(ms),
        };
        (self.command.load(Ordering::Relaxed), now.saturating_sub(at).as_secs())
    }

    /// Sets one figure.
    pub fn set(&self, f: Figure, v: usize) {
        self.figures[f as usize].store(v as u64, Ordering::Relaxed);
    }

    /// One figure.
    pub fn get(&self, f: Figure) -> u64 {
        self.figures[f as usize].load(Ordering::Relaxed)
    }

    /// Records the read buffer: `len` bytes held of `capacity` (its peak grows with it).
    pub fn read_buffer(&self, len: usize, capacity: usize) {
        self.set(Figure::Qbuf, len);
        self.set(Figure::QbufFree, capacity.saturating_sub(len));
        self.set(Figure::Rbs, capacity);
        self.figures[Figure::Rbp as usize].fetch_max(len as u64, Ordering::Relaxed);
    }

    /// The clients' round: asks the connection to check its read buffer, or, idle for more
    /// than 2 s (Redis's rule) and holding buffers with nothing in them, to let go of them.
    /// `since`: when the connection began.
    pub fn buffers_round(&self, since: Option<std::time::Instant>) {
        let (_, idle) = self.last(since);
        let holds = self.get(Figure::Rbs) + self.get(Figure::OutSize) > 0;
        if idle > 2 && holds && self.get(Figure::Qbuf) == 0 {
            self.buffers.store(BUFFERS_RELEASE, Ordering::Relaxed);
            self.wake.notify_one();
        } else {
            self.buffers.store(BUFFERS_CHECK, Ordering::Relaxed);
        }
    }

    /// What the clients' round asked since the last call (`BUFFERS_*`).
    pub fn take_buffers_call(&self) -> u8 {
        if self.buffers.load(Ordering::Relaxed) == BUFFERS_NONE {
            return BUFFERS_NONE;
        }
        self.buffers.swap(BUFFERS_NONE, Ordering::Relaxed)
    }

    /// Records what the connection's state holds between commands: its transaction's queue,
    /// its subscriptions, and no running command's arguments.
    pub fn between_commands(&self, conn: &Conn) {
        self.set(Figure::ArgvMem, 0);
        match &conn.multi {
            Some(m) => {
                self.set(Figure::MultiPlusOne, m.queued.len() + 1);
                self.set(Figure::MultiMem, m.queued_bytes);
            }
            None => {
                self.set(Figure::MultiPlusOne, 0);
                self.set(Figure::MultiMem, 0);
            }
        }
        let subs = conn.subs.as_ref();
        self.set(Figure::Sub, subs.map_or(0, |s| s.channels.len()));
        self.set(Figure::Psub, subs.map_or(0, |s| s.patterns.len()));
        self.set(Figure::Ssub, subs.map_or(0, |s| s.shards.len()));
    }
}

/// SCAN/HSCAN cursors: a numeric cursor names the key (or field) the next call starts at.
/// Bounded: when full it is cleared (an old cursor then restarts from the beginning).
#[derive(Default)]
pub struct Cursors {
    next: u64,
    map: HashMap<u64, Vec<u8>>,
}

impl Cursors {
    const MAX: usize = 100_000;

    /// Stores a resume point, returning its cursor (never 0).
    pub fn save(&mut self, at: Vec<u8>) -> u64 {
        if self.map.len() >= Self::MAX {
            self.map.clear();
        }
        self.next += 1;
        self.map.insert(self.next, at);
        self.next
    }

    /// The resume point of a cursor.
    pub fn load(&self, c: u64) -> Option<Vec<u8>> {
        self.map.get(&c).cloned()
    }
}

/// State shared by every connection.
pub struct Shared {
    /// The data: the databases (one in cluster mode) on the engine.
    pub dbs: Arc<Databases>,
    /// When a hash is compact (`hash-max-listpack-entries`/`-value`; CONFIG SET changes them).
    pub hash_limits: Limits,
    /// The size of a stream's nodes (`stream-node-max-entries`/`-bytes`; CONFIG SET).
    pub stream_nodes: NodeLimits,
    /// Settings as CONFIG GET shows them (lower-case names).
    pub params: RwLock<BTreeMap<String, String>>,
    /// The startup configuration.
    pub config: Config,
    /// Counters.
    pub stats: Stats,
    /// Open connections.
    pub clients: Mutex<HashMap<u64, ClientEntry>>,
    /// Scan cursors.
    pub cursors: Mutex<Cursors>,
    /// Start time.
    pub started: Instant,
    /// The port listened on (CONFIG SET changes it).
    pub port: std::sync::atomic::AtomicU16,
    /// Where CONFIG SET hands the listener of a new port to the accept loop
    /// (`server::listener::serve`), which takes it in place of the old one.
    pub new_listener: Mutex<Option<tokio::sync::mpsc::UnboundedSender<std::net::TcpListener>>>,
    /// Cluster mode's router (`None`: standalone, every key is served here).
    pub router: Option<Arc<dyn Router>>,
    /// SAVE, BGSAVE and LASTSAVE's state.
    pub persistence: Arc<Persistence>,
    /// Notified by SHUTDOWN: the server stops as at SIGTERM (`lib.rs`).
    pub shutdown: tokio::sync::Notify,
    /// The clients blocked on keys (`commands::blocking`).
    pub blocked: Blocked,
    /// EVAL's Lua engine and script cache (`commands::scripting`).
    pub scripts: Scripts,
    /// Pub/sub's subscriptions (`commands::pubsub`).
    pub pubsub: crate::pubsub::PubSub,
    /// SLOWLOG's log (`slowlog-log-slower-than`, `slowlog-max-len`; CONFIG SET changes them).
    pub slowlog: crate::slowlog::SlowLog,
    /// LATENCY's monitor (`latency-monitor-threshold`; CONFIG SET changes it).
    pub latency: crate::latency::Monitor,
    /// The keyspace notifications enabled (`notify-keyspace-events`; CONFIG SET changes
    /// them): the data operations raise them, `commands::pubsub` publishes them.
    pub notifier: Notifier,
    /// `min-replicas-to-write` (CONFIG SET changes it): a standalone server has no Redis
    /// replicas, so any value above 0 refuses writes with NOREPLICAS, as Redis does while too
    /// few replicas are connected.
    pub min_replicas_to_write: std::sync::atomic::AtomicU64,
    /// `maxmemory` in bytes, 0 for none (CONFIG SET changes it; `commands::oom`).
    pub maxmemory: std::sync::atomic::AtomicU64,
    /// Whether what the server counts in memory is over `maxmemory` once its caches have
    /// given back what they can: commands that may grow it are refused with OOM
    /// (`commands::oom`, which sets it at CONFIG SET and at each clients' round).
    pub out_of_memory: AtomicBool,
    /// Active expiry runs (DEBUG SET-ACTIVE-EXPIRE turns it off and on).
    pub active_expire: AtomicBool,
    /// The periodic rounds (active expiry, the clients' round) are held: DEBUG PAUSE-CRON,
    /// as Redis's holds its `serverCron`. The WAL's once-a-second sync goes on.
    pub cron_paused: AtomicBool,
    /// Scripts may call the commands flagged `noscript` (DEBUG SET-DISABLE-DENY-SCRIPTS).
    pub scripts_may_call_noscript: AtomicBool,
    /// The largest sparse HyperLogLog, in bytes (`hll-sparse-max-bytes`; CONFIG SET).
    pub hll_sparse_max: AtomicUsize,
    /// CLIENT PAUSE's pause (`commands::client_pause`).
    pub pause: crate::pause::ClientPause,
    /// DEBUG SLEEP's hold of the whole server (`pause::Frozen`).
    pub frozen: crate::pause::Frozen,
    /// Client-side caching: the tracking clients and the keys they read
    /// (`commands::client_tracking`; `tracking-table-max-keys`, CONFIG SET changes it).
    pub tracking: Arc<crate::tracking::Tracking>,
    /// ACL users and ACL LOG (`requirepass` is the default user's password).
    pub acl: crate::acl::Users,
    /// The names clients reach commands by (`rename-command`; `commands::find`).
    pub names: crate::config::renames::Renames,
    /// The master this server follows as a Redis replica, if any (REPLICAOF).
    pub master_link: crate::master_link::MasterLink,
    /// FAILOVER's state (`commands::failover`).
    pub failover: crate::failover::Failover,
    /// The replicas following this server (`sync_source`).
    pub replicas: crate::replicas::Replicas,
}

/// OBJECT FREQ's counters as `params` shape them: counted under an LFU `maxmemory-policy`,
/// by `lfu-log-factor` and `lfu-decay-time` (CONFIG SET calls it again when one changes).
pub fn configure_frequencies(
    f: &crate::storage::frequency::Frequencies,
    params: &BTreeMap<String, String>,
) {
    f.set_counting(params.get("maxmemory-policy").is_some_and(|p| lfu_policy(p)));
    f.set_log_factor(params.get("lfu-log-factor").and_then(|v| v.parse().ok()).unwrap_or(10));
    f.set_decay_minutes(params.get("lfu-decay-time").and_then(|v| v.parse().ok()).unwrap_or(1));
}

/// Whether `policy` (a `maxmemory-policy` value) is an LFU policy.
pub fn lfu_policy(policy: &str) -> bool {
    policy.to_ascii_lowercase().ends_with("-lfu")
}

impl Shared {
    /// The state of a server on `store` configured by `config`, listening on `port`.
    pub fn new(dbs: Arc<Databases>, config: Config, port: u16) -> Shared {
        let mut params = config.params();
        params.insert("port".into(), port.to_string());
        let notifier = Notifier::new(config.notify_keyspace_events);
        let min_replicas =
            params.get("min-replicas-to-write").and_then(|v| v.parse().ok()).unwrap_or(0);
        let maxmemory =
            params.get("maxmemory").and_then(|v| crate::config::parse_size(v)).unwrap_or(0);
        configure_frequencies(&dbs.engine().frequencies, &params);
        let hll_sparse_max = params
            .get("hll-sparse-max-bytes")
            .and_then(|v| crate::config::parse_size(v))
            .map_or(crate::types::hll::DEFAULT_SPARSE_MAX, |n| n as usize);
        let slowlog = crate::slowlog::SlowLog::new(
            params
                .get("slowlog-log-slower-than")
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::slowlog::DEFAULT_THRESHOLD_US),
            params
                .get("slowlog-max-len")
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::slowlog::DEFAULT_MAX_LEN),
        );
        let latency_tracking =
            params.get("latency-tracking").is_none_or(|v| v.eq_ignore_ascii_case("yes"));
        let latency_threshold =
            params.get("latency-monitor-threshold").and_then(|v| v.parse().ok()).unwrap_or(0);
        let tracking_max_keys = params
            .get("tracking-table-max-keys")
            .and_then(|v| v.parse().ok())
            .unwrap_or(crate::tracking::DEFAULT_MAX_KEYS);
        let acl = {
            let pw = params.get("requirepass").filter(|p| !p.is_empty());
            let users = crate::acl::Users::new(pw.map(String::as_bytes));
            let all = params.get("acl-pubsub-default").is_some_and(|v| v == "allchannels");
            users.set_pubsub_default_all(all);
            if let Some(n) = params.get("acllog-max-len").and_then(|v| v.parse().ok()) {
                users.log.set_max_len(n);
            }
            users
        };
        Shared {
            dbs,
            hash_limits: Limits::new(
                config.hash_max_listpack_entries,
                config.hash_max_listpack_value,
            ),
            stream_nodes: stream_node_limits(&params),
            params: RwLock::new(params),
            config,
            stats: Stats {
                latency_tracking: AtomicBool::new(latency_tracking),
                ..Stats::default()
            },
            clients: Mutex::new(HashMap::new()),
            cursors: Mutex::new(Cursors::default()),
            started: Instant::now(),
            port: std::sync::atomic::AtomicU16::new(port),
            new_listener: Mutex::new(None),
            router: None,
            persistence: Persistence::new(),
            shutdown: tokio::sync::Notify::new(),
            blocked: Blocked::default(),
            scripts: Scripts::new(crate::config::REDIS_VERSION)
                .unwrap_or_else(|e| panic!("{e} (the Lua sources are built in)")),
            pubsub: crate::pubsub::PubSub::default(),
            slowlog,
            latency: crate::latency::Monitor::new(latency_threshold),
            notifier,
            min_replicas_to_write: std::sync::atomic::AtomicU64::new(min_replicas),
            maxmemory: std::sync::atomic::AtomicU64::new(maxmemory),
            out_of_memory: AtomicBool::new(false),
            active_expire: AtomicBool::new(true),
            cron_paused: AtomicBool::new(false),
            scripts_may_call_noscript: AtomicBool::new(false),
            hll_sparse_max: AtomicUsize::new(hll_sparse_max),
            pause: crate::pause::ClientPause::default(),
            frozen: crate::pause::Frozen::default(),
            tracking: Arc::new(crate::tracking::Tracking::new(tracking_max_keys)),
            acl,
            names: crate::config::renames::Renames::default(),
            master_link: crate::master_link::MasterLink::default(),
            failover: crate::failover::Failover::default(),
            replicas: crate::replicas::Replicas::default(),
        }
    }

    /// The same state serving commands by `names` (`rename-command`).
    pub fn with_names(mut self, names: crate::config::renames::Renames) -> Shared {
        self.names = names;
        self
    }

    /// Whether writes are refused for lack of good replicas (`min-replicas-to-write`: fewer
    /// online replicas acknowledged within `min-replicas-max-lag` seconds). In cluster mode
    /// every write waits for its partition's quorum instead: never.
    pub fn lacks_good_replicas(&self) -> bool {
        let min = self.min_replicas_to_write.load(std::sync::atomic::Ordering::Relaxed);
        if self.router.is_some() || min == 0 {
            return false;
        }
        let lag = self
            .params
            .read()
            .get("min-replicas-max-lag")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(10);
        (self.replicas.good(lag) as u64) < min
    }

    /// The same state in cluster mode, routing each slot's commands by `router`.
    pub fn with_router(mut self, router: Arc<dyn Router>) -> Shared {
        self.router = Some(router);
        self
    }

    /// Database `db`'s keyspace as a command starting now sees it (`db`: a connection's
    /// [`Conn::db`], whose set exists: `storage::databases`).
    pub fn keyspace(&self, db: usize) -> Keyspace<'_> {
        Keyspace::new(self.dbs.store(db), &self.hash_limits, now_ms())
            .with_stream_nodes(&self.stream_nodes)
            .with_notifier(&self.notifier)
            .holding_expiry(self.pause.current().is_some())
            .in_db(db)
    }

    /// The engine every database shares (the locks, the sync policy, the WAL).
    pub fn engine(&self) -> &Engine {
        self.dbs.engine()
    }

    /// Whether a new connection starts authenticated (as the default user): that user is
    /// on and takes any password (`nopass`: no `requirepass`).
    pub fn default_user_open(&self) -> bool {
        let default = self.acl.default_user();
        let u = default.read();
        u.enabled && u.nopass
    }
}

/// The stream node size the settings give (a configuration file may set it).
fn stream_node_limits(params: &BTreeMap<String, String>) -> NodeLimits {
    let get = |k: &str, default: u64| {
        params.get(k).and_then(|v| crate::config::parse_size(v)).unwrap_or(default)
    };
    NodeLimits::new(
        get("stream-node-max-entries", crate::types::stream::DEFAULT_NODE_ENTRIES),
        get("stream-node-max-bytes", crate::types::stream::DEFAULT_NODE_BYTES),
    )
}

/// What SAVE, BGSAVE and LASTSAVE share (`commands/persistence.rs`).
pub struct Persistence {
    /// Unix time (seconds) of the last finished save; the start time before any.
    pub last_save: AtomicU64,
    /// A BGSAVE is running.
    pub saving: AtomicBool,
    /// Whether the last BGSAVE succeeded.
    pub last_bgsave_ok: AtomicBool,
    /// A BGREWRITEAOF is running (`commands::persistence`).
    pub rewriting: AtomicBool,
    /// Whether the last BGREWRITEAOF succeeded.
    pub last_rewrite_ok: AtomicBool,
    /// BGREWRITEAOFs finished (INFO's `aof_rewrites`).
    pub rewrites: AtomicU64,
    /// The server's change count (`Notifier::changes`) when the last finished save began:
    /// INFO's `rdb_changes_since_last_save` is the count since.
    pub saved_changes: AtomicU64,
}

impl Persistence {
    pub fn new() -> Arc<Persistence> {
        Arc::new(Persistence {
            last_save: AtomicU64::new(unix_now()),
            saving: AtomicBool::new(false),
            last_bgsave_ok: AtomicBool::new(true),
            rewriting: AtomicBool::new(false),
            last_rewrite_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
            saved_changes: AtomicU64::new(0),
        })
    }
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Per-connection state.
pub struct Conn {
    /// CLIENT ID.
    pub id: u64,
    /// The replication stream's end after this connection's last write (what WAIT waits
    /// for replicas to acknowledge).
    pub repl_offset: u64,
    /// Its entry's record of its last command (none for a connection not on the books).
    pub activity: Option<Arc<Activity>>,
    /// Whether commands are allowed (no password, or AUTH succeeded).
    pub authed: bool,
    /// The ACL user it runs as (`None`: a state of the server's own, which may run
    /// anything: a blocked command re-run, a script's calls, checked for their caller).
    pub user: Option<Arc<crate::acl::UserCell>>,
    /// Speaks RESP3.
    pub resp3: bool,
    /// Close after writing the replies (QUIT).
    pub close: bool,
    /// READONLY was sent: in cluster mode a replica may serve this connection's reads.
    pub readonly: bool,
    /// ASKING was sent and the next command has not run yet: it follows an `ASK` redirect.
    pub asking: bool,
    /// The database SELECT chose (0 at the start; always 0 in cluster mode).
    pub db: usize,
    /// Inside MULTI: the commands queued for EXEC (`commands::multi`).
    pub multi: Option<Multi>,
    /// WATCHed keys (`commands::multi`).
    pub watched: Vec<Watched>,
    /// EXEC is running this connection's queued commands.
    pub in_exec: bool,
    /// A script's commands run on this connection state (`commands::scripting`): they are
    /// not logged in SLOWLOG one by one, the script's command is.
    pub in_script: bool,
    /// The keys EXEC's commands (or a script's) wrote, for the clients blocked on them; or,
    /// when this connection just blocked, the keys it blocked on
    /// (`commands::blocking::signal`); each with its database (`blocked::waited_key`).
    pub touched: Vec<Vec<u8>>,
    /// Set by a blocking command that found nothing: the connection waits for this.
    pub blocked: Option<BlockedOn>,
    /// Set on the connection state a blocked command is re-run with (`commands::blocking`).
    pub retry: Option<Retry>,
    /// Its pub/sub subscriptions and message queue, once it subscribed (`commands::pubsub`).
    pub subs: Option<Subscriptions>,
    /// CLIENT REPLY: whether replies are sent (`server::listener` drops the others).
    pub reply_mode: ReplyMode,
    /// CLIENT TRACKING is on: how this connection's reads are remembered
    /// (`commands::client_tracking`; the rest of its tracking is in `Shared::tracking`).
    pub tracking: Option<crate::tracking::Mode>,
    /// A read-only command ran on this state: set on a script's connection state, for its
    /// caller's tracking (`commands::client_tracking`).
    pub script_read: bool,
    /// Frames a command produced that go out whatever its reply does (subscription
    /// confirmations, push frames in RESP3): sent even when its reply is not (CLIENT REPLY
    /// OFF or SKIP), as Redis sends them.
    pub pushes: Vec<u8>,
    /// The replication link's client (`crate::replicaof`): the master's commands, which a
    /// read-only replica runs and which no memory limit refuses.
    pub master: bool,
    /// What the client said of itself with REPLCONF, for a SYNC it sends.
    pub replconf: ReplConf,
    /// A SYNC or PSYNC this connection was granted: once the replies before it are out, the
    /// connection carries the transfer (`crate::sync_source`) and then closes.
    pub sync: Option<SyncRequest>,
}

/// What a client asking for the dataset said of itself with REPLCONF (`commands::replication`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplConf {
    /// `rdb-only 1`: the RDB alone, no stream of writes after it (`redis-cli --rdb`).
    pub rdb_only: bool,
    /// `rdb-filter-only` was given: the RDB holds only what it names.
    pub filtered: bool,
    /// `rdb-filter-only functions`: the function libraries are in a filtered RDB.
    pub functions: bool,
    /// `capa eof`: it reads a transfer ended by a mark instead of a length.
    pub eof: bool,
    /// `listening-port`: where the replica serves (INFO replication lists it).
    pub listening_port: u16,
}

/// A transfer of the dataset a client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRequest {
    /// PSYNC (answered `+FULLRESYNC` first) or SYNC.
    pub psync: bool,
    /// Whether the RDB holds the keys.
    pub keys: bool,
    /// Whether the RDB holds the function libraries.
    pub functions: bool,
    /// Whether the replication stream follows (a replica), or the connection closes after
    /// the RDB (`REPLCONF rdb-only 1`).
    pub stream: bool,
    /// PSYNC's replication id and offset: the stream alone is sent from there if that
    /// history is this server's and its bytes are still held.
    pub resume: Option<(Vec<u8>, u64)>,
    /// PSYNC named a history (an id other than `?`): a full sync instead is a partial one
    /// refused (INFO's `sync_partial_err`, as Redis counts it).
    pub named: bool,
    /// The replica's `listening-port`.
    pub port: u16,
}

/// CLIENT REPLY's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Every reply is sent.
    #[default]
    On,
    /// No reply is sent.
    Off,
    /// CLIENT REPLY SKIP ran: its own reply and the next command's are not sent.
    Skip {
        /// The SKIP command itself has not been dealt with yet.
        armed: bool,
    },
}

/// A connection's subscriptions and the queue its messages arrive in.
pub struct Subscriptions {
    /// What publishers send into.
    pub tx: tokio::sync::mpsc::UnboundedSender<crate::pubsub::Delivery>,
    /// What the connection writes out.
    pub rx: tokio::sync::mpsc::UnboundedReceiver<crate::pubsub::Delivery>,
    /// Its channels.
    pub channels: std::collections::BTreeSet<Vec<u8>>,
    /// Its patterns.
    pub patterns: std::collections::BTreeSet<Vec<u8>>,
    /// Its shard channels (SSUBSCRIBE).
    pub shards: std::collections::BTreeSet<Vec<u8>>,
}

impl Subscriptions {
    /// No subscription yet, an empty queue.
    pub fn new() -> Subscriptions {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (channels, patterns, shards) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        Subscriptions { tx, rx, channels, patterns, shards }
    }

    /// Channels and patterns together (the count SUBSCRIBE and PSUBSCRIBE reply with; the
    /// shard channels count apart, in SSUBSCRIBE's replies).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Whether it has any subscription (a RESP2 connection then runs only the subscription
    /// commands, PING, QUIT and RESET).
    pub fn any(&self) -> bool {
        self.count() + self.shards.len() > 0
    }
}

impl Default for Subscriptions {
    fn default() -> Self {
        Subscriptions::new()
    }
}

/// The next client id, not given to any other client (CLIENT ID's; a connection's, the
/// replication link's).
pub fn next_client_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Conn {
    /// A connection's state when it connects: `authed` when no password is set.
    pub fn new(id: u64, authed: bool) -> Conn {
        Conn {
            id,
            repl_offset: 0,
            activity: None,
            authed,
            user: None,
            resp3: false,
            close: false,
            readonly: false,
            asking: false,
            db: 0,
            multi: None,
            watched: Vec::new(),
            in_exec: false,
            in_script: false,
            touched: Vec::new(),
            blocked: None,
            retry: None,
            subs: None,
            reply_mode: ReplyMode::On,
            tracking: None,
            script_read: false,
            pushes: Vec::new(),
            master: false,
            replconf: ReplConf::default(),
            sync: None,
        }
    }
}

/// What a blocked connection waits for.
#[derive(Debug)]
pub struct BlockedOn {
    /// Its outcome: served, timed out, unblocked.
    pub rx: tokio::sync::oneshot::Receiver<Outcome>,
    /// When it times out; `None`: never.
    pub deadline: Option<Instant>,
    /// The blocked command's index in the command table (its INFO commandstats counters).
    pub command: usize,
    /// Its reply, when it comes, is not sent: CLIENT REPLY was OFF, or SKIP named this
    /// command, when it blocked (as Redis drops a served blocked client's reply then).
    pub silent: bool,
    /// Its command line and the microseconds its first run took, when that run was slow
    /// enough for SLOWLOG: logged if the wait times out or is unblocked (a served command
    /// is logged with the run that serves it, `commands::blocking`).
    pub slow: Option<(Vec<Vec<u8>>, u64)>,
    /// How long its first run took: counted for it (INFO commandstats, LATENCY HISTOGRAM)
    /// if the wait times out or is unblocked, as Redis counts it.
    pub first_run: std::time::Duration,
}

/// A blocked command being re-run because `key` was written.
#[derive(Debug, Clone)]
pub struct Retry {
    /// The written key.
    pub key: Vec<u8>,
    /// The re-run found nothing (it called `block` again).
    pub still_blocked: bool,
}

/// A WATCHed key.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The key.
    pub key: Vec<u8>,
    /// Its database.
    pub db: usize,
    /// The set the database used, and the SWAPDBs that had named it, when it was watched: a
    /// swap since touches the key if it is live on either side (`commands::multi`).
    pub set: u32,
    /// See `set`.
    pub swaps: u64,
    /// The store's watch point when it was watched: a write after it aborts EXEC.
    pub point: u64,
    /// It had expired (not yet deleted) when watched; else its expiring before EXEC aborts it.
    pub expired: bool,
    /// In cluster mode, the partition its records were filed under when it was watched.
    pub partition: Option<u16>,
}

/// A transaction being queued (between MULTI and EXEC or DISCARD).
#[derive(Debug, Default)]
pub struct Multi {
    /// The queued command lines.
    pub queued: Vec<Vec<Vec<u8>>>,
    /// The bytes of their arguments (CLIENT LIST's `multi-mem`).
    pub queued_bytes: usize,
    /// A command was refused while queuing: EXEC discards the transaction (EXECABORT).
    pub failed: bool,
}
