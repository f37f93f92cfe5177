//! DEBUG, as redis-server 7.0 guards it: refused unless `enable-debug-command` (read at
//! start: `--enable-debug-command` or the config file) is `yes`, or `local` and the client
//! is on a loopback address, with Redis's text; the refusal comes after the arity check, as
//! in Redis (`commands::dispatch_found`).
//!
//! Allowed, it serves the subcommands that mean something here: `SLEEP` (the whole server
//! stops, as Redis's one thread does: `pause::Frozen`), `SET-ACTIVE-EXPIRE` (the expiry task's rounds
//! stop and start), `PAUSE-CRON` (the periodic rounds, Redis's `serverCron`: active expiry and
//! the clients' round, held; the WAL's once-a-second sync is not), `OBJECT` (encoding,
//! serialized length, idle time), `RELOAD` and `LOADAOF` (Redis saves its dataset or AOF and
//! loads it back; the data here live in the engine's files, so both are SAVE, and RELOAD's
//! options are checked and answered as Redis's: [`reload`]), `DIGEST` and
//! `DIGEST-VALUE` (`commands::digest`), `PROTOCOL`
//! (a reply of each RESP type, as Redis's), `REPLICATE` ([`replicate`]),
//! `SET-DISABLE-DENY-SCRIPTS` (scripts may call the
//! commands flagged `noscript`), `QUICKLIST-PACKED-THRESHOLD` (checked as Redis checks it; a
//! list has one encoding here, so nothing changes), `LOG`, `ERROR`, `JMAP` and `HELP`. Any
//! other is Redis's unknown-subcommand error.

use std::sync::atomic::Ordering;

use super::args::is;
use super::errors::{unknown_subcommand, CmdError};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// Redis's refusal of DEBUG while `enable-debug-command` does not allow it.
pub const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command \
    option is set to \"local\", you can run it from a local connection, otherwise you need to \
    set this option in the configuration file, and then restart the server.";

/// Whether `enable-debug-command` lets connection `conn` run DEBUG.
pub fn allowed(sh: &Shared, conn: &Conn) -> bool {
    let setting = sh.params.read().get("enable-debug-command").cloned().unwrap_or_default();
    match setting.to_ascii_lowercase().as_str() {
        "yes" => true,
        "local" => {
            let clients = sh.clients.lock();
            let addr = clients.get(&conn.id).map(|e| e.addr.clone()).unwrap_or_default();
            addr.parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_loopback())
        }
        _ => false,
    }
}

