//! Commands: the command table ([`COMMANDS`]: name, arity, flags, handler) and dispatch.
//! One file per type family holds its commands; each parses its arguments, calls the data
//! layer (`crate::types`) and formats the reply. Argument parsing shared by several is in
//! [`args`], error replies (and the mapping of data-layer errors to them) in [`errors`].
//!
//! A handler appends its reply to the connection's [`Out`], or fails with a [`CmdError`]
//! whose text `dispatch` replies with.

pub mod acl;
pub mod args;
pub mod bitops;
pub mod blocking;
pub mod client_kill;
pub mod client_pause;
pub mod client_tracking;
pub mod cluster;
pub mod command_specs;
pub mod config_rewrite;
pub mod databases;
pub mod debug;
pub mod digest;
pub mod dump;
pub mod errors;
pub mod failover;
pub mod flags;
pub mod functions;
pub mod geo;
pub mod glob;
pub mod hash;
pub mod hyperloglog;
pub mod info;
pub mod key_flags;
pub mod keys;
pub mod latency;
pub mod lazyfree;
pub mod list;
pub mod memory;
pub mod migrate;
pub mod monitor;
pub mod multi;
pub mod oom;
pub mod persistence;
pub mod propagation;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod set;
pub mod slowlog;
pub mod sort;
pub mod stream;
pub mod stream_group;
pub mod stream_info;
pub mod stream_read;
pub mod strings;
pub mod subcommands;
pub mod zset;
pub mod zset_algebra;
pub mod zset_range;

use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::locks::{Busy, LockTable};
use errors::{arity_err, unknown_err, CmdError, NOAUTH};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Result of a handler.
pub type CmdResult = Result<(), CmdError>;
/// A command handler.
pub type Handler = fn(&Shared, &mut Conn, &[Vec<u8>], &mut Out) -> CmdResult;

/// One entry of the command table.
pub struct Command {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity: `n` > 0 exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    /// Whether it writes (reported by COMMAND; such commands run off the async workers when
    /// every write is synced).
    pub write: bool,
    /// The handler.
    pub handler: Handler,
    /// Where its keys are, as Redis's COMMAND reports them.
    pub keys: KeySpec,
}

impl Command {
    /// Whether a command line of `argc` arguments (the name included) fits the arity.
    pub fn arity_fits(&self, argc: usize) -> bool {
        arity_fits(self.arity, argc)
    }
}

/// Whether a command line of `argc` arguments (the name included) fits Redis arity `arity`:
/// `n` > 0 exactly n arguments, `-n` at least n.
fn arity_fits(arity: i32, argc: usize) -> bool {
    let n = argc as i32;
    if arity > 0 {
        n == arity
    } else {
        n >= -arity
    }
}

/// The error a command line `args` of `cmd` gets for its number of arguments, if any: the
/// command's arity, then a listed subcommand's (`subcommands`), as Redis checks both before
/// anything runs or waits.
pub fn arity_error(cmd: &'static Command, args: &[Vec<u8>]) -> Option<String> {
    if !cmd.arity_fits(args.len()) {
        return Some(arity_err(cmd.name));
    }
    let (_, sub) = subcommands::subcommand_of(cmd, args)?;
    (!arity_fits(sub.1, args.len())).then(|| arity_err(sub.0))
}

/// The positions of a command's key arguments: Redis's (first, last, step) — the first key's
/// index (0: no keys), the last key's (negative: counted from the end, -1 the last argument)
/// and the distance between keys (2 for MSET's key-value pairs) — then the keys a count
/// argument or a `STREAMS` keyword places, and the keys options name ([`OptionKeys`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    /// The first key's argument index; 0 when the command takes no key.
    pub first: i32,
    /// The last key's index; negative counts from the end.
    pub last: i32,
    /// The step from one key to the next.
    pub step: i32,
    /// When not 0: the index of the argument that counts the keys, which follow it (LMPOP's
    /// `numkeys`), after the (first, last, step) ones (ZUNIONSTORE's destination). Redis
    /// cannot express these in (first, last, step), so COMMAND INFO reports the `movablekeys`
    /// flag beside the triple, as it does for them.
    pub counted_by: i32,
    /// When not 0: the keys follow the first `STREAMS` argument at or after this index, and
    /// are the first half of the arguments after it (XREAD's `STREAMS key... id...`);
    /// reported as `counted_by` ones are.
    pub streams_from: i32,
    /// Keys named by options, after all the others.
    pub options: OptionKeys,
    /// The "keys" are shard channels (SSUBSCRIBE, SPUBLISH: Redis's `not_key` key specs): a
    /// cluster routes them by slot, but they name no data (COMMAND GETKEYS has none, no key
    /// lock is taken for them).
    pub channels: bool,
}

/// Keys an option names: the argument after its keyword. Their positions depend on the
/// other arguments, so they make a command's keys `movablekeys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKeys {
    None,
    /// The argument after each occurrence of one of the keywords at or after index `from`
    /// (that argument is the option's value, not searched): GEORADIUS's STORE and STOREDIST,
    /// where the last one given is written, so every one given is routed and locked. Redis's
    /// keyword key specs take each keyword's first only (the same keys unless one repeats).
    Keywords {
        from: usize,
        words: &'static [&'static str],
    },
    /// SORT's STORE destination: the argument after the last `STORE` that is not an
    /// argument of `LIMIT` (two), `GET` or `BY` (one each), as Redis's `sortGetKeys` finds it.
    SortStore,
    /// MIGRATE's `KEYS key...`: with it, every argument after it, and they replace the key
    /// argument (then empty); found past `COPY`, `REPLACE`, `AUTH pw` and `AUTH2 user pw`
    /// from index 6 on, as Redis's `migrateGetKeys` finds it ([`migrate_keys_from`]).
    Migrate,
}

/// Where MIGRATE's `KEYS` list starts in `args`, if it has one.
pub fn migrate_keys_from(args: &[Vec<u8>]) -> Option<usize> {
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if a.eq_ignore_ascii_case(b"keys") {
            return Some(i + 1);
        }
        i += if a.eq_ignore_ascii_case(b"auth") {
            2
        } else if a.eq_ignore_ascii_case(b"auth2") {
            3
        } else {
            1
        };
    }
    None
}

impl OptionKeys {
    /// The positions of the keys these options name in `args` (the command name at 0).
    fn positions(&self, args: &[Vec<u8>]) -> Vec<usize> {
        let is = |i: usize, w: &str| args[i].eq_ignore_ascii_case(w.as_bytes());
        match *self {
            OptionKeys::None => Vec::new(),
            OptionKeys::Keywords { from, words } => {
                let mut keys = Vec::new();
                let mut i = from;
                while i + 1 < args.len() {
                    if words.iter().any(|w| is(i, w)) {
                        keys.push(i + 1);
                        i += 1;
                    }
                    i += 1;
                }
                keys
            }
            // The KEYS list replaces the key argument: `KeySpec::positions`.
            OptionKeys::Migrate => Vec::new(),
            OptionKeys::SortStore => {
                let mut store = None;
                let mut i = 2;
                while i < args.len() {
                    if is(i, "limit") {
                        i += 2;
                    } else if is(i, "get") || is(i, "by") {
                        i += 1;
                    } else if is(i, "store") && i + 1 < args.len() {
                        store = Some(i + 1);
                    }
                    i += 1;
                }
                store.into_iter().collect()
            }
        }
    }
}

