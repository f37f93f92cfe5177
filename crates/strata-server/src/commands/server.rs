//! Connection and server commands: PING, ECHO, SELECT, QUIT, AUTH, HELLO, COMMAND, CLIENT,
//! INFO, CONFIG, TIME.

use super::args::{int_arg, is};
use super::errors::{arity_err, CmdError, NOAUTH, SYNTAX};
use super::{glob, subcommands, CmdResult, COMMANDS};
use crate::config::redis_params;
use crate::resp::Out;
use crate::state::{Conn, Figure, Shared, Subscriptions};
use crate::storage::SyncPolicy;
use crate::types::notify;
use crate::types::number::parse_int_strict;

/// The Redis version reported to clients (they gate features on it).
pub use crate::config::REDIS_VERSION;

/// PING [message]; on a subscribed RESP2 connection Redis answers `["pong", message]`.
pub fn ping(_: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 2 {
        return Err(arity_err("ping").into());
    }
    if !c.resp3 && c.subs.as_ref().is_some_and(Subscriptions::any) {
        out.array(2);
        out.bulk(b"pong");
        out.bulk(a.get(1).map_or(&b""[..], Vec::as_slice));
        return Ok(());
    }
    match a.get(1) {
        None => out.simple("PONG"),
        Some(m) => out.bulk(m),
    }
    Ok(())
}

pub fn echo(_: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    out.bulk(&a[1]);
    Ok(())
}

/// WAIT numreplicas timeout: how many replicas hold this connection's acknowledged writes.
/// A standalone server counts its replicas (`sync_source`) whose acknowledged offset reached
/// the stream's end after the connection's last write: at once when enough do (or inside
/// MULTI), else after asking them (REPLCONF GETACK in the stream) when enough do or the
/// timeout passes (0: never; off the async workers meanwhile). With no replica, 0 when the
/// timeout passes, the client blocked meanwhile as Redis blocks it.
/// In cluster mode every partition this node leads is asked (its writes went through their
/// groups): the fewest replicas besides this node whose log holds what the partition's log
/// held when WAIT came, waited for (off the async workers) until that reaches
/// `numreplicas` or the timeout passes. Every write was acknowledged after a majority of its
/// partition's replicas had it, so the count is at least a majority less one.
/// The key a WAIT for replicas blocks on (in its connection's database).
const ACKED: &[u8] = b"\x00replicas-acknowledged";

/// A replica acknowledged (`sync_source`): the clients in WAIT count again.
pub fn replicas_acked(sh: &Shared) {
    if sh.blocked.count() == 0 {
        return;
    }
    let waited = (0..sh.config.databases).map(|db| crate::blocked::waited_key(db, ACKED));
    super::blocking::serve(sh, waited.collect());
}