pub fn debug(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let args = a.len() - 2;
    if is(sub, "help") && args == 0 {
        let help = [
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DIGEST",
            "    Return a digest of the whole dataset (zeros when empty).",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Return a digest of each key's value and expiry (zeros for a missing key).",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message.",
            "JMAP",
            "    No effect here (no Java).",
            "LOADAOF",
            "    SAVE, as RELOAD without options.",
            "LOG <message>",
            "    Write <message> to the server's standard error.",
            "OBJECT <key>",
            "    Show low level info about the key and its value.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>, or <prefix>:<num>, holding",
            "    value:<num> (in <size> bytes with <size>); keys there stay.",
            "PROTOCOL <type>",
            "    Reply with a value of <type>: string, integer, double, bignum, null, array,",
            "    set, map, attrib, push, verbatim, true or false.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Checked as Redis checks it; no effect here (a list has one encoding).",
            "REPLICATE <command> [<arg> ...]",
            "    Put <command> into the replication stream without running it here.",
            "RELOAD [MERGE] [NOFLUSH] [NOSAVE]",
            "    SAVE (not with NOSAVE): every database's memtables written to its files (the",
            "    dataset read from them is the one there was). NOFLUSH without MERGE fails,",
            "    as Redis's load would, when a key or function library exists.",
            "SET-DISABLE-DENY-SCRIPTS <0|1>",
            "    Let scripts call the commands they may not (those flagged noscript).",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Stop or start the active expiry of keys (their lazy expiry goes on).",
            "PAUSE-CRON <0|1>",
            "    Hold or resume the periodic rounds (active expiry, the clients' round).",
            "SLEEP <seconds>",
            "    Stop the server for <seconds> (decimals allowed).",
            "HELP",
            "    Print this help.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "sleep") && args == 1 {
        let secs = std::str::from_utf8(&a[2]).ok().and_then(|s| s.trim().parse::<f64>().ok());
        let secs = secs.filter(|s| s.is_finite()).unwrap_or(0.0).clamp(0.0, 3600.0);
        sh.frozen.sleep(std::time::Duration::from_secs_f64(secs));
        out.ok();
    } else if is(sub, "replicate") && args >= 1 {
        replicate(sh, &a[2..]);
        out.ok();
    } else if is(sub, "set-active-expire") && args == 1 {
        sh.active_expire.store(atoi(&a[2]) != 0, Ordering::Relaxed);
        out.ok();
    } else if is(sub, "pause-cron") && args == 1 {
        sh.cron_paused.store(atoi(&a[2]) != 0, Ordering::Relaxed);
        out.ok();
    } else if is(sub, "object") && args == 1 {
        // The key as stored, also when its time is up and nothing removed it yet (Redis's
        // DEBUG OBJECT looks in its table without the expiry check).
        let ks = sh.keyspace(c.db);
        let _g = ks.store.locks.lock(&[a[2].as_slice()]);
        let Some(m) = ks.stored_meta(&a[2])? else { return Err("ERR no such key".into()) };
        let encoding = super::keys::encoding_name(sh, &ks, &a[2], &m)?;
        // The value's RDB length, as DUMP encodes it: the payload less its type byte, its
        // version and its checksum.
        let v = crate::types::rdb::key::read_of(&ks, &a[2], m)?;
        let len = crate::types::rdb::encode_payload(&v, &super::dump::encodings(sh))
            .len()
            .saturating_sub(11);
        let idle = ks.store.meta_cache.idle_secs(ks.store.space, &a[2]);
        out.simple(&format!(
            "Value at:0x0 refcount:1 encoding:{encoding} serializedlength:{len} lru:0 \
             lru_seconds_idle:{idle}"
        ));
    } else if is(sub, "digest") && args == 0 {
        super::digest::dataset(sh, out)?;
    } else if is(sub, "digest-value") {
        super::digest::values(sh, c, &a[2..], out)?;
    } else if is(sub, "protocol") && args == 1 {
        protocol(&a[2], out);
    } else if is(sub, "set-disable-deny-scripts") && args == 1 {
        sh.scripts_may_call_noscript.store(atoi(&a[2]) != 0, Ordering::Relaxed);
        out.ok();
    } else if is(sub, "quicklist-packed-threshold") && args == 1 {
        let size = std::str::from_utf8(&a[2]).ok().and_then(crate::config::parse_size);
        // Redis's bound: anything up to 1 MiB below 4 GiB (0 restores its default).
        if size.is_none_or(|n| n > (1 << 32) - (1 << 20)) {
            return Err(
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb".into()
            );
        }
        out.ok();
    } else if is(sub, "reload") {
        return reload(sh, c, a, out);
    } else if is(sub, "loadaof") {
        // SAVE's work (Redis saves its AOF and loads it back).
        return super::persistence::save(sh, c, a, out);
    } else if is(sub, "populate") && (1..=3).contains(&args) {
        let count = positive(&a[2])?;
        let size = a.get(4).map(|s| positive(s)).transpose()?;
        let size = size.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        if size.is_some_and(|n| n > MAX_POPULATE_SIZE) {
            return Err(format!(
                "ERR DEBUG POPULATE's value size is at most {MAX_POPULATE_SIZE} here"
            )
            .into());
        }
        let prefix = a.get(3).map_or(&b"key"[..], Vec::as_slice);
        crate::types::string::populate(&sh.keyspace(c.db), count, prefix, size)?;
        out.ok();
    } else if is(sub, "log") && args == 1 {
        eprintln!("DEBUG LOG: {}", String::from_utf8_lossy(&a[2]));
        out.ok();
    } else if is(sub, "error") && args == 1 {
        out.error(&String::from_utf8_lossy(&a[2]));
    } else if is(sub, "jmap") && args == 0 {
        out.ok();
    } else {
        return Err(unknown_subcommand(a));
    }
    Ok(())
}

/// The largest value DEBUG POPULATE makes here (Redis's proto-max-bulk-len default): a
/// larger size would allocate what no string may hold.
const MAX_POPULATE_SIZE: usize = 512 << 20;

/// A count of 0 or more, as Redis reads DEBUG POPULATE's (one error for any other text).
fn positive(b: &[u8]) -> Result<u64, CmdError> {
    crate::types::number::parse_int_strict(b)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or(CmdError::from("ERR value is out of range, must be positive"))
}

/// C's `atoi`, as Redis reads DEBUG's flags: the leading digits (with a sign), 0 when none.
fn atoi(b: &[u8]) -> i64 {
    let t = String::from_utf8_lossy(b);
    let t = t.trim_start();
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).take(18).collect();
    let n = digits.parse::<i64>().unwrap_or(0);
    if neg {
        -n
    } else {
        n
    }
}

