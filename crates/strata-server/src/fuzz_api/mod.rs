//! The body of the `commands` fuzz target (`fuzz/fuzz_targets/commands.rs`), shared with the
//! corpus replay test (`tests/protocol/fuzz_corpus.rs`): bytes become a client's command
//! lines, run one after another through [`commands::dispatch`] on a fresh server state in
//! this process, its store in memory (`/dev/shm`). Whatever the lines, every command answers
//! (a reply or Redis's error) and the process goes on: a panic or a hang is the finding.
//!
//! ```text
//! input   := line*
//! line    := argc: u8 (low 4 bits: 0..15 arguments) | command: u8 (an index into COMMANDS)
//!          | arg{argc}
//! arg     := 0x00..=0x0f  a key (one of KEYS)
//!          | 0x10..=0x4f  a number (one of NUMBERS)
//!          | 0x50..=0xef  a word (one of WORDS: options, subcommands, types, globs, scripts)
//!          | 0xf0..=0xff  len: u8 (low 6 bits: 0..63) | len raw bytes
//! ```
//!
//! Left out: what stops, sleeps or waits by design (SHUTDOWN, DEBUG, WAIT, WAITAOF, FAILOVER),
//! what writes files beside the engine's (SAVE, BGSAVE, BGREWRITEAOF, ACL SAVE/LOAD, CONFIG
//! SET/REWRITE), and what reaches other hosts (MIGRATE, REPLICAOF, SLAVEOF, SYNC, PSYNC,
//! MODULE). A blocking command that finds nothing times out at once (as the connection loop
//! would end its wait); CLIENT PAUSE is held by the connection loop, which is not here.
//! The numbers leave out offsets that Redis accepts and that would make a string of hundreds
//! of megabytes (SETBIT at 2^32 - 1, SETRANGE at 512 MB - 1), so inputs stay fast.

pub mod rdb_file;
pub use rdb_file::rdb_file;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::blocked::Cancel;
use crate::commands::{self, COMMANDS};
use crate::config::{Config, Flags};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::storage::SyncPolicy;

/// Keys: four plain ones and two sharing a hash tag.
pub const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "{t}a", "{t}b"];

/// Numbers: small ones, edges of the integer types, floats, score and lex range bounds.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "5",
    "10",
    "-2",
    "-100",
    "100",
    "1000",
    "65535",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "1048576",
    "4294967296",
    "18446744073709551615",
    "1.5",
    "-0.5",
    "0.0",
    "1e308",
    "1e309",
    "-1e-320",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "(1",
    "(5",
    "[a",
    "(b",
    "-",
    "+",
    "0x10",
    "",
    " 1",
    "1 ",
    "007",
    "12345678901234567890",
    "0-0",
    "1-1",
    "18446744073709551615-18446744073709551615",
    "$",
    ">",
    "*",
    "#",
    "#1",
    "u8",
    "i5",
    "u63",
    "i64",
    "u64",
    "i65",
    "13.361389",
    "38.115556",
    "181",
    "-85.06",
    "16383",
    "16384",
    "300000",
    "3000",
    "1700000000000",
];