impl KeySpec {
    /// No keys.
    pub const NONE: KeySpec = KeySpec::range(0, 0, 0);

    /// Keys from `first` to `last` (negative: from the end), `step` apart.
    pub const fn range(first: i32, last: i32, step: i32) -> KeySpec {
        KeySpec {
            first,
            last,
            step,
            counted_by: 0,
            streams_from: 0,
            options: OptionKeys::None,
            channels: false,
        }
    }

    /// These positions, holding shard channels rather than keys ([`KeySpec::channels`]).
    pub const fn of_channels(self) -> KeySpec {
        KeySpec { channels: true, ..self }
    }

    /// One key, at `i`.
    pub const fn one(i: i32) -> KeySpec {
        KeySpec::range(i, i, 1)
    }

    /// Every argument from `first` to the end, `step` apart.
    pub const fn rest(first: i32, step: i32) -> KeySpec {
        KeySpec::range(first, -1, step)
    }

    /// Keys counted by the argument at `n`: as many as it says, right after it.
    pub const fn counted(n: i32) -> KeySpec {
        KeySpec::NONE.then_counted(n)
    }

    /// These keys, then as many as the argument at `n` says, right after it (ZUNIONSTORE's
    /// destination, then its sources).
    pub const fn then_counted(self, n: i32) -> KeySpec {
        KeySpec { counted_by: n, ..self }
    }

    /// Keys after `STREAMS`, searched from argument `from` on (XREAD, XREADGROUP).
    pub const fn streams(from: i32) -> KeySpec {
        KeySpec { streams_from: from, ..KeySpec::NONE }
    }

    /// These keys, then those `options` name.
    pub const fn with_options(self, options: OptionKeys) -> KeySpec {
        KeySpec { options, ..self }
    }

    /// Whether the keys' positions depend on other arguments (Redis's `movablekeys`).
    pub fn movable(&self) -> bool {
        self.counted_by != 0 || self.streams_from != 0 || self.options != OptionKeys::None
    }

    /// Whether a command line may name more than one key.
    pub fn may_be_several(&self) -> bool {
        self.movable() || (self.first != 0 && self.last != self.first)
    }

    /// Whether the command takes keys at all.
    pub fn has_keys(&self) -> bool {
        self.first != 0 || self.movable()
    }

    /// The indexes of the keys in `args` (the command name at 0), as COMMAND GETKEYS gives
    /// them; empty for a command without keys, and for a counted spec whose count is not a
    /// positive integer or names more keys than there are arguments. Arity is checked
    /// before, so a range's indexes are in range except for a trailing key a short argument
    /// list lacks (not given).
    pub fn positions(&self, args: &[Vec<u8>]) -> Vec<usize> {
        if self.options == OptionKeys::Migrate {
            if let Some(first) = migrate_keys_from(args) {
                return (first..args.len()).collect();
            }
        }
        let argc = args.len() as i32;
        if self.streams_from != 0 {
            let from = self.streams_from as usize;
            let at = args.iter().skip(from).position(|a| a.eq_ignore_ascii_case(b"streams"));
            return match at {
                Some(i) => {
                    let first = from + i + 1;
                    (first..first + (args.len() - first) / 2).collect()
                }
                None => Vec::new(),
            };
        }
        let last = match (self.first, self.last) {
            (0, _) => 0, // no keys: an empty range from 1
            (_, l) if l < 0 => argc + l,
            (_, l) => l.min(argc - 1),
        };
        let mut keys: Vec<usize> = (self.first.max(1)..=last)
            .step_by(self.step.max(1) as usize)
            .map(|i| i as usize)
            .collect();
        if self.counted_by != 0 {
            let at = self.counted_by as usize;
            let n = args.get(at).and_then(|a| crate::types::number::parse_int_strict(a));
            match n {
                Some(n) if n >= 1 && n < i64::from(argc) - at as i64 => {
                    keys.extend(at + 1..=at + n as usize);
                }
                _ => return Vec::new(),
            }
        }
        keys.extend(self.options.positions(args));
        keys
    }

    /// The keys of `args`, at their [`positions`](Self::positions).
    pub fn of<'a>(&self, args: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
        self.positions(args).into_iter().map(|i| args[i].as_slice()).collect()
    }
}

/// GEORADIUS's keys: the set, and where STORE or STOREDIST (options from the sixth
/// argument on) write.
const GEORADIUS_KEYS: KeySpec =
    KeySpec::one(1).with_options(OptionKeys::Keywords { from: 6, words: &["store", "storedist"] });

/// GEORADIUSBYMEMBER's keys: GEORADIUS's, its options from the fifth argument on.
const GEORADIUSBYMEMBER_KEYS: KeySpec =
    KeySpec::one(1).with_options(OptionKeys::Keywords { from: 5, words: &["store", "storedist"] });

macro_rules! cmd {
    ($name:expr, $arity:expr, $write:expr, $keys:expr, $h:path) => {
        Command { name: $name, arity: $arity, write: $write, handler: $h, keys: $keys }
    };
}