pub fn wait(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.master_link.following() {
        return Err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.".into());
    }
    let want = int_arg(&a[1])?;
    let ms = parse_int_strict(&a[2])
        .ok_or(CmdError::from("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    let timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms as u64));
    let Some(router) = sh.router.as_ref() else {
        // The replicas that acknowledged this connection's last write (`sync_source`); a
        // re-run after an acknowledgement (`blocking`) carries that offset as a 4th word.
        let at = a.get(3).and_then(|w| parse_int_strict(w)).map_or(c.repl_offset, |v| v as u64);
        let count = sh.replicas.holding(at);
        if want <= count as i64 || c.in_exec {
            out.int(count as i64);
            return Ok(());
        }
        if !sh.replicas.is_empty() {
            if a.len() == 3 {
                // Asked now rather than at their next second's acknowledgement.
                sh.engine().backlog.append_raw(&[b"REPLCONF", b"GETACK", b"*"]);
            }
            if c.retry.is_some() {
                // A re-run: the count so far is what its timeout answers.
                let mut n = Out { buf: Vec::new(), resp3: c.resp3 };
                n.int(count as i64);
                sh.blocked.set_timeout_reply(c.id, n.buf);
            }
            let mut line = a[..3].to_vec();
            line.push(at.to_string().into_bytes());
            let req = super::blocking::BlockRequest {
                keys: vec![ACKED.to_vec()],
                timeout,
                on_timeout: super::blocking::TimeoutReply::Int(count as i64),
                retry: Some(line),
            };
            return super::blocking::block(sh, c, a, req, out);
        }
        let req = super::blocking::BlockRequest {
            keys: Vec::new(),
            timeout,
            on_timeout: super::blocking::TimeoutReply::Zero,
            retry: None,
        };
        return super::blocking::block(sh, c, a, req, out);
    };
    let marks = router.replication_marks();
    let mut count = router.replicas_holding(&marks);
    if count as i64 >= want || c.in_exec {
        out.int(count as i64);
        return Ok(());
    }
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    crate::storage::pending::off_worker(|| {
        while (count as i64) < want && deadline.is_none_or(|d| std::time::Instant::now() < d) {
            std::thread::sleep(std::time::Duration::from_millis(2));
            count = router.replicas_holding(&marks);
        }
    });
    out.int(count as i64);
    Ok(())
}

pub fn quit(_: &Shared, c: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    c.close = true;
    out.ok();
    Ok(())
}

/// RESET: the connection back to a new connection's state (Redis 6.2's command): its
/// transaction and WATCHes discarded, its subscriptions dropped, RESP2, no name, replies on,
/// not READONLY, and not authenticated again while a password is set. It runs inside MULTI,
/// while subscribed and before AUTH (`multi`, `pubsub`, `dispatch`).
pub fn reset(sh: &Shared, c: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    c.multi = None;
    c.watched.clear();
    super::databases::note_db(sh, c, 0);
    super::client_tracking::turn_off(sh, c);
    super::pubsub::forget(sh, c);
    c.resp3 = false;
    out.resp3 = false;
    c.readonly = false;
    c.reply_mode = crate::state::ReplyMode::On;
    // Back to the default user, authenticated only if it needs no password.
    if c.user.is_some() {
        c.user = Some(sh.acl.default_user());
    }
    c.authed = sh.default_user_open();
    if let Some(e) = sh.clients.lock().get_mut(&c.id) {
        e.name.clear();
        e.resp = 2;
        e.user = None;
    }
    out.simple("RESET");
    Ok(())
}

/// AUTH and HELLO AUTH: `user` (the default user when AUTH names none) with `pass`.
fn check_password(
    sh: &Shared,
    c: &mut Conn,
    user: Option<&[u8]>,
    pass: &[u8],
    command: &[u8],
) -> Result<(), CmdError> {
    if user.is_none() && sh.acl.default_user().read().nopass {
        return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".into());
    }
    super::acl::authenticate(sh, c, user.unwrap_or(crate::acl::DEFAULT_USER), pass, command)
}

pub fn auth(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    match a.len() {
        2 => check_password(sh, c, None, &a[1], &a[0])?,
        3 => check_password(sh, c, Some(&a[1]), &a[2], &a[0])?,
        _ => return Err(SYNTAX.into()),
    }
    out.ok();
    Ok(())
}

pub fn hello(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let mut proto = None;
    let mut i = 1;
    if a.len() > 1 {
        let v = parse_int_strict(&a[1])
            .ok_or("ERR Protocol version is not an integer or out of range")?;
        if v != 2 && v != 3 {
            return Err("NOPROTO unsupported protocol version".into());
        }
        proto = Some(v);
        i = 2;
    }
    let mut name = None;
    while i < a.len() {
        if is(&a[i], "auth") && i + 2 < a.len() {
            check_password(sh, c, Some(&a[i + 1]), &a[i + 2], &a[0])?;
            i += 3;
        } else if is(&a[i], "setname") && i + 1 < a.len() {
            name = Some(a[i + 1].clone());
            i += 2;
        } else {
            return Err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&a[i])
            )
            .into());
        }
    }
    if !c.authed {
        return Err(format!("{} HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time", NOAUTH.trim_end_matches(" Authentication required.")).into());
    }
    if let Some(p) = proto {
        c.resp3 = p == 3;
    }
    out.resp3 = c.resp3;
    if c.resp3 {
        // A RESP3 connection takes push frames: client-side caching's redirected
        // invalidations among them (`client_tracking`).
        super::pubsub::message_queue(sh, c);
    }
    {
        let mut cl = sh.clients.lock();
        if let Some(e) = cl.get_mut(&c.id) {
            e.resp = if c.resp3 { 3 } else { 2 };
            if let Some(n) = &name {
                e.name = String::from_utf8_lossy(n).into_owned();
            }
        }
    }
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if c.resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(c.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

fn command_info(out: &mut Out, c: &super::Command) {
    let (flags, cats) = (super::flags::flags(c), super::flags::categories(c));
    let subs: Vec<_> = subcommands::of(c.name).collect();
    // A container's keys are its subcommands' (Redis reports 0 0 0 for it).
    let keys = if subs.is_empty() { [c.keys.first, c.keys.last, c.keys.step] } else { [0; 3] };
    info_head(out, c.name, c.arity, &flags, keys, &cats);
    key_specs(out, c.name);
    out.array(subs.len());
    for e in subs {
        subcommand_info(out, e);
    }
}

/// COMMAND INFO's entry of a subcommand (`container|sub`), in a command's shape.
fn subcommand_info(out: &mut Out, e: &subcommands::Entry) {
    let &(name, arity, flags, first, last, step, cats) = e;
    let flags: Vec<_> = subcommands::words(flags).collect();
    let cats: Vec<_> = subcommands::words(cats).collect();
    info_head(out, name, arity, &flags, [first, last, step], &cats);
    key_specs(out, name);
    out.array(0);
}

/// COMMAND INFO's tips and key specifications of command `name` (`container|sub`), as Redis
/// 7.0 replies them (`command_specs`).
fn key_specs(out: &mut Out, name: &str) {
    use super::command_specs::{Begin, Find};
    let (tips, specs) = super::command_specs::of(name);
    let tips: Vec<&str> = tips.split_whitespace().collect();
    out.set(tips.len());
    for t in tips {
        out.simple(t);
    }
    out.array(specs.len());
    for s in specs {
        out.map(3);
        out.bulk(b"flags");
        let flags: Vec<&str> = super::key_flags::KeyFlags::parse(s.flags).names().collect();
        out.set(flags.len());
        for f in flags {
            out.simple(f);
        }
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match s.begin {
            Begin::Index(i) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(i);
            }
            Begin::Keyword(k, from) => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(k.as_bytes());
                out.bulk(b"startfrom");
                out.int(from);
            }
            Begin::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        let fields: &[(&str, i64)] = match s.find {
            Find::Range(last, step, limit) => {
                out.bulk(b"range");
                &[("lastkey", last), ("keystep", step), ("limit", limit)]
            }
            Find::Keynum(idx, first, step) => {
                out.bulk(b"keynum");
                &[("keynumidx", idx), ("firstkey", first), ("keystep", step)]
            }
            Find::Unknown => {
                out.bulk(b"unknown");
                &[]
            }
        };
        out.bulk(b"spec");
        out.map(fields.len());
        for (k, v) in fields {
            out.bulk(k.as_bytes());
            out.int(*v);
        }
    }
}