/// Words: options and subcommands of the commands in the table.
pub const WORDS: &[&str] = &[
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "PERSIST",
    "GET",
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "BYSCORE",
    "BYLEX",
    "REV",
    "LIMIT",
    "WITHSCORES",
    "WITHSCORE",
    "COUNT",
    "MATCH",
    "TYPE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "RANK",
    "MAXLEN",
    "IDX",
    "LEN",
    "MINMATCHLEN",
    "WITHMATCHLEN",
    "OVERFLOW",
    "WRAP",
    "SAT",
    "FAIL",
    "SET",
    "INCRBY",
    "STORE",
    "ALPHA",
    "DESC",
    "ASC",
    "BY",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "WEIGHTS",
    "ENCODING",
    "FREQ",
    "IDLETIME",
    "REFCOUNT",
    "HELP",
    "STREAMS",
    "MKSTREAM",
    "GROUP",
    "CREATE",
    "SETID",
    "DESTROY",
    "CREATECONSUMER",
    "DELCONSUMER",
    "CONSUMERS",
    "GROUPS",
    "STREAM",
    "FULL",
    "NOMKSTREAM",
    "MINID",
    "JUSTID",
    "IDLE",
    "TIME",
    "RETRYCOUNT",
    "FORCE",
    "LASTID",
    "ENTRIESREAD",
    "BLOCK",
    "NOACK",
    "KEYS",
    "REPLACE",
    "ABSTTL",
    "DB",
    "ANY",
    "WITHCOORD",
    "WITHDIST",
    "WITHHASH",
    "FROMMEMBER",
    "FROMLONLAT",
    "BYRADIUS",
    "BYBOX",
    "km",
    "m",
    "mi",
    "GETKEYS",
    "INFO",
    "LIST",
    "DOCS",
    "RESETSTAT",
    "string",
    "list",
    "set",
    "zset",
    "hash",
    "stream",
    "*",
    "k*",
    "k?",
    "[a-z]*",
    "\\",
    "SYNC",
    "ASYNC",
    "LOAD",
    "EXISTS",
    "FLUSH",
    "DUMP",
    "RESTORE",
    "APPEND",
    "DELETE",
    "STATS",
    "USAGE",
    "SAMPLES",
    "ID",
    "SETNAME",
    "GETNAME",
    "NO-EVICT",
    "ON",
    "OFF",
    "SKIP",
    "TRACKING",
    "BCAST",
    "PREFIX",
    "OPTIN",
    "OPTOUT",
    "NOLOOP",
    "CACHING",
    "YES",
    "NO",
    "KILL",
    "UNBLOCK",
    "ERROR",
    "TIMEOUT",
    "RESET",
    "DOCTOR",
    "HISTORY",
    "LATEST",
    "GRAPH",
    "HISTOGRAM",
    "NUMSUB",
    "NUMPAT",
    "CHANNELS",
    "SHARDCHANNELS",
    "AUTH",
    "return redis.call('get', KEYS[1])",
    "return redis.pcall('incr', KEYS[1])",
    "#!lua name=lib\nredis.register_function('f', function(k, a) return #k end)",
    "\x00\x05hello\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    // ACL's (appended: the corpus names words by their index; the list is full at 160).
    "SETUSER",
    "DRYRUN",
    "nopass",
    "~k*",
    "+@all",
    "-@write",
];

/// Commands left out (module docs).
const LEFT_OUT: &[&str] = &[
    "shutdown",
    "debug",
    "wait",
    "waitaof",
    "failover",
    "save",
    "bgsave",
    "bgrewriteaof",
    "migrate",
    "replicaof",
    "slaveof",
    "sync",
    "psync",
    "module",
];

/// A fresh server state in a new directory under `/dev/shm` (memory; the system's temporary
/// directory where there is none), and that directory, which the caller removes.
pub fn fresh_server() -> (Arc<Shared>, PathBuf) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = base.join(format!("strata-fuzz-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let flags = Flags { dir: Some(dir.clone()), ..Flags::default() };
    let cfg = Config::resolve(flags).unwrap_or_else(|e| panic!("default flags: {e}"));
    let dbs =
        crate::types::open_databases(cfg.engine_options(), &dir, SyncPolicy::No, cfg.databases)
            .unwrap_or_else(|e| panic!("opening a store in {}: {e}", dir.display()));
    (Arc::new(Shared::new(dbs, cfg, 0)), dir)
}

/// Decodes `data` into command lines (module docs).
pub fn command_lines(data: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut lines = Vec::new();
    let mut it = data.iter().copied();
    while let (Some(head), Some(c)) = (it.next(), it.next()) {
        let cmd = &COMMANDS[usize::from(c) % COMMANDS.len()];
        let mut line = vec![cmd.name.as_bytes().to_vec()];
        for _ in 0..head & 15 {
            let Some(a) = it.next() else { break };
            let arg = match a {
                0x00..=0x0f => KEYS[usize::from(a) % KEYS.len()].as_bytes().to_vec(),
                0x10..=0x4f => NUMBERS[usize::from(a - 0x10) % NUMBERS.len()].as_bytes().to_vec(),
                0x50..=0xef => WORDS[usize::from(a - 0x50) % WORDS.len()].as_bytes().to_vec(),
                _ => {
                    let len = usize::from(it.next().unwrap_or(0) & 63);
                    it.by_ref().take(len).collect()
                }
            };
            line.push(arg);
        }
        lines.push(line);
        if lines.len() >= 64 {
            break;
        }
    }
    lines
}

/// The input whose command lines are `lines` (the inverse of [`command_lines`], for seed
/// corpora): a command by its index in the table, each argument by its place in the lists, or
/// raw when in none (at most 63 bytes).
pub fn encode_lines(lines: &[&[&str]]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        let name = line[0].to_ascii_lowercase();
        let index = COMMANDS.iter().position(|c| c.name == name);
        let index = index.unwrap_or_else(|| panic!("no command {name} in the table"));
        assert!(line.len() <= 16 && index < 256, "{line:?} does not fit the encoding");
        out.extend([(line.len() - 1) as u8, index as u8]);
        for arg in &line[1..] {
            let at = |list: &[&str]| list.iter().position(|x| x == arg);
            match (at(KEYS), at(NUMBERS), at(WORDS)) {
                (Some(i), _, _) => out.push(i as u8),
                (_, Some(i), _) if i < 0x40 => out.push(0x10 + i as u8),
                (_, _, Some(i)) if i < 0xa0 => out.push(0x50 + i as u8),
                _ => {
                    assert!(arg.len() < 64, "raw argument {arg:?} too long");
                    out.extend([0xf0, arg.len() as u8]);
                    out.extend_from_slice(arg.as_bytes());
                }
            }
        }
    }
    out
}