/// Every command.
pub static COMMANDS: &[Command] = &[
    // strings
    cmd!("get", 2, false, KeySpec::one(1), strings::get),
    cmd!("set", -3, true, KeySpec::one(1), strings::set),
    cmd!("setnx", 3, true, KeySpec::one(1), strings::setnx),
    cmd!("setex", 4, true, KeySpec::one(1), strings::setex),
    cmd!("psetex", 4, true, KeySpec::one(1), strings::psetex),
    cmd!("getset", 3, true, KeySpec::one(1), strings::getset),
    cmd!("getdel", 2, true, KeySpec::one(1), strings::getdel),
    cmd!("mget", -2, false, KeySpec::rest(1, 1), strings::mget),
    cmd!("mset", -3, true, KeySpec::rest(1, 2), strings::mset),
    cmd!("msetnx", -3, true, KeySpec::rest(1, 2), strings::msetnx),
    cmd!("incr", 2, true, KeySpec::one(1), strings::incr),
    cmd!("decr", 2, true, KeySpec::one(1), strings::decr),
    cmd!("incrby", 3, true, KeySpec::one(1), strings::incrby),
    cmd!("decrby", 3, true, KeySpec::one(1), strings::decrby),
    cmd!("append", 3, true, KeySpec::one(1), strings::append),
    cmd!("strlen", 2, false, KeySpec::one(1), strings::strlen),
    cmd!("getex", -2, true, KeySpec::one(1), strings::getex),
    cmd!("getrange", 4, false, KeySpec::one(1), strings::getrange),
    cmd!("substr", 4, false, KeySpec::one(1), strings::getrange),
    cmd!("setrange", 4, true, KeySpec::one(1), strings::setrange),
    cmd!("getbit", 3, false, KeySpec::one(1), strings::getbit),
    cmd!("setbit", 4, true, KeySpec::one(1), strings::setbit),
    cmd!("incrbyfloat", 3, true, KeySpec::one(1), strings::incrbyfloat),
    cmd!("lcs", -3, false, KeySpec::range(1, 2, 1), strings::lcs),
    // bitmaps
    cmd!("bitcount", -2, false, KeySpec::one(1), bitops::bitcount),
    cmd!("bitpos", -3, false, KeySpec::one(1), bitops::bitpos),
    cmd!("bitop", -4, true, KeySpec::rest(2, 1), bitops::bitop),
    cmd!("bitfield", -2, true, KeySpec::one(1), bitops::bitfield),
    cmd!("bitfield_ro", -2, false, KeySpec::one(1), bitops::bitfield_ro),
    // HyperLogLogs. PFCOUNT is read-only as in Redis, though it caches its count in the value
    // (`hyperloglog::pfcount`).
    cmd!("pfadd", -2, true, KeySpec::one(1), hyperloglog::pfadd),
    cmd!("pfcount", -2, false, KeySpec::rest(1, 1), hyperloglog::pfcount),
    cmd!("pfmerge", -2, true, KeySpec::rest(1, 1), hyperloglog::pfmerge),
    cmd!("pfdebug", 3, true, KeySpec::one(2), hyperloglog::pfdebug),
    cmd!("pfselftest", 1, false, KeySpec::NONE, hyperloglog::pfselftest),
    // keys
    cmd!("del", -2, true, KeySpec::rest(1, 1), lazyfree::del),
    cmd!("unlink", -2, true, KeySpec::rest(1, 1), lazyfree::del),
    cmd!("exists", -2, false, KeySpec::rest(1, 1), keys::exists),
    // TOUCH answers as EXISTS does: the keys that exist, each time it is named. Redis also
    // refreshes their access time, which only OBJECT IDLETIME and LRU eviction read; this
    // server keeps no access times (neither exists here).
    cmd!("touch", -2, false, KeySpec::rest(1, 1), keys::exists),
    cmd!("expire", -3, true, KeySpec::one(1), keys::expire),
    cmd!("pexpire", -3, true, KeySpec::one(1), keys::pexpire),
    cmd!("expireat", -3, true, KeySpec::one(1), keys::expireat),
    cmd!("pexpireat", -3, true, KeySpec::one(1), keys::pexpireat),
    cmd!("ttl", 2, false, KeySpec::one(1), keys::ttl),
    cmd!("pttl", 2, false, KeySpec::one(1), keys::pttl),
    cmd!("expiretime", 2, false, KeySpec::one(1), keys::expiretime),
    cmd!("pexpiretime", 2, false, KeySpec::one(1), keys::pexpiretime),
    cmd!("persist", 2, true, KeySpec::one(1), keys::persist),
    cmd!("type", 2, false, KeySpec::one(1), keys::type_),
    cmd!("scan", -2, false, KeySpec::NONE, keys::scan),
    cmd!("keys", 2, false, KeySpec::NONE, keys::keys),
    cmd!("dbsize", 1, false, KeySpec::NONE, keys::dbsize),
    cmd!("flushdb", -1, true, KeySpec::NONE, keys::flushdb),
    cmd!("flushall", -1, true, KeySpec::NONE, keys::flushdb),
    cmd!("rename", 3, true, KeySpec::range(1, 2, 1), keys::rename),
    cmd!("renamenx", 3, true, KeySpec::range(1, 2, 1), keys::renamenx),
    cmd!("copy", -3, true, KeySpec::range(1, 2, 1), keys::copy),
    cmd!("move", 3, true, KeySpec::one(1), databases::move_),
    cmd!("randomkey", 1, false, KeySpec::NONE, keys::randomkey),
    cmd!("sort", -2, true, KeySpec::one(1).with_options(OptionKeys::SortStore), sort::sort),
    cmd!("sort_ro", -2, false, KeySpec::one(1), sort::sort_ro),
    cmd!("object", -2, false, KeySpec::one(2), keys::object),
    cmd!("dump", 2, false, KeySpec::one(1), dump::dump),
    cmd!("restore", -4, true, KeySpec::one(1), dump::restore),
    // hashes
    cmd!("hset", -4, true, KeySpec::one(1), hash::hset),
    cmd!("hmset", -4, true, KeySpec::one(1), hash::hmset),
    cmd!("hsetnx", 4, true, KeySpec::one(1), hash::hsetnx),
    cmd!("hget", 3, false, KeySpec::one(1), hash::hget),
    cmd!("hmget", -3, false, KeySpec::one(1), hash::hmget),
    cmd!("hgetall", 2, false, KeySpec::one(1), hash::hgetall),
    cmd!("hdel", -3, true, KeySpec::one(1), hash::hdel),
    cmd!("hlen", 2, false, KeySpec::one(1), hash::hlen),
    cmd!("hexists", 3, false, KeySpec::one(1), hash::hexists),
    cmd!("hincrby", 4, true, KeySpec::one(1), hash::hincrby),
    cmd!("hincrbyfloat", 4, true, KeySpec::one(1), hash::hincrbyfloat),
    cmd!("hstrlen", 3, false, KeySpec::one(1), hash::hstrlen),
    cmd!("hrandfield", -2, false, KeySpec::one(1), hash::hrandfield),
    cmd!("hkeys", 2, false, KeySpec::one(1), hash::hkeys),
    cmd!("hvals", 2, false, KeySpec::one(1), hash::hvals),
    cmd!("hscan", -3, false, KeySpec::one(1), hash::hscan),
    // lists
    cmd!("lpush", -3, true, KeySpec::one(1), list::lpush),
    cmd!("rpush", -3, true, KeySpec::one(1), list::rpush),
    cmd!("lpop", -2, true, KeySpec::one(1), list::lpop),
    cmd!("rpop", -2, true, KeySpec::one(1), list::rpop),
    cmd!("lrange", 4, false, KeySpec::one(1), list::lrange),
    cmd!("llen", 2, false, KeySpec::one(1), list::llen),
    cmd!("lindex", 3, false, KeySpec::one(1), list::lindex),
    cmd!("lpushx", -3, true, KeySpec::one(1), list::lpushx),
    cmd!("rpushx", -3, true, KeySpec::one(1), list::rpushx),
    cmd!("linsert", 5, true, KeySpec::one(1), list::linsert),
    cmd!("lset", 4, true, KeySpec::one(1), list::lset),
    cmd!("lrem", 4, true, KeySpec::one(1), list::lrem),
    cmd!("ltrim", 4, true, KeySpec::one(1), list::ltrim),
    cmd!("lpos", -3, false, KeySpec::one(1), list::lpos),
    cmd!("rpoplpush", 3, true, KeySpec::range(1, 2, 1), list::rpoplpush),
    cmd!("lmove", 5, true, KeySpec::range(1, 2, 1), list::lmove),
    cmd!("lmpop", -4, true, KeySpec::counted(1), list::lmpop),
    cmd!("blpop", -3, true, KeySpec::range(1, -2, 1), list::blpop),
    cmd!("brpop", -3, true, KeySpec::range(1, -2, 1), list::brpop),
    cmd!("blmpop", -5, true, KeySpec::counted(2), list::blmpop),
    cmd!("brpoplpush", 4, true, KeySpec::range(1, 2, 1), list::brpoplpush),
    cmd!("blmove", 6, true, KeySpec::range(1, 2, 1), list::blmove),
    // sets
    cmd!("sadd", -3, true, KeySpec::one(1), set::sadd),
    cmd!("srem", -3, true, KeySpec::one(1), set::srem),
    cmd!("smembers", 2, false, KeySpec::one(1), set::smembers),
    cmd!("sismember", 3, false, KeySpec::one(1), set::sismember),
    cmd!("scard", 2, false, KeySpec::one(1), set::scard),
    cmd!("spop", -2, true, KeySpec::one(1), set::spop),
    cmd!("smismember", -3, false, KeySpec::one(1), set::smismember),
    cmd!("srandmember", -2, false, KeySpec::one(1), set::srandmember),
    cmd!("sscan", -3, false, KeySpec::one(1), set::sscan),
    cmd!("smove", 4, true, KeySpec::range(1, 2, 1), set::smove),
    cmd!("sinter", -2, false, KeySpec::rest(1, 1), set::sinter),
    cmd!("sunion", -2, false, KeySpec::rest(1, 1), set::sunion),
    cmd!("sdiff", -2, false, KeySpec::rest(1, 1), set::sdiff),
    cmd!("sinterstore", -3, true, KeySpec::rest(1, 1), set::sinterstore),
    cmd!("sunionstore", -3, true, KeySpec::rest(1, 1), set::sunionstore),
    cmd!("sdiffstore", -3, true, KeySpec::rest(1, 1), set::sdiffstore),
    cmd!("sintercard", -3, false, KeySpec::counted(1), set::sintercard),
    // sorted sets
    cmd!("zadd", -4, true, KeySpec::one(1), zset::zadd),
    cmd!("zincrby", 4, true, KeySpec::one(1), zset::zincrby),
    cmd!("zrem", -3, true, KeySpec::one(1), zset::zrem),
    cmd!("zscore", 3, false, KeySpec::one(1), zset::zscore),
    cmd!("zcard", 2, false, KeySpec::one(1), zset::zcard),
    cmd!("zscan", -3, false, KeySpec::one(1), zset::zscan),
    cmd!("zrange", -4, false, KeySpec::one(1), zset_range::zrange),
    cmd!("zrevrange", -4, false, KeySpec::one(1), zset_range::zrevrange),
    cmd!("zrangebyscore", -4, false, KeySpec::one(1), zset_range::zrangebyscore),
    cmd!("zrevrangebyscore", -4, false, KeySpec::one(1), zset_range::zrevrangebyscore),
    cmd!("zrangebylex", -4, false, KeySpec::one(1), zset_range::zrangebylex),
    cmd!("zrevrangebylex", -4, false, KeySpec::one(1), zset_range::zrevrangebylex),
    cmd!("zrangestore", -5, true, KeySpec::range(1, 2, 1), zset_range::zrangestore),
    cmd!("zlexcount", 4, false, KeySpec::one(1), zset_range::zlexcount),
    cmd!("zremrangebyrank", 4, true, KeySpec::one(1), zset_range::zremrangebyrank),
    cmd!("zremrangebyscore", 4, true, KeySpec::one(1), zset_range::zremrangebyscore),
    cmd!("zremrangebylex", 4, true, KeySpec::one(1), zset_range::zremrangebylex),
    cmd!("zunion", -3, false, KeySpec::counted(1), zset_algebra::zunion),
    cmd!("zinter", -3, false, KeySpec::counted(1), zset_algebra::zinter),
    cmd!("zdiff", -3, false, KeySpec::counted(1), zset_algebra::zdiff),
    cmd!("zunionstore", -4, true, KeySpec::one(1).then_counted(2), zset_algebra::zunionstore),
    cmd!("zinterstore", -4, true, KeySpec::one(1).then_counted(2), zset_algebra::zinterstore),
    cmd!("zdiffstore", -4, true, KeySpec::one(1).then_counted(2), zset_algebra::zdiffstore),
    cmd!("zintercard", -3, false, KeySpec::counted(1), zset_algebra::zintercard),
    cmd!("zrevrank", 3, false, KeySpec::one(1), zset::zrevrank),
    cmd!("zmscore", -3, false, KeySpec::one(1), zset::zmscore),
    cmd!("zcount", 4, false, KeySpec::one(1), zset::zcount),
    cmd!("zrank", 3, false, KeySpec::one(1), zset::zrank),
    cmd!("zpopmin", -2, true, KeySpec::one(1), zset::zpopmin),
    cmd!("zpopmax", -2, true, KeySpec::one(1), zset::zpopmax),
    cmd!("zmpop", -4, true, KeySpec::counted(1), zset::zmpop),
    cmd!("zrandmember", -2, false, KeySpec::one(1), zset::zrandmember),
    cmd!("bzpopmin", -3, true, KeySpec::range(1, -2, 1), zset::bzpopmin),
    // geospatial indexes (sorted sets of geohashes)
    cmd!("geoadd", -5, true, KeySpec::one(1), geo::geoadd),
    cmd!("geopos", -2, false, KeySpec::one(1), geo::geopos),
    cmd!("geohash", -2, false, KeySpec::one(1), geo::geohash),
    cmd!("geodist", -4, false, KeySpec::one(1), geo::geodist),
    cmd!("georadius", -6, true, GEORADIUS_KEYS, geo::georadius),
    cmd!("georadius_ro", -6, false, KeySpec::one(1), geo::georadius_ro),
    cmd!("georadiusbymember", -5, true, GEORADIUSBYMEMBER_KEYS, geo::georadiusbymember),
    cmd!("georadiusbymember_ro", -5, false, KeySpec::one(1), geo::georadiusbymember_ro),
    cmd!("geosearch", -7, false, KeySpec::one(1), geo::geosearch),
    cmd!("geosearchstore", -8, true, KeySpec::range(1, 2, 1), geo::geosearchstore),
    cmd!("bzpopmax", -3, true, KeySpec::range(1, -2, 1), zset::bzpopmax),
    cmd!("bzmpop", -5, true, KeySpec::counted(2), zset::bzmpop),
    // streams
    cmd!("xadd", -5, true, KeySpec::one(1), stream::xadd),
    cmd!("xlen", 2, false, KeySpec::one(1), stream::xlen),
    cmd!("xrange", -4, false, KeySpec::one(1), stream::xrange),
    cmd!("xrevrange", -4, false, KeySpec::one(1), stream::xrevrange),
    cmd!("xdel", -3, true, KeySpec::one(1), stream::xdel),
    cmd!("xtrim", -4, true, KeySpec::one(1), stream::xtrim),
    cmd!("xsetid", -3, true, KeySpec::one(1), stream::xsetid),
    cmd!("xread", -4, false, KeySpec::streams(1), stream_read::xread),
    cmd!("xreadgroup", -7, true, KeySpec::streams(4), stream_read::xreadgroup),
    cmd!("xgroup", -2, true, KeySpec::one(2), stream_group::xgroup),
    cmd!("xack", -4, true, KeySpec::one(1), stream_group::xack),
    cmd!("xpending", -3, false, KeySpec::one(1), stream_group::xpending),
    cmd!("xclaim", -6, true, KeySpec::one(1), stream_group::xclaim),
    cmd!("xautoclaim", -6, true, KeySpec::one(1), stream_group::xautoclaim),
    cmd!("xinfo", -2, false, KeySpec::one(2), stream_info::xinfo),
    // connection and server
    cmd!("ping", -1, false, KeySpec::NONE, server::ping),
    cmd!("echo", 2, false, KeySpec::NONE, server::echo),
    cmd!("select", 2, false, KeySpec::NONE, databases::select),
    cmd!("wait", 3, false, KeySpec::NONE, server::wait),
    cmd!("swapdb", 3, true, KeySpec::NONE, databases::swapdb),
    cmd!("quit", -1, false, KeySpec::NONE, server::quit),
    cmd!("reset", 1, false, KeySpec::NONE, server::reset),
    cmd!("auth", -2, false, KeySpec::NONE, server::auth),
    cmd!("hello", -1, false, KeySpec::NONE, server::hello),
    cmd!("command", -1, false, KeySpec::NONE, server::command),
    cmd!("client", -2, false, KeySpec::NONE, server::client),
    cmd!("info", -1, false, KeySpec::NONE, info::info),
    cmd!("config", -2, false, KeySpec::NONE, server::config),
    cmd!("time", 1, false, KeySpec::NONE, server::time),
    cmd!("role", 1, false, KeySpec::NONE, server::role),
    cmd!("replicaof", 3, false, KeySpec::NONE, replication::replicaof),
    cmd!("slaveof", 3, false, KeySpec::NONE, replication::replicaof),
    cmd!("replconf", -1, false, KeySpec::NONE, replication::replconf),
    cmd!("sync", 1, false, KeySpec::NONE, replication::sync),
    cmd!("psync", -3, false, KeySpec::NONE, replication::sync),
    cmd!("memory", -2, false, KeySpec::one(2), memory::memory),
    cmd!("slowlog", -2, false, KeySpec::NONE, slowlog::slowlog),
    cmd!("function", -2, true, KeySpec::NONE, functions::function),
    // persistence
    cmd!("save", 1, false, KeySpec::NONE, persistence::save),
    cmd!("bgsave", -1, false, KeySpec::NONE, persistence::bgsave),
    cmd!("lastsave", 1, false, KeySpec::NONE, persistence::lastsave),
    cmd!("latency", -2, false, KeySpec::NONE, latency::latency),
    cmd!("shutdown", -1, false, KeySpec::NONE, persistence::shutdown),
    // scripting (all four take every key-lock stripe: flagged as writes)
    cmd!("eval", -3, true, KeySpec::counted(2), scripting::eval),
    cmd!("evalsha", -3, true, KeySpec::counted(2), scripting::evalsha),
    cmd!("eval_ro", -3, true, KeySpec::counted(2), scripting::eval_ro),
    cmd!("evalsha_ro", -3, true, KeySpec::counted(2), scripting::evalsha_ro),
    cmd!("script", -2, false, KeySpec::NONE, scripting::script),
    cmd!("fcall", -3, true, KeySpec::counted(2), functions::fcall),
    cmd!("fcall_ro", -3, true, KeySpec::counted(2), functions::fcall_ro),
    // pub/sub
    cmd!("subscribe", -2, false, KeySpec::NONE, pubsub::subscribe),
    cmd!("unsubscribe", -1, false, KeySpec::NONE, pubsub::unsubscribe),
    cmd!("psubscribe", -2, false, KeySpec::NONE, pubsub::psubscribe),
    cmd!("punsubscribe", -1, false, KeySpec::NONE, pubsub::punsubscribe),
    cmd!("publish", 3, false, KeySpec::NONE, pubsub::publish),
    cmd!("pubsub", -2, false, KeySpec::NONE, pubsub::pubsub),
    cmd!("monitor", 1, false, KeySpec::NONE, monitor::monitor),
    // Sharded pub/sub: the channels are keys, as in Redis 7 (a cluster routes them by slot).
    cmd!("ssubscribe", -2, false, KeySpec::rest(1, 1).of_channels(), pubsub::ssubscribe),
    cmd!("sunsubscribe", -1, false, KeySpec::rest(1, 1).of_channels(), pubsub::sunsubscribe),
    cmd!("spublish", 3, false, KeySpec::one(1).of_channels(), pubsub::spublish),
    // transactions
    cmd!("multi", 1, false, KeySpec::NONE, multi::multi),
    cmd!("exec", 1, true, KeySpec::NONE, multi::exec),
    cmd!("discard", 1, false, KeySpec::NONE, multi::discard),
    cmd!("watch", -2, false, KeySpec::rest(1, 1), multi::watch),
    cmd!("unwatch", 1, false, KeySpec::NONE, multi::unwatch),
    // cluster
    cmd!("readonly", 1, false, KeySpec::NONE, cluster::readonly),
    cmd!("asking", 1, false, KeySpec::NONE, cluster::asking),
    cmd!("readwrite", 1, false, KeySpec::NONE, cluster::readwrite),
    cmd!("cluster", -2, false, KeySpec::NONE, cluster::cluster),
    // access control (last: the command fuzzer's corpus names commands by their index here)
    cmd!("acl", -2, false, KeySpec::NONE, acl::acl),
    cmd!("migrate", -6, true, KeySpec::one(3).with_options(OptionKeys::Migrate), migrate::migrate),
    cmd!("debug", -2, false, KeySpec::NONE, debug::debug),
    cmd!("bgrewriteaof", 1, false, KeySpec::NONE, persistence::bgrewriteaof),
    cmd!("failover", -1, false, KeySpec::NONE, failover::failover),
];