/// The first seven of COMMAND INFO's ten elements: name, arity, flags, the first key, the
/// last key and the step between keys, categories; the caller adds the tips and key
/// specifications ([`key_specs`]) and the subcommands.
fn info_head(out: &mut Out, name: &str, arity: i32, flags: &[&str], keys: [i32; 3], cats: &[&str]) {
    out.array(10);
    out.bulk(name.as_bytes());
    out.int(i64::from(arity));
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    for k in keys {
        out.int(i64::from(k));
    }
    out.set(cats.len());
    for cat in cats {
        out.simple(&format!("@{cat}"));
    }
}

/// COMMAND LIST's names (the commands, then the subcommands as `container|sub`), filtered as
/// `filter` says: nothing, or `FILTERBY` with `ACLCAT cat`,
/// `PATTERN glob` (case-insensitive, as Redis matches) or `MODULE name` (no modules here:
/// none); anything else is Redis's syntax error.
fn command_list(sh: &Shared, filter: &[Vec<u8>]) -> Result<Vec<&'static str>, String> {
    let all = COMMANDS.iter().filter(|c| super::served(sh, c));
    let subs = subcommands::TABLE.iter().filter(|e| container_served(sh, e.0));
    match filter {
        [] => Ok(all.map(|c| c.name).chain(subs.map(|e| e.0)).collect()),
        [by, kind, arg] if is(by, "filterby") => {
            if is(kind, "aclcat") {
                let cat = String::from_utf8_lossy(arg).to_ascii_lowercase();
                let cat = cat.as_str();
                Ok(all
                    .filter(|c| super::flags::categories(c).contains(&cat))
                    .map(|c| c.name)
                    .chain(subs.filter(|e| subcommands::words(e.6).any(|w| w == cat)).map(|e| e.0))
                    .collect())
            } else if is(kind, "pattern") {
                // A subcommand by its full name (`config|get`), as Redis matches.
                let pat = arg.to_ascii_lowercase();
                let hit = |name: &str| super::glob::matches(&pat, name.as_bytes());
                Ok(all.map(|c| c.name).chain(subs.map(|e| e.0)).filter(|name| hit(name)).collect())
            } else if is(kind, "module") {
                Ok(Vec::new())
            } else {
                Err("ERR syntax error".into())
            }
        }
        _ => Err("ERR syntax error".into()),
    }
}

/// COMMAND GETKEYS: the keys of the command line `line` (its name first), by the command
/// table's key positions, with Redis's errors for an unknown command, a wrong argument count
/// and a command without keys; GETKEYSANDFLAGS (`with_flags`): each key with its flags
/// (`key_flags`).
fn command_getkeys(sh: &Shared, line: &[Vec<u8>], with_flags: bool, out: &mut Out) -> CmdResult {
    let Some(name) = line.first() else {
        let sub = if with_flags { "getkeysandflags" } else { "getkeys" };
        return Err(format!("ERR wrong number of arguments for 'command|{sub}' command").into());
    };
    let Some(c) = super::find(sh, name) else {
        return Err("ERR Invalid command specified".into());
    };
    if !c.arity_fits(line.len()) {
        return Err("ERR Invalid number of arguments specified for command".into());
    }
    if !c.keys.has_keys() || c.keys.channels {
        return Err("ERR The command has no key arguments".into());
    }
    let keys = c.keys.positions(line);
    // A script may be called with no keys (Redis's `no-mandatory-keys`): then none.
    if keys.is_empty() && c.keys.movable() && !super::scripting::runs_script(c.name) {
        return Err("ERR Invalid arguments specified for command".into());
    }
    if !with_flags {
        out.array(keys.len());
        for i in keys {
            out.bulk(&line[i]);
        }
        return Ok(());
    }
    let flags = super::acl::keys_flags(c, line, keys.len()).unwrap_or_default();
    out.array(keys.len());
    for (n, i) in keys.into_iter().enumerate() {
        out.array(2);
        out.bulk(&line[i]);
        let names: Vec<&str> = flags.get(n).map(|f| f.names().collect()).unwrap_or_default();
        out.set(names.len());
        for f in names {
            out.simple(f);
        }
    }
    Ok(())
}

/// Whether the container of subcommand `full` (`config|get`) is served by its own name
/// (`rename-command`): COMMAND INFO and LIST name a subcommand by its container's own name, as
/// Redis looks the container up among the names served.
fn container_served(sh: &Shared, full: &str) -> bool {
    let container = full.split('|').next().unwrap_or(full);
    super::find(sh, container.as_bytes()).is_some_and(|c| c.name == container)
}