/// Whether `line` is one this target leaves out (module docs).
/// A line's command name is the table's own (lower case, `command_lines`).
fn left_out(line: &[Vec<u8>]) -> bool {
    let name = String::from_utf8_lossy(&line[0]);
    let sub = line.get(1).map(|s| String::from_utf8_lossy(s).to_ascii_lowercase());
    LEFT_OUT.contains(&name.as_ref())
        || (name == "config" && !matches!(sub.as_deref(), Some("get" | "help" | "resetstat")))
        || (name == "acl" && matches!(sub.as_deref(), Some("save" | "load")))
}

/// Runs `data`'s command lines on a fresh server state as one client (module docs).
pub fn commands(data: &[u8]) {
    let lines = command_lines(data);
    if lines.is_empty() {
        return;
    }
    let (sh, dir) = fresh_server();
    // For triage: each line and its reply on stderr.
    let trace = std::env::var_os("STRATA_FUZZ_TRACE").is_some();
    let mut conn = Conn::new(1, true);
    for line in lines.iter().filter(|l| !left_out(l)) {
        let mut out = Out::default();
        commands::dispatch(&sh, &mut conn, line, &mut out);
        if trace {
            eprintln!("{:?} -> {:?}", printable(line), String::from_utf8_lossy(&out.buf));
        }
        let blocked = conn.blocked.take().is_some();
        if blocked {
            sh.blocked.cancel(conn.id, Cancel::Timeout);
        }
        // A client waits for an answer to every command it sends; (un)subscribing answers
        // through the subscriber's queue, which the connection loop writes.
        let queued = line[0].ends_with(b"subscribe");
        let answered = blocked || queued || quiet(&conn) || !out.buf.is_empty();
        assert!(answered, "{:?} answered nothing", printable(line));
        if conn.close {
            conn = Conn::new(1, true);
        }
    }
    drop(conn);
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command line as text, for a finding's message.
fn printable(line: &[Vec<u8>]) -> Vec<String> {
    line.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// Whether the connection's replies are off (CLIENT REPLY OFF or SKIP), so a command may
/// answer nothing.
fn quiet(conn: &Conn) -> bool {
    conn.reply_mode != crate::state::ReplyMode::On
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_entry_has_a_code_and_lines_encode_back() {
        assert!(KEYS.len() <= 0x10 && NUMBERS.len() <= 0x40 && WORDS.len() <= 0xa0);
        assert!(COMMANDS.len() <= 256);
        let line: &[&str] = &["set", "k1", "-1", "KEEPTTL", "raw value", "{t}b", "nan"];
        let zset: &[&str] = &["ZRANGE", "k2", "(1", "+inf", "BYSCORE", "LIMIT", "0", "10"];
        assert_eq!(command_lines(&encode_lines(&[line])), [to_bytes(line)]);
        assert_eq!(command_lines(&encode_lines(&[line, &zset[..7]])).len(), 2);
        // Fifteen arguments announced (0xff), a raw one whose length is missing, then the end.
        let cut = vec![COMMANDS[0].name.as_bytes().to_vec(), vec![]];
        assert_eq!(command_lines(&[0xff, 0, 0xf0]), [cut]);
        assert!(left_out(&to_bytes(&["config", "SET", "dir", "/"])));
        assert!(!left_out(&to_bytes(&["config", "get", "maxmemory"])));
    }

    fn to_bytes(line: &[&str]) -> Vec<Vec<u8>> {
        line.iter().map(|a| a.as_bytes().to_vec()).collect()
    }
}