/// Whether command `name` walks a whole database's keys: DBSIZE and INFO's keyspace section,
/// which Redis answers at once from counts it keeps, and KEYS, which holds Redis's one thread
/// for as long (`keys.rs`, `info.rs`). Such a command runs on a blocking thread outside a
/// transaction (`server/listener.rs`), so that a monitoring poll or a KEYS of a large store
/// does not hold its connection thread's other clients.
pub fn walks_keyspace(name: &str) -> bool {
    matches!(name, "dbsize" | "info" | "keys")
}

/// The longest command name (the table test holds every name to it).
const LONGEST_NAME: usize = 24;

/// The command a client reaches as `name` (any case) on this server: [`lookup`] unless
/// `rename-command` gave some commands other names (`config::renames`). Every name a client
/// sends, directly, queued in MULTI or from a script, and every line a client sent that is
/// looked up again (a blocked command rerun), goes through here.
pub fn find(sh: &Shared, name: &[u8]) -> Option<&'static Command> {
    if sh.names.is_empty() {
        return lookup(name);
    }
    let lower = name.to_ascii_lowercase();
    sh.names.resolve(&lower).and_then(lookup)
}

/// Whether the command `cmd` is served on this server under some name (`rename-command ...
/// ""` takes it away): COMMAND, COMMAND COUNT and COMMAND LIST leave the others out.
pub fn served(sh: &Shared, cmd: &Command) -> bool {
    sh.names.is_empty() || sh.names.serves(cmd.name)
}