pub fn command(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    // A command `rename-command` took away is left out; a renamed one keeps its own name.
    let served: Vec<&super::Command> = COMMANDS.iter().filter(|c| super::served(sh, c)).collect();
    if a.len() == 1 {
        out.array(served.len());
        for c in served {
            command_info(out, c);
        }
        return Ok(());
    }
    let sub = &a[1];
    if is(sub, "count") {
        out.int(served.len() as i64);
    } else if is(sub, "info") {
        let names: Vec<&Vec<u8>> = a[2..].iter().collect();
        if names.is_empty() {
            out.array(served.len());
            for c in served {
                command_info(out, c);
            }
        } else {
            out.array(names.len());
            for n in names {
                let lower = String::from_utf8_lossy(n).to_ascii_lowercase();
                if lower.contains('|') {
                    match subcommands::lookup(&lower).filter(|_| container_served(sh, &lower)) {
                        Some(e) => subcommand_info(out, e),
                        None => out.null_array(),
                    }
                    continue;
                }
                match super::find(sh, n) {
                    Some(c) => command_info(out, c),
                    None => out.null_array(),
                }
            }
        }
    } else if is(sub, "getkeys") || is(sub, "getkeysandflags") {
        command_getkeys(sh, &a[2..], is(sub, "getkeysandflags"), out)?;
    } else if is(sub, "docs") {
        out.map(0);
    } else if is(sub, "help") {
        let help = [
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Every command's details.",
            "COUNT",
            "    How many commands there are.",
            "DOCS [<command-name> ...]",
            "    The commands' documentation (none is kept here: an empty map).",
            "GETKEYS <full-command>",
            "    The keys of a command line.",
            "GETKEYSANDFLAGS <full-command>",
            "    The keys of a command line, each with its flags (access, update, ...).",
            "INFO [<command-name> ...]",
            "    The details of the commands (all when none is named); `container|sub` names a",
            "    subcommand.",
            "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
            "    The names of the commands and subcommands, those the filter selects if given.",
            "HELP",
            "    This text.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "list") {
        let names = command_list(sh, &a[2..])?;
        out.array(names.len());
        for n in names {
            out.bulk(n.as_bytes());
        }
    } else {
        return Err(super::errors::unknown_subcommand(a));
    }
    Ok(())
}

/// One line of CLIENT LIST; `flags` the letters known beside the entry (`N` when none).
fn client_line(id: u64, e: &crate::state::ClientEntry, flags: &str, redir: i64) -> String {
    let age = e.since.map_or(0, |s| s.elapsed().as_secs());
    let (code, idle) = e.activity.last(e.since);
    let cmd = subcommands::code_name(code);
    let flags = if flags.is_empty() { "N" } else { flags };
    let user = e.user.as_ref().map_or("default".into(), |u| String::from_utf8_lossy(&u.name));
    let f = |x| e.activity.get(x);
    let multi = i128::from(f(Figure::MultiPlusOne)) - 1;
    // Replies waiting go in one buffer here (`obl`); Redis's reply list (`oll`, `omem`) is
    // always empty.
    let events = if f(Figure::Obl) > 0 { "rw" } else { "r" };
    let tot = e.activity.total_memory();
    format!(
        "id={id} addr={} laddr={} fd={} name={} age={age} idle={idle} flags={flags} db={} \
         sub={} psub={} ssub={} multi={multi} qbuf={} qbuf-free={} argv-mem={} multi-mem={} \
         rbs={} rbp={} obl={} oll=0 omem=0 tot-mem={tot} events={events} cmd={cmd} user={user} \
         redir={redir} resp={} lib-name={} lib-ver=\n",
        e.addr,
        e.laddr,
        e.fd,
        e.name,
        e.db,
        f(Figure::Sub),
        f(Figure::Psub),
        f(Figure::Ssub),
        f(Figure::Qbuf),
        f(Figure::QbufFree),
        f(Figure::ArgvMem),
        f(Figure::MultiMem),
        f(Figure::Rbs),
        f(Figure::Rbp),
        f(Figure::Obl),
        e.resp,
        e.lib
    )
}

/// CLIENT INFO's line of connection `id` (empty for one not on the books).
pub fn client_info(sh: &Shared, id: u64) -> String {
    let cl = sh.clients.lock();
    cl.get(&id).map(|e| entry_line(sh, id, e)).unwrap_or_default()
}

/// The CLIENT LIST line of connection `id`, its entry `e`.
fn entry_line(sh: &Shared, id: u64, e: &crate::state::ClientEntry) -> String {
    let (tracking, redir) = super::client_tracking::list_fields(sh, id);
    // Redis's order: S (a replica of this server), M (its master's link), b (blocked), the
    // tracking letters, U, e.
    let mut flags = String::new();
    if sh.replicas.has(id) {
        flags.push('S');
    }
    if e.master_link.is_some() {
        flags.push('M');
    }
    if sh.blocked.is_blocked(id) {
        flags.push('b');
    }
    flags.push_str(&tracking);
    if e.unix {
        flags.push('U');
    }
    if e.no_evict {
        flags.push('e');
    }
    client_line(id, e, &flags, redir)
}

/// CLIENT LIST's lines: every connection's in id order, those of one class (`filter` =
/// `TYPE class`), or those named (`ID id ...`, in the order named; an id of no connection is
/// left out), as Redis filters.
fn client_list(sh: &Shared, filter: &[Vec<u8>]) -> Result<String, CmdError> {
    let (class, named) = match filter {
        [] => (None, None),
        [t, name] if is(t, "type") => (Some(super::client_kill::client_class(name)?), None),
        [id, ids @ ..] if is(id, "id") && !ids.is_empty() => {
            let ids: Option<Vec<u64>> = ids
                .iter()
                .map(|i| parse_int_strict(i).map(|i| u64::try_from(i).unwrap_or(0)))
                .collect();
            (None, Some(ids.ok_or(CmdError::Reply("ERR Invalid client ID".into()))?))
        }
        _ => return Err(SYNTAX.into()),
    };
    let subscribed = class.map(|_| sh.pubsub.subscribed());
    let replicas = class.map(|_| sh.replicas.ids()).unwrap_or_default();
    let cl = sh.clients.lock();
    let ids = named.unwrap_or_else(|| {
        let mut ids: Vec<u64> = cl.keys().copied().collect();
        ids.sort_unstable();
        let subscribed = |id| subscribed.as_ref().is_some_and(|s| s.contains(&id));
        ids.retain(|&id| {
            let master = cl.get(&id).is_some_and(|e| e.master_link.is_some());
            let replica = replicas.contains(&id);
            class.is_none_or(|k| super::client_kill::of_class(k, master, replica, subscribed(id)))
        });
        ids
    });
    Ok(ids.into_iter().filter_map(|id| cl.get(&id).map(|e| entry_line(sh, id, e))).collect())
}

/// CLIENT: its subcommands' arities are checked before (`dispatch_found`, by the subcommand
/// table) but for SETINFO's, which the table does not list, and UNBLOCK's upper bound.
pub fn client(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let arity = || {
        format!(
            "ERR wrong number of arguments for 'client|{}' command",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        )
    };
    if is(sub, "setname") {
        let name = &a[2];
        if name.iter().any(|&b| b <= b' ' || b > b'~') {
            return Err(
                "ERR Client names cannot contain spaces, newlines or special characters.".into()
            );
        }
        if let Some(e) = sh.clients.lock().get_mut(&c.id) {
            e.name = String::from_utf8_lossy(name).into_owned();
        }
        out.ok();
    } else if is(sub, "no-evict") {
        let on = match &a[2] {
            v if is(v, "on") => true,
            v if is(v, "off") => false,
            _ => return Err(SYNTAX.into()),
        };
        if let Some(e) = sh.clients.lock().get_mut(&c.id) {
            e.no_evict = on;
        }
        out.ok();
    } else if is(sub, "getname") {
        let name = sh.clients.lock().get(&c.id).map(|e| e.name.clone()).unwrap_or_default();
        out.opt_bulk((!name.is_empty()).then_some(name.as_bytes()));
    } else if is(sub, "setinfo") {
        if a.len() != 4 {
            return Err(arity().into());
        }
        if is(&a[2], "lib-name") {
            if let Some(e) = sh.clients.lock().get_mut(&c.id) {
                e.lib = String::from_utf8_lossy(&a[3]).into_owned();
            }
        } else if !is(&a[2], "lib-ver") {
            return Err(
                format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(&a[2])).into()
            );
        }
        out.ok();
    } else if is(sub, "id") {
        out.int(c.id as i64);
    } else if is(sub, "reply") {
        c.reply_mode = if is(&a[2], "on") {
            crate::state::ReplyMode::On
        } else if is(&a[2], "off") {
            crate::state::ReplyMode::Off
        } else if is(&a[2], "skip") {
            crate::state::ReplyMode::Skip { armed: true }
        } else {
            return Err(SYNTAX.into());
        };
        out.ok();
    } else if is(sub, "unblock") {
        if a.len() > 4 {
            return Err(arity().into());
        }
        let id = int_arg(&a[2])?;
        let error = match a.get(3) {
            None => false,
            Some(r) if is(r, "timeout") => false,
            Some(r) if is(r, "error") => true,
            Some(_) => return Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into()),
        };
        let unblocked = u64::try_from(id).is_ok_and(|id| super::blocking::unblock(sh, id, error));
        out.int(i64::from(unblocked));
    } else if is(sub, "help") && a.len() == 2 {
        let help = [
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ID",
            "    This connection's id.",
            "INFO",
            "    This connection's line of CLIENT LIST.",
            "LIST",
            "    One line per connection: id, addresses, name, age, database, protocol.",
            "KILL <ip:port>",
            "    Close the connection from that address.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Close every connection the options match: ID <id>, ADDR <ip:port>,",
            "    LADDR <ip:port>, TYPE (NORMAL|PUBSUB|MASTER|REPLICA|SLAVE), USER <name>,",
            "    SKIPME (YES|NO) (YES unless given). Replies how many were closed.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Hold every command (ALL) or the writing ones (WRITE) for <timeout> ms.",
            "UNPAUSE",
            "    Lift CLIENT PAUSE.",
            "NO-EVICT (ON|OFF)",
            "    Protect this connection from client eviction (recorded: none happens here).",
            "GETNAME",
            "    This connection's name.",
            "SETNAME <name>",
            "    Name this connection.",
            "SETINFO (LIB-NAME|LIB-VER) <value>",
            "    Record the client library's name or version.",
            "REPLY (ON|OFF|SKIP)",
            "    Whether the next commands are answered.",
            "UNBLOCK <id> [TIMEOUT|ERROR]",
            "    End a blocking command of another connection, as a timeout or an error.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT]",
            "         [NOLOOP]",
            "    Client-side caching: be told of changes to the keys read (or, with BCAST, of",
            "    the keys with the prefixes), here or at client <id>.",
            "CACHING (YES|NO)",
            "    With OPTIN (YES) or OPTOUT (NO): whether the next command's reads are tracked.",
            "GETREDIR",
            "    Where invalidations go: a client id, 0 (here), -1 (not tracking).",
            "TRACKINGINFO",
            "    This connection's tracking: flags, redirect, prefixes.",
            "HELP",
            "    This text.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "kill") {
        return super::client_kill::kill(sh, c, a, out);
    } else if is(sub, "pause") {
        if a.len() > 4 {
            return Err(super::errors::unknown_subcommand(a));
        }
        return super::client_pause::pause(sh, a, out);
    } else if is(sub, "unpause") {
        return super::client_pause::unpause(sh, out);
    } else if is(sub, "tracking") {
        return super::client_tracking::tracking(sh, c, a, out);
    } else if is(sub, "caching") {
        return super::client_tracking::caching(c, a, out);
    } else if is(sub, "getredir") {
        return super::client_tracking::getredir(sh, c, out);
    } else if is(sub, "trackinginfo") {
        return super::client_tracking::trackinginfo(sh, c, out);
    } else if is(sub, "info") {
        out.verbatim(&client_info(sh, c.id));
    } else if is(sub, "list") {
        out.verbatim(&client_list(sh, &a[2..])?);
    } else {
        return Err(super::errors::unknown_subcommand(a));
    }
    Ok(())
}

