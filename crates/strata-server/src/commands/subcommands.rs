//! The subcommands of the container commands (CONFIG, CLIENT, OBJECT, XINFO, ...) this server
//! serves, as Redis 7.0's COMMAND reports them: COMMAND INFO lists a container's subcommands
//! (its tenth element) and answers for `container|sub`, COMMAND LIST names them beside the
//! commands and its filters select them.
//!
//! [`TABLE`] holds per subcommand, sorted by name: its full name, arity (counting the
//! container and the subcommand), Redis 7.0's flags, key positions (first, last, step; 0 when
//! it has no key) and ACL categories, each list in COMMAND's order (`flags::FLAG_ORDER`,
//! `flags::CATEGORY_ORDER`), complete rather than derived as `flags::TABLE`'s are. Only
//! subcommands this server answers are listed (a test asks the server each one).

/// One subcommand: `(name, arity, flags, first key, last key, step, categories)`.
pub type Entry = (&'static str, i32, &'static str, i32, i32, i32, &'static str);

/// The subcommands, sorted by name (module doc).
pub static TABLE: &[Entry] = &[
    ("acl|cat", -2, "noscript loading stale", 0, 0, 0, "slow"),
    ("acl|deluser", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|dryrun", -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|genpass", -2, "noscript loading stale", 0, 0, 0, "slow"),
    ("acl|getuser", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("acl|list", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|load", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|log", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|save", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|setuser", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|users", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("acl|whoami", 2, "noscript loading stale", 0, 0, 0, "slow"),
    ("client|caching", 3, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|getname", 2, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|getredir", 2, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|help", 2, "loading stale", 0, 0, 0, "slow connection"),
    ("client|id", 2, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|info", 2, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|kill", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection"),
    ("client|list", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection"),
    (
        "client|no-evict",
        3,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
    ),
    (
        "client|pause",
        -3,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
    ),
    ("client|reply", 3, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|setname", 3, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|tracking", -3, "noscript loading stale", 0, 0, 0, "slow connection"),
    ("client|trackinginfo", 2, "noscript loading stale", 0, 0, 0, "slow connection"),
    (
        "client|unblock",
        -3,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
    ),
    (
        "client|unpause",
        2,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
    ),
    ("cluster|countkeysinslot", 3, "stale", 0, 0, 0, "slow"),
    ("cluster|getkeysinslot", 4, "stale", 0, 0, 0, "slow"),
    ("cluster|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("cluster|info", 2, "stale", 0, 0, 0, "slow"),
    ("cluster|keyslot", 3, "stale", 0, 0, 0, "slow"),
    ("cluster|myid", 2, "stale", 0, 0, 0, "slow"),
    ("cluster|nodes", 2, "stale", 0, 0, 0, "slow"),
    ("cluster|shards", 2, "stale", 0, 0, 0, "slow"),
    ("cluster|slots", 2, "stale", 0, 0, 0, "slow"),
    ("command|count", 2, "loading stale", 0, 0, 0, "slow connection"),
    ("command|docs", -2, "loading stale", 0, 0, 0, "slow connection"),
    ("command|getkeys", -4, "loading stale", 0, 0, 0, "slow connection"),
    ("command|getkeysandflags", -4, "loading stale", 0, 0, 0, "slow connection"),
    ("command|help", 2, "loading stale", 0, 0, 0, "slow connection"),
    ("command|info", -2, "loading stale", 0, 0, 0, "slow connection"),
    ("command|list", -2, "loading stale", 0, 0, 0, "slow connection"),
    ("config|get", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("config|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("config|resetstat", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("config|rewrite", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("config|set", -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("function|delete", 3, "write noscript", 0, 0, 0, "write slow scripting"),
    ("function|dump", 2, "noscript", 0, 0, 0, "slow scripting"),
    ("function|flush", -2, "write noscript", 0, 0, 0, "write slow scripting"),
    ("function|help", 2, "loading stale", 0, 0, 0, "slow scripting"),
    ("function|kill", 2, "noscript allow_busy", 0, 0, 0, "slow scripting"),
    ("function|list", -2, "noscript", 0, 0, 0, "slow scripting"),
    ("function|load", -3, "write denyoom noscript", 0, 0, 0, "write slow scripting"),
    ("function|restore", -3, "write denyoom noscript", 0, 0, 0, "write slow scripting"),
    ("function|stats", 2, "noscript allow_busy", 0, 0, 0, "slow scripting"),
    ("latency|doctor", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("latency|graph", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("latency|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("latency|histogram", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("latency|history", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("latency|latest", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("latency|reset", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous"),
    ("memory|doctor", 2, "", 0, 0, 0, "slow"),
    ("memory|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("memory|malloc-stats", 2, "", 0, 0, 0, "slow"),
    ("memory|purge", 2, "", 0, 0, 0, "slow"),
    ("memory|stats", 2, "", 0, 0, 0, "slow"),
    ("memory|usage", -3, "readonly", 2, 2, 1, "read slow"),
    ("object|encoding", 3, "readonly", 2, 2, 1, "keyspace read slow"),
    ("object|freq", 3, "readonly", 2, 2, 1, "keyspace read slow"),
    ("object|help", 2, "loading stale", 0, 0, 0, "keyspace slow"),
    ("object|idletime", 3, "readonly", 2, 2, 1, "keyspace read slow"),
    ("object|refcount", 3, "readonly", 2, 2, 1, "keyspace read slow"),
    ("pubsub|channels", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow"),
    ("pubsub|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("pubsub|numpat", 2, "pubsub loading stale", 0, 0, 0, "pubsub slow"),
    ("pubsub|numsub", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow"),
    ("pubsub|shardchannels", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow"),
    ("pubsub|shardnumsub", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow"),
    ("script|exists", -3, "noscript", 0, 0, 0, "slow scripting"),
    ("script|flush", -2, "noscript", 0, 0, 0, "slow scripting"),
    ("script|help", 2, "loading stale", 0, 0, 0, "slow scripting"),
    ("script|kill", 2, "noscript allow_busy", 0, 0, 0, "slow scripting"),
    ("script|load", 3, "noscript stale", 0, 0, 0, "slow scripting"),
    ("slowlog|get", -2, "admin loading stale", 0, 0, 0, "admin slow dangerous"),
    ("slowlog|help", 2, "loading stale", 0, 0, 0, "slow"),
    ("slowlog|len", 2, "admin loading stale", 0, 0, 0, "admin slow dangerous"),
    ("slowlog|reset", 2, "admin loading stale", 0, 0, 0, "admin slow dangerous"),
    ("xgroup|create", -5, "write denyoom", 2, 2, 1, "write stream slow"),
    ("xgroup|createconsumer", 5, "write denyoom", 2, 2, 1, "write stream slow"),
    ("xgroup|delconsumer", 5, "write", 2, 2, 1, "write stream slow"),
    ("xgroup|destroy", 4, "write", 2, 2, 1, "write stream slow"),
    ("xgroup|help", 2, "loading stale", 0, 0, 0, "stream slow"),
    ("xgroup|setid", -5, "write", 2, 2, 1, "write stream slow"),
    ("xinfo|consumers", 4, "readonly", 2, 2, 1, "read stream slow"),
    ("xinfo|groups", 3, "readonly", 2, 2, 1, "read stream slow"),
    ("xinfo|help", 2, "loading stale", 0, 0, 0, "stream slow"),
    ("xinfo|stream", -3, "readonly", 2, 2, 1, "read stream slow"),
];

/// The entry of `container|sub` (lower case).
pub fn lookup(name: &str) -> Option<&'static Entry> {
    TABLE.binary_search_by(|e| e.0.cmp(name)).ok().map(|i| &TABLE[i])
}

/// The subcommands of `container` (lower case), in name order.
pub fn of(container: &str) -> impl Iterator<Item = &'static Entry> + '_ {
    TABLE.iter().filter(move |e| e.0.split_once('|').is_some_and(|(c, _)| c == container))
}

/// The subcommand a command line runs, when its command is a container with a listed
/// subcommand of that name: its index here and its entry.
pub fn subcommand_of(
    cmd: &'static super::Command,
    args: &[Vec<u8>],
) -> Option<(usize, &'static Entry)> {
    static CONTAINERS: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    let containers = CONTAINERS
        .get_or_init(|| super::COMMANDS.iter().map(|c| of(c.name).next().is_some()).collect());
    if !containers.get(super::index_of(cmd)).copied().unwrap_or(false) {
        return None;
    }
    let sub = args.get(1)?;
    let name = format!("{}|{}", cmd.name, String::from_utf8_lossy(sub).to_ascii_lowercase());
    let i = TABLE.binary_search_by(|e| e.0.cmp(&name)).ok()?;
    Some((i, &TABLE[i]))
}

/// The code of a command line for CLIENT LIST's `cmd` (`state::Activity`): 1 + the
/// command's index in `COMMANDS`, or, for a container's subcommand in the table, 1 +
/// `COMMANDS.len()` + the subcommand's index here.
pub fn line_code(cmd: &'static super::Command, args: &[Vec<u8>]) -> u64 {
    match subcommand_of(cmd, args) {
        Some((i, _)) => (1 + super::COMMANDS.len() + i) as u64,
        None => super::index_of(cmd) as u64 + 1,
    }
}

/// The name of a [`line_code`]; `NULL` for 0 (no command yet), as Redis shows it.
pub fn code_name(code: u64) -> &'static str {
    let commands = super::COMMANDS.len() as u64;
    match code {
        0 => "NULL",
        c if c <= commands => super::COMMANDS[(c - 1) as usize].name,
        c => TABLE.get((c - 1 - commands) as usize).map_or("NULL", |e| e.0),
    }
}

/// The words of a space-separated list.
pub fn words(list: &'static str) -> impl Iterator<Item = &'static str> {
    list.split(' ').filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::flags::{CATEGORY_ORDER, FLAG_ORDER};
    use super::*;

    fn in_order(list: &'static str, order: &[&str]) -> bool {
        let pos: Option<Vec<usize>> =
            words(list).map(|w| order.iter().position(|o| *o == w)).collect();
        pos.is_some_and(|p| p.windows(2).all(|w| w[0] < w[1]))
    }

    #[test]
    fn entries_are_sorted_known_and_belong_to_served_containers() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0), "sorted, no name twice");
        for &(name, arity, flags, first, last, step, cats) in TABLE {
            let (container, sub) = name.split_once('|').expect("container|sub");
            assert!(!sub.is_empty() && !sub.contains('|'), "{name}");
            let c = super::super::lookup(container.as_bytes()).expect("a served container");
            assert!(c.arity < 0, "{container} takes a subcommand");
            assert!(arity.unsigned_abs() >= 2, "{name}");
            assert!(in_order(flags, FLAG_ORDER), "{name}: flags {flags}");
            assert!(in_order(cats, CATEGORY_ORDER), "{name}: categories {cats}");
            assert!(words(cats).any(|c| c == "slow" || c == "fast"), "{name}");
            assert_eq!((first == 0, last == 0, step == 0), (first == 0, first == 0, first == 0));
            assert!(first == 0 || (first == 2 && last >= first), "{name}: keys after the sub");
        }
        assert_eq!(lookup("config|get").map(|e| e.1), Some(-3));
        assert!(lookup("config|nosuch").is_none());
        let object: Vec<_> = of("object").map(|e| e.0).collect();
        assert_eq!(
            object,
            ["object|encoding", "object|freq", "object|help", "object|idletime", "object|refcount"]
        );
    }

    #[test]
    fn a_command_line_codes_its_command_or_its_subcommand() {
        let line = |words: &[&str]| -> Vec<Vec<u8>> {
            words.iter().map(|w| w.as_bytes().to_vec()).collect()
        };
        let name = |words: &[&str]| {
            let a = line(words);
            let cmd = super::super::lookup(&a[0]).unwrap();
            code_name(line_code(cmd, &a))
        };
        assert_eq!(name(&["GET", "k"]), "get");
        assert_eq!(name(&["client", "LIST"]), "client|list");
        assert_eq!(name(&["CONFIG", "get", "hz"]), "config|get");
        assert_eq!(name(&["client", "nosuch"]), "client", "not a listed subcommand");
        assert_eq!(name(&["set", "get", "v"]), "set", "SET has no subcommands");
        assert_eq!(code_name(0), "NULL");
        assert_eq!(code_name(u64::MAX), "NULL");
    }
}