/// The command table by name, hashed by the engine's unkeyed word-mixing hasher: the table
/// is fixed and its names short, so a keyed hash's defence against crafted collisions buys
/// nothing there, and its cost shows in every command (`docs/measurements.md`).
type ByName = HashMap<&'static [u8], &'static Command, strata::cache::MixBuildHasher>;

/// Looks a command up by its own (any-case) name: one hash probe of the lower-cased name in a
/// map of [`COMMANDS`] built at the first lookup. A client's names go through [`find`].
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    static BY_NAME: std::sync::OnceLock<ByName> = std::sync::OnceLock::new();
    if name.len() > LONGEST_NAME {
        return None;
    }
    let mut lower = [0u8; LONGEST_NAME];
    let lower = &mut lower[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let by_name = BY_NAME.get_or_init(|| COMMANDS.iter().map(|c| (c.name.as_bytes(), c)).collect());
    by_name.get(&*lower).copied()
}

/// The index of `cmd` in [`COMMANDS`].
pub fn index_of(cmd: &Command) -> usize {
    (cmd as *const Command as usize - COMMANDS.as_ptr() as usize) / std::mem::size_of::<Command>()
}

/// Where a command line whose [`subcommands::line_code`] is `code` is counted in
/// `Stats::per_command` (INFO commandstats, LATENCY HISTOGRAM): under its subcommand for a
/// container's listed one, as Redis 7 counts `config|set`, else under the command.
pub fn stats_index(code: u64) -> usize {
    code as usize - 1
}