/// CONFIG SET's checks of its `name value` pairs, in Redis 7.0's order: every name first (an
/// unknown one, one read at start only, the same parameter twice), then every value; the
/// first problem as Redis words it.
fn config_set_check(
    params: &std::collections::BTreeMap<String, String>,
    pairs: &[Vec<u8>],
) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    let names: Vec<String> =
        pairs.chunks(2).map(|p| String::from_utf8_lossy(&p[0]).to_ascii_lowercase()).collect();
    for (k, pair) in names.iter().zip(pairs.chunks(2)) {
        // Errors name the argument as given.
        let given = String::from_utf8_lossy(&pair[0]);
        let failed = |why: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{given}') - {why}")
        };
        if !params.contains_key(k) {
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{given}'"
            ));
        }
        // Read at start only here (`bind`: setting the value it has is a no-op), or as Redis
        // keeps them.
        let start_only =
            k == "bind" && params.get(k).map(String::as_bytes) != Some(pair[1].as_slice());
        if start_only || redis_params::IMMUTABLE.contains(&k.as_str()) {
            return Err(failed("can't set immutable config"));
        }
        if redis_params::PROTECTED.contains(&k.as_str()) {
            return Err(failed("can't set protected config"));
        }
        let canonical = crate::config::canonical(k);
        if seen.contains(&canonical) {
            return Err(failed("duplicate parameter"));
        }
        seen.push(canonical);
    }
    for (k, pair) in names.iter().zip(pairs.chunks(2)) {
        config_value_check(k, &String::from_utf8_lossy(&pair[0]), &pair[1])?;
    }
    Ok(())
}