/// DEBUG PROTOCOL <type>: one reply of each RESP type, with redis-server's values (RESP2
/// gets each one's RESP2 form).
fn protocol(kind: &[u8], out: &mut Out) {
    let k = String::from_utf8_lossy(kind).to_ascii_lowercase();
    match k.as_str() {
        "string" => out.bulk(b"Hello World"),
        "integer" => out.int(12345),
        // Redis's value, which is not meant as pi.
        #[allow(clippy::approx_constant)]
        "double" => out.double(3.141),
        "bignum" => out.big_number(b"1234567999999999999999999999999999999"),
        "null" => out.null(),
        "array" | "set" => {
            if k == "set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for j in 0..3 {
                out.int(j);
            }
        }
        "map" => {
            out.map(3);
            for j in 0..3 {
                out.int(j);
                out.boolean(j == 1);
            }
        }
        "attrib" => {
            if out.resp3 {
                out.header(b'|', 1);
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        "push" => {
            if !out.resp3 {
                out.error("ERR RESP2 is not supported by this command");
                return;
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            out.bulk(b"Some real reply following the push reply");
        }
        "true" => out.boolean(true),
        "false" => out.boolean(false),
        "verbatim" => out.verbatim("This is a verbatim\nstring"),
        _ => out.error(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: Redis saves its dataset (unless NOSAVE), empties
/// it (unless NOFLUSH) and loads the file back, merging into what is left only with MERGE.
/// The data here live in the engine's files, so the save is SAVE's work and the load changes
/// nothing, with Redis's one failure kept: a load that neither flushes nor merges meets every
/// key and function library again, which Redis refuses ("Error trying to load the RDB dump";
/// it stops at a library it already has, and a key it already has would end the server), so
/// it fails here whenever a database holds a key or a library is loaded.
fn reload(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for opt in &a[2..] {
        if is(opt, "merge") {
            merge = true;
        } else if is(opt, "noflush") {
            flush = false;
        } else if is(opt, "nosave") {
            save = false;
        } else {
            return Err(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.".into()
            );
        }
    }
    if save {
        super::persistence::save(sh, c, a, &mut Out { buf: Vec::new(), resp3: out.resp3 })?;
    }
    if !flush && !merge && holds_anything(sh)? {
        return Err("ERR Error trying to load the RDB dump".into());
    }
    out.ok();
    Ok(())
}

/// Whether a function library is loaded or a database holds a key (an expired one not yet
/// removed counts: Redis's load would meet it too unless its save had dropped it).
fn holds_anything(sh: &Shared) -> Result<bool, CmdError> {
    if !sh.scripts.libraries().is_empty() {
        return Ok(true);
    }
    for (db, _) in sh.dbs.each() {
        let first = crate::types::keys::scan(&sh.keyspace(db), b"", 1, |_, _, _| true)?;
        if !first.items.is_empty() || first.next.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// DEBUG REPLICATE: `argv` goes into the replication stream unrun, in the database the stream
/// has selected (Redis's aid for testing a replica's divergence: the replica fails what its
/// master never ran). Nothing while no stream is on, nor on a replica, whose stream is its
/// master's.
fn replicate(sh: &Shared, argv: &[Vec<u8>]) {
    let backlog = &sh.engine().backlog;
    if backlog.is_active() && !sh.master_link.following() {
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        backlog.append_raw(&argv);
    }
}