/// The name a `Stats::per_command` index counts (`client|id` for a subcommand).
pub fn stats_name(index: usize) -> &'static str {
    subcommands::code_name(index as u64 + 1)
}

/// A write refused while `min-replicas-to-write` is above the replicas connected (Redis's text).
pub(crate) const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Refuses a command before it runs: the error reply, counted (INFO's error and command
/// statistics), and inside MULTI the transaction doomed. A refused EXEC ends its transaction
/// unrun, its reply `EXECABORT Transaction discarded because of: ...`, as Redis's
/// `rejectCommand` ends it whatever the refusal (arity, ACL, BUSY, OOM, ...).
fn reject(sh: &Shared, conn: &mut Conn, cmd: Option<&Command>, reply: &str, out: &mut Out) {
    let aborted;
    let reply = if cmd.is_some_and(|c| c.name == "exec") && conn.multi.take().is_some() {
        conn.watched.clear();
        // Redis's texts without a code of their own read without `ERR ` there.
        let why = reply.strip_prefix("ERR ").unwrap_or(reply);
        aborted = format!("EXECABORT Transaction discarded because of: {why}");
        aborted.as_str()
    } else {
        reply
    };
    out.error(reply);
    count_rejected(sh, cmd, reply);
    multi::doom(conn);
}

/// Counts `reply`, refusing `cmd` before it ran, in INFO's error statistics and as a rejected
/// call of the command (`None`: no command was found).
fn count_rejected(sh: &Shared, cmd: Option<&Command>, reply: &str) {
    sh.stats.errors.fetch_add(1, Ordering::Relaxed);
    sh.stats.count_error(reply);
    if let Some(c) = cmd.and_then(|c| sh.stats.per_command.get(index_of(c))) {
        c.rejected.fetch_add(1, Ordering::Relaxed);
    }
}

/// Refuses `cmd` because a script has run past `busy-reply-threshold`
/// ([`scripting::busy_refusal`]), as Redis does (an EXEC's transaction ends unrun).
pub fn refuse_busy(sh: &Shared, conn: &mut Conn, cmd: &Command, out: &mut Out) {
    let reply = if sh.scripts.running_function() {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    } else {
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    };
    reject(sh, conn, Some(cmd), reply, out);
}

/// The first stripe of a write command's keys that is busy now ([`LockTable::busy`]; for a
/// blind write, held by another writer: [`LockTable::busy_blind`]), for the
/// connection to wait for as a task before it runs the command (`server::listener`); `None`
/// when nothing would wait, and for what locks otherwise (a command queued inside MULTI, an
/// unknown one, one of the wrong arity, one without keys: EXEC and scripts lock for
/// themselves).
pub fn busy_stripe(
    sh: &Shared,
    conn: &Conn,
    cmd: Option<&Command>,
    args: &[Vec<u8>],
) -> Option<Busy> {
    if conn.multi.is_some() || conn.in_exec {
        return None;
    }
    let cmd = cmd?;
    if !cmd.write || !cmd.keys.has_keys() || !cmd.arity_fits(args.len()) {
        return None;
    }
    let locks = &sh.engine().locks;
    // A blind write waits for no mark (`storage::locks`, blind writes).
    let busy =
        if strings::blind_write(cmd.name, args) { LockTable::busy_blind } else { LockTable::busy };
    if !cmd.keys.may_be_several() {
        return busy(locks, args.get(usize::try_from(cmd.keys.first).ok()?)?);
    }
    cmd.keys.positions(args).into_iter().find_map(|i| busy(locks, &args[i]))
}

/// A write's refusal on a read-only replica.
pub(crate) const READONLY: &str = "READONLY You can't write against a read only replica.";
/// A script that may write, refused on a read-only replica.
pub(crate) const READONLY_SCRIPT: &str =
    "READONLY Can not run script with write flag on readonly replica";

/// Whether this server is a replica refusing its clients' writes (REPLICAOF under
/// `replica-read-only yes`).
pub(crate) fn read_only_replica(sh: &Shared) -> bool {
    sh.master_link.following()
        && sh.params.read().get("replica-read-only").is_none_or(|v| v.eq_ignore_ascii_case("yes"))
}

/// Why a replica refuses `cmd` from a client, as redis-server refuses it: LOADING while a full
/// sync replaces the dataset (but the commands flagged `loading`), READONLY for a write under
/// `replica-read-only yes`, MASTERDOWN while the link is down under
/// `replica-serve-stale-data no` (but the commands flagged `stale`).
fn replica_refusal(
    sh: &Shared,
    conn: &Conn,
    cmd: &'static Command,
    args: &[Vec<u8>],
) -> Option<&'static str> {
    if sh.master_link.loading() && !flags::line_has(cmd, args, "loading") {
        return Some("LOADING Redis is loading the dataset in memory");
    }
    // Redis's flag, not the table's `write` (which EXEC and the script commands carry for
    // their locks): a script is refused when it starts or at its writes (`read_only_replica`).
    // EXEC is a write when one of its queued commands is (Redis's rule: the commands it runs
    // are not refused one by one).
    if (flags::line_has(cmd, args, "write") || exec_of_writes(sh, conn, cmd))
        && read_only_replica(sh)
    {
        return Some(READONLY);
    }
    // An EXEC is judged by its commands here too.
    let unstale = |c: &'static Command, q: &[Vec<u8>]| !flags::line_has(c, q, "stale");
    if (!flags::line_has(cmd, args, "stale") || exec_queues(sh, conn, cmd, unstale))
        && stale_replica(sh)
    {
        // A script's call meets Redis's script-side words.
        return Some(if conn.in_script { STALE_IN_SCRIPT } else { MASTERDOWN });
    }
    None
}

/// Whether `cmd` is an EXEC with a write among its queued commands: refused as a write is
/// (a read-only replica, `min-replicas-to-write`), as Redis judges an EXEC by its commands.
fn exec_of_writes(sh: &Shared, conn: &Conn, cmd: &Command) -> bool {
    exec_queues(sh, conn, cmd, |c, q| flags::line_has(c, q, "write"))
}