/// CONFIG SET's `port` (named `given`, checked as a number 0-65535): a listener bound on
/// the new port with its number, none when the port stays. A cluster node's port is in the
/// cluster's map and stays; port 0 (Redis's "no TCP") would leave no way in here (no unix
/// socket).
fn new_port_listener(
    sh: &Shared,
    given: &[u8],
    raw: &[u8],
) -> Result<Option<(u16, std::net::TcpListener)>, CmdError> {
    let failed = |why: &str| {
        let given = String::from_utf8_lossy(given);
        CmdError::from(format!(
            "ERR CONFIG SET failed (possibly related to argument '{given}') - {why}"
        ))
    };
    let port = std::str::from_utf8(raw).ok().and_then(|p| p.parse::<u16>().ok());
    let Some(port) = port else { return Err(failed("argument must be between 0 and 65535")) };
    if port == sh.port.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(None);
    }
    if sh.router.is_some() {
        return Err(failed("can't set the port of a cluster node (the cluster map holds it)"));
    }
    if port == 0 {
        return Err(failed("port 0 would leave no way to connect (no unix socket here)"));
    }
    let bind = sh.config.bind.as_str();
    let bound = std::net::TcpListener::bind((bind, port)).and_then(|l| {
        l.set_nonblocking(true)?;
        Ok(l)
    });
    match bound {
        Ok(l) => Ok(Some((port, l))),
        Err(e) => {
            eprintln!("CONFIG SET port: cannot listen on {bind}:{port}: {e}");
            Err(failed("Unable to listen on this port. Check server logs."))
        }
    }
}

/// Whether `raw` is a value CONFIG SET takes for parameter `k` (given as `given`); Redis's
/// error if not.
fn config_value_check(k: &str, given: &str, raw: &[u8]) -> Result<(), String> {
    crate::config::values::check(k, raw).map_err(|why| {
        format!("ERR CONFIG SET failed (possibly related to argument '{given}') - {why}")
    })
}

