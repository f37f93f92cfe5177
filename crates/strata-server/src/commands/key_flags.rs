//! The flags of each key a command line names: Redis 7's key-spec flags, which say whether a
//! command reads a key's data (`access`), changes it (`update`, `insert`, `delete`) and how
//! (`RO`, `RW`, `OW`, `RM`). COMMAND GETKEYSANDFLAGS reports them, and ACL selectors'
//! `%R~`/`%W~` patterns check them (`commands::acl::line`), as Redis does: a key the command
//! accesses needs read permission, one it updates, inserts into or deletes from needs write
//! permission, and any other (EXISTS's, TYPE's) only a pattern that matches it.
//!
//! [`TABLE`] holds, per command (and `container|sub`) with keys, sorted by name, the flags of
//! Redis 7.0.15's key specs in their order (its `src/commands/*.json`), `;` between specs: a
//! line's n-th key takes the n-th spec's flags, and the keys past the last spec the last one's
//! (every command with several specs names its keys in the specs' order). SORT's middle spec
//! (the BY and GET patterns, which name no key here, as in Redis's own key extraction) is
//! left out. SET's and BITFIELD's flags depend on the line (`variable_flags`), as Redis's key
//! extraction gives them: SET with GET is `RW access update`, without it `OW update`;
//! BITFIELD with only GET and OVERFLOW operations is `RO access`, else `RW access update`.

/// Flag names in the order Redis lists them, each the bit of its index in [`KeyFlags`].
pub const NAMES: [&str; 11] = [
    "RO",
    "RW",
    "OW",
    "RM",
    "access",
    "update",
    "insert",
    "delete",
    "not_key",
    "incomplete",
    "variable_flags",
];

/// The flags of one key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyFlags(u16);

impl KeyFlags {
    const RO: u16 = 1 << 0;
    const RW: u16 = 1 << 1;
    const OW: u16 = 1 << 2;
    const ACCESS: u16 = 1 << 4;
    const UPDATE: u16 = 1 << 5;
    const INSERT: u16 = 1 << 6;
    const DELETE: u16 = 1 << 7;

    /// Flags from their names, space-separated (an unknown name is ignored: the table's test
    /// checks every name).
    pub fn parse(words: &str) -> KeyFlags {
        let bit = |w: &str| NAMES.iter().position(|n| *n == w).map_or(0, |i| 1 << i);
        KeyFlags(words.split_whitespace().fold(0, |m, w| m | bit(w)))
    }

    /// Its flags' names, in [`NAMES`]'s order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        NAMES.iter().enumerate().filter(move |(i, _)| self.0 & 1 << i != 0).map(|(_, n)| *n)
    }

    /// The command reads the key's data: ACL read permission.
    pub fn reads(self) -> bool {
        self.0 & Self::ACCESS != 0
    }

    /// The command changes the key's data: ACL write permission.
    pub fn writes(self) -> bool {
        self.0 & (Self::UPDATE | Self::INSERT | Self::DELETE) != 0
    }
}

/// The flags of the key specs of the command or subcommand `name` (`container|sub`), in
/// order; empty for one without a row.
pub fn specs_of(name: &str) -> Vec<KeyFlags> {
    TABLE
        .binary_search_by(|(n, _)| n.cmp(&name))
        .map(|i| TABLE[i].1.split(';').map(KeyFlags::parse).collect())
        .unwrap_or_default()
}

/// The flags of each of the `keys` keys of the command line `args` (its name first), whose
/// command or subcommand is `name` with the key specs `specs` ([`specs_of`]); `None` when it
/// has no specs.
pub fn of_keys(
    name: &str,
    specs: &[KeyFlags],
    args: &[Vec<u8>],
    keys: usize,
) -> Option<Vec<KeyFlags>> {
    let last = *specs.last()?;
    let variable = match name {
        "set" if set_gets(args) => Some(KeyFlags::RW | KeyFlags::ACCESS | KeyFlags::UPDATE),
        "set" => Some(KeyFlags::OW | KeyFlags::UPDATE),
        "bitfield" if bitfield_reads_only(args) => Some(KeyFlags::RO | KeyFlags::ACCESS),
        "bitfield" => Some(KeyFlags::RW | KeyFlags::ACCESS | KeyFlags::UPDATE),
        _ => None,
    }
    .map(KeyFlags);
    Some(
        (0..keys)
            .map(|n| variable.unwrap_or_else(|| specs.get(n).copied().unwrap_or(last)))
            .collect(),
    )
}