/// Whether `cmd` is an EXEC with a queued command of which `is` holds.
fn exec_queues(
    sh: &Shared,
    conn: &Conn,
    cmd: &Command,
    is: impl Fn(&'static Command, &[Vec<u8>]) -> bool,
) -> bool {
    cmd.name == "exec"
        && conn
            .multi
            .as_ref()
            .is_some_and(|m| m.queued.iter().any(|q| find(sh, &q[0]).is_some_and(|c| is(c, q))))
}

/// A command refused on a stale replica (`replica-serve-stale-data no`, the link down).
pub(crate) const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
/// A script's call of such a command.
const STALE_IN_SCRIPT: &str = "ERR Can not execute the command on a stale replica";

/// Whether this server is a replica whose link is down under `replica-serve-stale-data no`:
/// only the commands flagged `stale` (and scripts declared `allow-stale`) run.
pub(crate) fn stale_replica(sh: &Shared) -> bool {
    sh.master_link.link_down()
        && sh
            .params
            .read()
            .get("replica-serve-stale-data")
            .is_some_and(|v| v.eq_ignore_ascii_case("no"))
}

/// Runs one command: lookup, auth and arity checks, then its handler; inside MULTI, the
/// checks and then queuing (a refusal dooms the transaction: `multi`).
pub fn dispatch(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>], out: &mut Out) {
    dispatch_found(sh, conn, find(sh, &args[0]), args, out);
}

/// Whether command `name` runs on a connection that has not authenticated (the others get
/// NOAUTH).
pub fn runs_unauthenticated(name: &str) -> bool {
    matches!(name, "auth" | "hello" | "quit" | "reset")
}

/// [`dispatch`] of `args` whose command the caller has looked up already (`found`:
/// [`find`] of `args[0]`).
pub fn dispatch_found(
    sh: &Shared,
    conn: &mut Conn,
    found: Option<&'static Command>,
    args: &[Vec<u8>],
    out: &mut Out,
) {
    // Redis 7.0's order: an unknown command, a wrong arity and a refused DEBUG are told
    // before authentication is asked for.
    let Some(cmd) = found else {
        reject(sh, conn, None, &unknown_err(args), out);
        return;
    };
    if let Some(e) = arity_error(cmd, args) {
        reject(sh, conn, Some(cmd), &e, out);
        return;
    }
    if cmd.name == "debug" && !debug::allowed(sh, conn) {
        reject(sh, conn, Some(cmd), debug::NOT_ALLOWED, out);
        return;
    }
    if !conn.authed && !runs_unauthenticated(cmd.name) {
        reject(sh, conn, Some(cmd), NOAUTH, out);
        return;
    }
    // The user's permissions, checked before the command is queued or run, and again for
    // each command EXEC runs (they may have changed since it was queued), as Redis does.
    if let Err(denied) = acl::check_user(conn.user.as_ref(), cmd, args) {
        use crate::acl::log::Context;
        let (text, context) = if conn.in_exec {
            (acl::exec_refusal_text(denied), Context::Multi)
        } else if conn.multi.is_some() {
            (acl::refusal_text(denied, cmd, args), Context::Multi)
        } else {
            (acl::refusal_text(denied, cmd, args), Context::Toplevel)
        };
        acl::log_refusal(sh, conn.id, acl::user_name(conn), denied, context, cmd, args);
        reject(sh, conn, Some(cmd), &text, out);
        return;
    }
    // In cluster mode, the keys' partition is the one they are filed under until the end.
    let admitted = cluster::refusal(sh, conn, cmd, args);
    // ASKING covers the one command after it, refused or not.
    if cmd.name != "asking" {
        conn.asking = false;
    }
    let _serving = match admitted {
        Ok(serving) => serving,
        Err(refusal) => {
            reject(sh, conn, Some(cmd), &refusal, out);
            return;
        }
    };
    // The master's commands are never refused so: Redis reads nothing of its master while a
    // script is busy, and here a command of the master's that writes waits for the script
    // (`script::gate`) where one that writes nothing (PING, SELECT) runs beside it. Refused,
    // it would count as the replica's divergence (`replicaof::stream`).
    if !conn.in_exec && !conn.master && scripting::busy_refusal(sh, cmd, args) {
        refuse_busy(sh, conn, cmd, out);
        return;
    }
    // Over `maxmemory` (`oom`): what may grow the memory is refused, as Redis refuses it
    // (an EXEC's whole transaction; what MULTI would queue, dooming it).
    if !conn.in_exec
        && !conn.master
        && sh.out_of_memory.load(Ordering::Relaxed)
        && oom::refused(sh, conn, cmd, args)
    {
        reject(sh, conn, Some(cmd), oom::OOM, out);
        return;
    }
    // A replica's refusals (REPLICAOF): its master's commands pass them, and so do an
    // EXEC's, checked at the EXEC (a REPLICAOF inside the transaction changes nothing for
    // the commands after it, as in Redis).
    let in_exec_body = conn.in_exec && !conn.in_script;
    if !conn.master && !in_exec_body && sh.master_link.following() {
        if let Some(reply) = replica_refusal(sh, conn, cmd, args) {
            reject(sh, conn, Some(cmd), reply, out);
            return;
        }
    }
    if !conn.resp3
        && conn.subs.as_ref().is_some_and(crate::state::Subscriptions::any)
        && !pubsub::allowed_when_subscribed(cmd.name)
    {
        reject(sh, conn, Some(cmd), &pubsub::subscribed_refusal(cmd.name), out);
        return;
    }
    // Writes while too few replicas are connected (`min-replicas-to-write`): refused here,
    // or inside MULTI when queued (dooming the transaction), as Redis does. Scripts check
    // when they start (a script that may write) and at each write they call
    // (`scripting::ScriptHost`); the commands an EXEC or a script runs pass here with
    // `in_exec` and are not refused one by one.
    if !conn.in_exec
        && !conn.master
        && sh.lacks_good_replicas()
        && ((cmd.write && cmd.name != "exec" && !scripting::runs_script(cmd.name))
            || exec_of_writes(sh, conn, cmd))
    {
        reject(sh, conn, Some(cmd), NOREPLICAS, out);
        return;
    }
    if conn.multi.is_some() && multi::refused_inside_multi(cmd.name) {
        reject(sh, conn, Some(cmd), "ERR Command not allowed inside a transaction", out);
        return;
    }
    if conn.multi.is_some() && !multi::runs_inside_multi(cmd.name) {
        multi::queue(conn, args, out);
        return;
    }
    sh.stats.commands.fetch_add(1, Ordering::Relaxed);
    // The databases' map stays as it is while the command runs; SWAPDB (or an EXEC running
    // one) runs alone (`storage::databases`).
    let _pin = sh.dbs.pin(cmd.name == "swapdb" || (cmd.name == "exec" && multi::swaps(conn)));
    // A reader of several keys (MGET, SINTER, EXISTS a b...) holds their stripes, so that
    // it reads all of them before or after any one write (a command, an EXEC) that spans
    // them, never between; a reader of one key needs no lock (every write is one batch).
    let readers_lock = (!cmd.write && !cmd.keys.channels && cmd.keys.may_be_several())
        .then(|| {
            let keys = cmd.keys.of(args);
            (keys.len() > 1).then(|| sh.engine().locks.lock(&keys))
        })
        .flatten();
    // MONITOR shows a command after it ran, a script's before (`monitor`).
    let monitored = sh.pubsub.monitored();
    let fed_before = monitored && scripting::runs_script(cmd.name);
    if fed_before {
        monitor::feed(sh, conn, cmd, args);
    }
    let started = std::time::Instant::now();
    // What CLIENT LIST's `cmd` names it, and where its statistics are counted.
    let code = subcommands::line_code(cmd, args);
    // The commands an EXEC or a script runs are theirs: CLIENT LIST names the EXEC or EVAL.
    if let Some(a) = conn.activity.as_ref().filter(|_| !conn.in_exec && !conn.in_script) {
        a.note(code, args.iter().map(Vec::len).sum(), started);
    }
    // Client-side caching: a tracking client's reads are remembered before they read.
    let tracked = if sh.tracking.active() {
        Some(client_tracking::before(sh, conn, cmd, args))
    } else {
        None
    };
    // The commands that look at keys without using them (Redis's LOOKUP_NOTOUCH) leave
    // OBJECT IDLETIME's clock alone (`storage::access`).
    let reply_at = out.buf.len();
    // The replication stream: a top-level write holds its keys until its entry is in.
    let db_at_start = conn.db;
    let top = propagation::enter(sh, conn, cmd, args);
    let begun = propagation::begin();
    let ok = if matches!(
        cmd.name,
        "ttl" | "pttl" | "expiretime" | "pexpiretime" | "type" | "exists" | "object"
    ) {
        crate::storage::access::untouched(|| run_handler(sh, cmd, conn, args, out))
    } else {
        run_handler(sh, cmd, conn, args, out)
    };
    propagation::end(sh, begun, db_at_start, cmd, args, ok);
    if let Some(top) = top {
        propagation::leave(top, conn);
    }
    // A script that answers with an error failed (its error was counted where it arose), as
    // Redis counts its `failed_calls`.
    let ok = ok
        && !(scripting::runs_script(cmd.name)
            && matches!(out.buf.get(reply_at), Some(b'-' | b'!')));
    if let Some(provisional) = tracked {
        client_tracking::after(sh, conn, cmd, provisional);
    }
    if monitored && !fed_before {
        monitor::feed(sh, conn, cmd, args);
    }
    // A command that blocked counts when it is served or times out (`blocking`).
    let took = started.elapsed();
    let us = took.as_micros() as u64;
    if let Some(on) = conn.blocked.as_mut() {
        on.first_run = took;
    } else {
        sh.stats.count_run(stats_index(code), took, ok);
    }
    note_latency(sh, cmd, took);
    // SLOWLOG, as Redis keeps it: EXEC's commands one by one and not EXEC itself, a script's
    // command and not the commands it calls; a blocked command when its wait ends.
    if cmd.name != "exec" && !conn.in_script && sh.slowlog.is_slow(us) {
        match conn.blocked.as_mut() {
            Some(on) => on.slow = Some((args.to_vec(), us)),
            None => log_slow(sh, conn.id, args, us),
        }
    }
    drop(readers_lock);
    // Clients blocked on what it wrote are served now, in its context (`blocking`); inside
    // EXEC only noted, for after EXEC.
    if conn.in_exec {
        blocking::note_in_exec(sh, conn, cmd, args);
    } else {
        blocking::signal(sh, conn, cmd, args);
    }
    // The keyspace notifications of its writes (and of those of the clients it served), now
    // that they are written. Inside EXEC or a script they wait for its one batch; in
    // cluster mode for the write's Raft entry (`server::listener`).
    if crate::types::notify::raised()
        && !crate::storage::overlay::active()
        && !crate::storage::pending::is_deferring()
    {
        pubsub::flush_events(sh, Some(conn.id));
    }
}