pub fn config(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    if is(sub, "get") {
        if a.len() < 3 {
            return Err("ERR wrong number of arguments for 'config|get' command".into());
        }
        let params = sh.params.read();
        // A hidden parameter is named by its exact name only, never by a pattern (Redis's).
        let hidden = |k: &str| crate::config::redis_params::HIDDEN.contains(&k);
        let asked: Vec<(Vec<u8>, bool)> = a[2..]
            .iter()
            .map(|p| (p.to_ascii_lowercase(), p.iter().any(|c| b"[*?".contains(c))))
            .collect();
        let asks = |k: &str| {
            asked.iter().any(|(p, pattern)| match pattern {
                true => !hidden(k) && glob::matches(p, k.as_bytes()),
                false => p == k.as_bytes(),
            })
        };
        let hits: Vec<(&String, &String)> = params.iter().filter(|(k, _)| asks(k)).collect();
        out.map(hits.len());
        for (k, v) in hits {
            out.bulk(k.as_bytes());
            out.bulk(v.as_bytes());
        }
    } else if is(sub, "set") {
        if a.len() < 4 {
            return Err("ERR wrong number of arguments for 'config|set' command".into());
        }
        if !a.len().is_multiple_of(2) {
            return Err(SYNTAX.into());
        }
        // Every name, then every value, is checked before any is set (Redis sets all or
        // none): the first problem is the reply and nothing changes.
        config_set_check(&sh.params.read(), &a[2..])?;
        // The one setting whose taking effect can fail: the new port is bound before anything
        // is set, so a port that cannot be had leaves every parameter as it was.
        let listener = match a[2..].chunks(2).find(|p| is(&p[0], "port")) {
            Some(p) => new_port_listener(sh, &p[0], &p[1])?,
            None => None,
        };
        let mut params = sh.params.write();
        let mut maxmemory_changed = false;
        let mut frequencies_changed = false;
        for pair in a[2..].chunks(2) {
            let k = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
            let v = String::from_utf8_lossy(&pair[1]).into_owned();
            if k == "appendfsync" {
                if let Some(p) = SyncPolicy::parse(&v) {
                    sh.engine().set_sync_policy(p);
                }
            }
            if matches!(
                k.as_str(),
                "hash-max-listpack-entries"
                    | "hash-max-listpack-value"
                    | "hash-max-ziplist-entries"
                    | "hash-max-ziplist-value"
            ) {
                // Checked by `config_set_check`; both names report it (`config::ALIASES`).
                let n = crate::config::parse_size(&v).and_then(|n| usize::try_from(n).ok());
                let n = n.unwrap_or(0);
                if k.ends_with("entries") {
                    sh.hash_limits.set_entries(n);
                } else {
                    sh.hash_limits.set_value(n);
                }
            }
            if k == "requirepass" {
                sh.acl.set_default_password((!v.is_empty()).then_some(v.as_bytes()));
            }
            if k == "acllog-max-len" {
                sh.acl.log.set_max_len(v.parse().unwrap_or(usize::MAX));
            }
            if k == "acl-pubsub-default" {
                sh.acl.set_pubsub_default_all(v.eq_ignore_ascii_case("allchannels"));
            }
            if k == "slowlog-log-slower-than" {
                sh.slowlog.set_threshold(v.parse().unwrap_or(crate::slowlog::DEFAULT_THRESHOLD_US));
            }
            if k == "tracking-table-max-keys" {
                // Checked by `config_value_check`: 0 up.
                sh.tracking.set_max_keys(v.parse().unwrap_or(0));
            }
            if k == "latency-tracking" {
                let on = v.eq_ignore_ascii_case("yes");
                sh.stats.latency_tracking.store(on, std::sync::atomic::Ordering::Relaxed);
            }
            if k == "latency-monitor-threshold" {
                // Checked by `config_value_check`: 0 up.
                sh.latency.set_threshold(v.parse().unwrap_or(0));
            }
            if k == "slowlog-max-len" {
                sh.slowlog.set_max_len(v.parse().unwrap_or(usize::MAX));
            }
            if k == "stream-node-max-entries" {
                sh.stream_nodes.set_entries(v.parse().unwrap_or(0));
            }
            if k == "min-replicas-to-write" || k == "min-slaves-to-write" {
                sh.min_replicas_to_write
                    .store(v.parse().unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
            }
            if matches!(k.as_str(), "maxmemory-policy" | "lfu-log-factor" | "lfu-decay-time") {
                frequencies_changed = true;
            }
            if k == "maxmemory" {
                // Checked by `config_value_check`.
                let n = crate::config::parse_size(&v).unwrap_or(0);
                sh.maxmemory.store(n, std::sync::atomic::Ordering::Relaxed);
                maxmemory_changed = true;
            }
            if k == "hll-sparse-max-bytes" {
                let n = crate::config::parse_size(&v).unwrap_or(0);
                sh.hll_sparse_max.store(n as usize, std::sync::atomic::Ordering::Relaxed);
            }
            if k == "stream-node-max-bytes" {
                sh.stream_nodes.set_bytes(crate::config::parse_size(&v).unwrap_or(0));
            }
            if k == "notify-keyspace-events" {
                // Checked above; shown in Redis's order whatever order it was given in.
                let flags = notify::parse_classes(&pair[1]).unwrap_or(0);
                sh.notifier.set_flags(flags);
                params.insert(k, notify::render_classes(flags));
                continue;
            }
            // The classes the value names take its limits, the others keep theirs.
            let v = if k == "client-output-buffer-limit" {
                crate::config::fold_line(&k, params.get(&k).map(String::as_str), &v)
            } else {
                v
            };
            // Redis 7.0's names and their older aliases report one value.
            for &(name, alias) in crate::config::ALIASES {
                if k == name {
                    params.insert(alias.into(), v.clone());
                } else if k == alias {
                    params.insert(name.into(), v.clone());
                }
            }
            params.insert(k, v);
        }
        if let Some((port, l)) = listener {
            params.insert("port".into(), port.to_string());
            sh.port.store(port, std::sync::atomic::Ordering::Relaxed);
            if let Some(tx) = sh.new_listener.lock().as_ref() {
                let _ = tx.send(l);
            }
        }
        if frequencies_changed {
            crate::state::configure_frequencies(&sh.engine().frequencies, &params);
        }
        drop(params);
        // The new limit holds for the next command (Redis checks before each).
        if maxmemory_changed {
            let clients = sh.clients.lock().values().map(|e| e.activity.total_memory()).sum();
            super::oom::enforce(sh, super::memory::note_peak(sh, clients));
        }
        out.ok();
    } else if is(sub, "resetstat") {
        sh.stats.reset();
        sh.notifier.reset_expired();
        sh.replicas.reset_stats();
        out.ok();
    } else if is(sub, "help") && a.len() == 2 {
        let help = [
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern> [<pattern> ...]",
            "    The parameters matching any of the glob-style patterns, with their values.",
            "SET <parameter> <value> [<parameter> <value> ...]",
            "    Set the parameters: all of them, or none when one name or value is refused.",
            "RESETSTAT",
            "    Zero the statistics INFO reports.",
            "REWRITE",
            "    Rewrite the configuration file with the settings now.",
            "HELP",
            "    This text.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "rewrite") {
        super::config_rewrite::config_rewrite(sh)?;
        out.ok();
    } else {
        return Err(super::errors::unknown_subcommand(a));
    }
    Ok(())
}

pub fn time(_: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    out.array(2);
    out.bulk(d.as_secs().to_string().as_bytes());
    out.bulk(d.subsec_micros().to_string().as_bytes());
    Ok(())
}

/// ROLE: a standalone server is a master without replicas (`master`, offset 0, no
/// replicas), as redis-server without them. In cluster mode a node leads some partitions and
/// follows others; ROLE says what INFO replication's `role` says: `master` when the node
/// leads a slot range, with the other nodes holding those ranges as its replicas, else
/// `slave` of the leader of the first range it holds (state `connected`, or `connect` with
/// no host while that range has no leader). Replication offsets are 0: Raft's log positions
/// are per partition (INFO replication's partition lines).
pub fn role(sh: &Shared, _: &mut Conn, _: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if let Some(link) = sh.master_link.current() {
        // A replica (REPLICAOF): its master, the link's state and the offset applied.
        out.array(5);
        out.bulk(b"slave");
        out.bulk(link.target.host.as_bytes());
        out.int(i64::from(link.target.port));
        out.bulk(link.phase().role_word().as_bytes());
        out.int(link.offset(&sh.engine().backlog));
        return Ok(());
    }
    let Some(router) = sh.router.as_ref() else {
        // A master: its stream's offset and its replicas (`sync_source`).
        let replicas = sh.replicas.list();
        out.array(3);
        out.bulk(b"master");
        out.int(sh.engine().backlog.offset() as i64);
        out.array(replicas.len());
        for r in &replicas {
            out.array(3);
            out.bulk(r.ip.as_bytes());
            out.bulk(r.port.to_string().as_bytes());
            out.bulk(r.ack.to_string().as_bytes());
        }
        return Ok(());
    };
    let l = router.layout();
    let me = l.myself;
    let led: Vec<&crate::routing::SlotRange> =
        l.ranges.iter().filter(|r| r.leader == Some(me)).collect();
    if !led.is_empty() {
        let mut replicas: Vec<u64> =
            led.iter().flat_map(|r| r.replicas.iter().copied()).filter(|id| *id != me).collect();
        replicas.sort_unstable();
        replicas.dedup();
        let known: Vec<&crate::routing::NodeInfo> =
            replicas.iter().filter_map(|id| l.nodes.iter().find(|n| n.id == *id)).collect();
        out.array(3);
        out.bulk(b"master");
        out.int(0);
        out.array(known.len());
        for n in known {
            out.array(3);
            out.bulk(n.host.as_bytes());
            out.bulk(n.port.to_string().as_bytes());
            out.bulk(b"0");
        }
        return Ok(());
    }
    let first = l.ranges.iter().find(|r| r.replicas.contains(&me));
    let leader = first.and_then(|r| r.leader).and_then(|id| l.nodes.iter().find(|n| n.id == id));
    out.array(5);
    out.bulk(b"slave");
    out.bulk(leader.map_or(&b""[..], |n| n.host.as_bytes()));
    out.int(leader.map_or(0, |n| i64::from(n.port)));
    out.bulk(if leader.is_some() { b"connected" } else { b"connect" });
    out.int(0);
    Ok(())
}