/// SET's line has a GET option (after the key and value).
fn set_gets(args: &[Vec<u8>]) -> bool {
    args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"))
}

/// BITFIELD's line has only GET and OVERFLOW operations, each with its arguments (as Redis
/// reads it: anything else counts as a write).
fn bitfield_reads_only(args: &[Vec<u8>]) -> bool {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        let op = &args[i];
        if op.eq_ignore_ascii_case(b"get") && left >= 2 {
            i += 3;
        } else if op.eq_ignore_ascii_case(b"overflow") && left >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// Per command and subcommand with keys, sorted by name: its key specs' flags (module doc).
pub static TABLE: &[(&str, &str)] = &[
    ("append", "RW insert"),
    ("bitcount", "RO access"),
    ("bitfield", "RW access update variable_flags"),
    ("bitfield_ro", "RO access"),
    ("bitop", "OW update; RO access"),
    ("bitpos", "RO access"),
    ("blmove", "RW access delete; RW insert"),
    ("blmpop", "RW access delete"),
    ("blpop", "RW access delete"),
    ("brpop", "RW access delete"),
    ("brpoplpush", "RW access delete; RW insert"),
    ("bzmpop", "RW access delete"),
    ("bzpopmax", "RW access delete"),
    ("bzpopmin", "RW access delete"),
    ("copy", "RO access; OW update"),
    ("decr", "RW access update"),
    ("decrby", "RW access update"),
    ("del", "RM delete"),
    ("dump", "RO access"),
    ("eval", "RW access update"),
    ("eval_ro", "RO access"),
    ("evalsha", "RW access update"),
    ("evalsha_ro", "RO access"),
    ("exists", "RO"),
    ("expire", "RW update"),
    ("expireat", "RW update"),
    ("expiretime", "RO access"),
    ("fcall", "RW access update"),
    ("fcall_ro", "RO access"),
    ("geoadd", "RW update"),
    ("geodist", "RO access"),
    ("geohash", "RO access"),
    ("geopos", "RO access"),
    ("georadius", "RO access; OW update; OW update"),
    ("georadius_ro", "RO access"),
    ("georadiusbymember", "RO access; OW update; OW update"),
    ("georadiusbymember_ro", "RO access"),
    ("geosearch", "RO access"),
    ("geosearchstore", "OW update; RO access"),
    ("get", "RO access"),
    ("getbit", "RO access"),
    ("getdel", "RW access delete"),
    ("getex", "RW access update"),
    ("getrange", "RO access"),
    ("getset", "RW access update"),
    ("hdel", "RW delete"),
    ("hexists", "RO"),
    ("hget", "RO access"),
    ("hgetall", "RO access"),
    ("hincrby", "RW access update"),
    ("hincrbyfloat", "RW access update"),
    ("hkeys", "RO access"),
    ("hlen", "RO"),
    ("hmget", "RO access"),
    ("hmset", "RW update"),
    ("hrandfield", "RO access"),
    ("hscan", "RO access"),
    ("hset", "RW update"),
    ("hsetnx", "RW insert"),
    ("hstrlen", "RO"),
    ("hvals", "RO access"),
    ("incr", "RW access update"),
    ("incrby", "RW access update"),
    ("incrbyfloat", "RW access update"),
    ("lcs", "RO access"),
    ("lindex", "RO access"),
    ("linsert", "RW insert"),
    ("llen", "RO"),
    ("lmove", "RW access delete; RW insert"),
    ("lmpop", "RW access delete"),
    ("lpop", "RW access delete"),
    ("lpos", "RO access"),
    ("lpush", "RW insert"),
    ("lpushx", "RW insert"),
    ("lrange", "RO access"),
    ("lrem", "RW delete"),
    ("lset", "RW update"),
    ("ltrim", "RW delete"),
    ("memory|usage", "RO"),
    ("mget", "RO access"),
    ("migrate", "RW access delete; RW access delete incomplete"),
    ("move", "RW access update"),
    ("mset", "OW update"),
    ("msetnx", "OW insert"),
    ("object|encoding", "RO"),
    ("object|freq", "RO"),
    ("object|idletime", "RO"),
    ("object|refcount", "RO"),
    ("persist", "RW update"),
    ("pexpire", "RW update"),
    ("pexpireat", "RW update"),
    ("pexpiretime", "RO access"),
    ("pfadd", "RW insert"),
    ("pfcount", "RW access"),
    ("pfdebug", "RW access"),
    ("pfmerge", "RW access insert; RO access"),
    ("psetex", "OW update"),
    ("pttl", "RO access"),
    ("rename", "RW access delete; OW update"),
    ("renamenx", "RW access delete; OW insert"),
    ("restore", "OW update"),
    ("rpop", "RW access delete"),
    ("rpoplpush", "RW access delete; RW insert"),
    ("rpush", "RW insert"),
    ("rpushx", "RW insert"),
    ("sadd", "RW insert"),
    ("scard", "RO"),
    ("sdiff", "RO access"),
    ("sdiffstore", "OW update; RO access"),
    ("set", "RW access update variable_flags"),
    ("setbit", "RW access update"),
    ("setex", "OW update"),
    ("setnx", "OW insert"),
    ("setrange", "RW update"),
    ("sinter", "RO access"),
    ("sintercard", "RO access"),
    ("sinterstore", "RW update; RO access"),
    ("sismember", "RO"),
    ("smembers", "RO access"),
    ("smismember", "RO access"),
    ("smove", "RW access delete; RW insert"),
    ("sort", "RO access; OW update"),
    ("sort_ro", "RO access"),
    ("spop", "RW access delete"),
    ("spublish", "not_key"),
    ("srandmember", "RO access"),
    ("srem", "RW delete"),
    ("sscan", "RO access"),
    ("ssubscribe", "not_key"),
    ("strlen", "RO"),
    ("substr", "RO access"),
    ("sunion", "RO access"),
    ("sunionstore", "OW update; RO access"),
    ("sunsubscribe", "not_key"),
    ("touch", "RO"),
    ("ttl", "RO access"),
    ("type", "RO"),
    ("unlink", "RM delete"),
    ("watch", "RO"),
    ("xack", "RW update"),
    ("xadd", "RW update"),
    ("xautoclaim", "RW delete"),
    ("xclaim", "RW update"),
    ("xdel", "RW delete"),
    ("xgroup|create", "RW insert"),
    ("xgroup|createconsumer", "RW insert"),
    ("xgroup|delconsumer", "RW delete"),
    ("xgroup|destroy", "RW delete"),
    ("xgroup|setid", "RW update"),
    ("xinfo|consumers", "RO access"),
    ("xinfo|groups", "RO access"),
    ("xinfo|stream", "RO access"),
    ("xlen", "RO"),
    ("xpending", "RO access"),
    ("xrange", "RO access"),
    ("xread", "RO access"),
    ("xreadgroup", "RO access"),
    ("xrevrange", "RO access"),
    ("xsetid", "RW update"),
    ("xtrim", "RW delete"),
    ("zadd", "RW update"),
    ("zcard", "RO"),
    ("zcount", "RO access"),
    ("zdiff", "RO access"),
    ("zdiffstore", "OW update; RO access"),
    ("zincrby", "RW access update"),
    ("zinter", "RO access"),
    ("zintercard", "RO access"),
    ("zinterstore", "OW update; RO access"),
    ("zlexcount", "RO access"),
    ("zmpop", "RW access delete"),
    ("zmscore", "RO access"),
    ("zpopmax", "RW access delete"),
    ("zpopmin", "RW access delete"),
    ("zrandmember", "RO access"),
    ("zrange", "RO access"),
    ("zrangebylex", "RO access"),
    ("zrangebyscore", "RO access"),
    ("zrangestore", "OW update; RO access"),
    ("zrank", "RO access"),
    ("zrem", "RW delete"),
    ("zremrangebylex", "RW delete"),
    ("zremrangebyrank", "RW delete"),
    ("zremrangebyscore", "RW delete"),
    ("zrevrange", "RO access"),
    ("zrevrangebylex", "RO access"),
    ("zrevrangebyscore", "RO access"),
    ("zrevrank", "RO access"),
    ("zscan", "RO access"),
    ("zscore", "RO access"),
    ("zunion", "RO access"),
    ("zunionstore", "OW update; RO access"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_names_served_commands_and_known_flags() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no duplicates");
        for (name, specs) in TABLE {
            let served = match name.split_once('|') {
                Some(_) => super::super::subcommands::lookup(name).is_some(),
                None => super::super::lookup(name.as_bytes()).is_some(),
            };
            assert!(served, "{name}");
            for w in specs.split(';').flat_map(str::split_whitespace) {
                assert!(NAMES.contains(&w), "{name}: {w}");
            }
        }
    }

    #[test]
    fn every_command_with_keys_has_its_flags() {
        for c in super::super::COMMANDS {
            if c.keys.has_keys()
                && !c.keys.channels
                && super::super::subcommands::of(c.name).next().is_none()
            {
                assert!(!specs_of(c.name).is_empty(), "{}", c.name);
            }
        }
        for e in super::super::subcommands::TABLE {
            if e.3 != 0 {
                assert!(!specs_of(e.0).is_empty(), "{}", e.0);
            }
        }
    }

    fn flags(name: &str, line: &[&str], keys: usize) -> Vec<String> {
        let args: Vec<Vec<u8>> = line.iter().map(|a| a.as_bytes().to_vec()).collect();
        of_keys(name, &specs_of(name), &args, keys)
            .unwrap()
            .into_iter()
            .map(|f| f.names().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn keys_take_their_spec_and_set_and_bitfield_their_line() {
        assert_eq!(
            flags("lmove", &["lmove", "a", "b", "left", "right"], 2),
            ["RW access delete", "RW insert"]
        );
        assert_eq!(
            flags("zunionstore", &["zunionstore", "d", "2", "a", "b"], 3),
            ["OW update", "RO access", "RO access"]
        );
        assert_eq!(
            flags("sort", &["sort", "k", "by", "w*", "store", "d"], 2),
            ["RO access", "OW update"]
        );
        assert_eq!(flags("del", &["del", "a", "b"], 2), ["RM delete", "RM delete"]);
        assert_eq!(flags("set", &["set", "k", "v"], 1), ["OW update"]);
        assert_eq!(flags("set", &["set", "k", "v", "nx", "GET"], 1), ["RW access update"]);
        assert_eq!(
            flags("bitfield", &["bitfield", "k", "get", "u8", "0", "overflow", "sat"], 1),
            ["RO access"]
        );
        assert_eq!(
            flags("bitfield", &["bitfield", "k", "get", "u8", "0", "incrby", "u8", "0", "1"], 1),
            ["RW access update"]
        );
        assert_eq!(
            flags("bitfield", &["bitfield", "k", "get", "u8"], 1),
            ["RW access update"],
            "incomplete"
        );
        let exists = KeyFlags::parse("RO");
        assert!(!exists.reads() && !exists.writes());
        assert!(KeyFlags::parse("RW insert").writes() && !KeyFlags::parse("RW insert").reads());
        assert!(of_keys("ping", &[], &[], 0).is_none());
        for (bits, name) in [
            (KeyFlags::RO, "RO"),
            (KeyFlags::RW, "RW"),
            (KeyFlags::OW, "OW"),
            (KeyFlags::ACCESS, "access"),
            (KeyFlags::UPDATE, "update"),
            (KeyFlags::INSERT, "insert"),
            (KeyFlags::DELETE, "delete"),
        ] {
            assert_eq!(KeyFlags(bits), KeyFlags::parse(name), "{name}");
        }
    }
}