/// Notes a run of `cmd` that took `took` in LATENCY's monitor (`command`, or `fast-command`
/// for a command Redis flags `fast`), if the monitor is on and the run reached its threshold.
pub fn note_latency(sh: &Shared, cmd: &Command, took: std::time::Duration) {
    let ms = took.as_millis() as u64;
    let threshold = sh.latency.threshold();
    if threshold == 0 || ms < threshold {
        return;
    }
    let event = if flags::has(cmd.name, "fast") { "fast-command" } else { "command" };
    sh.latency.note(event, ms, crate::types::keyspace::now_ms() / 1000);
}

/// Logs in SLOWLOG the run of `args` by client `id` that took `us` microseconds.
#[cold]
pub fn log_slow(sh: &Shared, id: u64, args: &[Vec<u8>], us: u64) {
    let (addr, name) =
        sh.clients.lock().get(&id).map(|e| (e.addr.clone(), e.name.clone())).unwrap_or_default();
    sh.slowlog.push(args, us, &addr, &name);
}

/// Runs `cmd`'s handler; a failure is replied with its error text (and false returned).
pub fn run_handler(
    sh: &Shared,
    cmd: &Command,
    conn: &mut Conn,
    args: &[Vec<u8>],
    out: &mut Out,
) -> bool {
    let Err(e) = (cmd.handler)(sh, conn, args, out) else { return true };
    {
        let reply = e.reply_text();
        sh.stats.errors.fetch_add(1, Ordering::Relaxed);
        sh.stats.count_error(&reply);
        out.error(&reply);
        // A handler that failed between noting a metadata write and writing its batch: the
        // noted entries were never written, so none may be cached (`meta_cache` contract).
        sh.engine().meta_cache.invalidate_noted(false);
    }
    false
}

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn the_table_fits_the_command_counters_and_indexes_back() {
        assert!(COMMANDS.len() + subcommands::TABLE.len() <= crate::state::MAX_COMMANDS);
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(index_of(c), i);
            assert!(c.name.len() <= LONGEST_NAME, "{}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(std::ptr::eq(lookup(c.name.as_bytes()).unwrap(), c), "{} listed twice", c.name);
            let upper = c.name.to_ascii_uppercase();
            assert!(std::ptr::eq(lookup(upper.as_bytes()).unwrap(), c));
        }
        assert!(lookup(b"no-such-command").is_none());
        assert!(lookup(&[b'a'; LONGEST_NAME + 1]).is_none());
        assert!(lookup(b"").is_none());
    }

    use proptest::prelude::*;

    /// Words a command line is made of: the keywords key positions look for, counts, others.
    fn word() -> impl Strategy<Value = Vec<u8>> {
        prop::sample::select(vec![
            "store",
            "STOREDIST",
            "limit",
            "get",
            "by",
            "streams",
            "0",
            "1",
            "2",
            "3",
            "-1",
            "x",
        ])
        .prop_map(|w| w.as_bytes().to_vec())
    }

    proptest! {
        /// Every key position names an argument: callers index the line with them (routing,
        /// locks, GETKEYS), so one past its end would be a panic on a client's input.
        #[test]
        fn key_positions_name_arguments_of_any_line(
            words in prop::collection::vec(word(), 0..12),
        ) {
            for cmd in COMMANDS {
                let mut line = vec![cmd.name.as_bytes().to_vec()];
                line.extend(words.iter().cloned());
                if !cmd.arity_fits(line.len()) {
                    continue;
                }
                for i in cmd.keys.positions(&line) {
                    prop_assert!(i >= 1 && i < line.len(), "{}: {i} of {}", cmd.name, line.len());
                }
            }
        }
    }
}
