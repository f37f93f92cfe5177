//! ACL (SETUSER, GETUSER, DELUSER, USERS, LIST, WHOAMI, CAT, GENPASS, DRYRUN, LOG, SAVE,
//! LOAD, HELP) and the command table's side of [`crate::acl`]: the catalog of command ids
//! (every command of [`COMMANDS`], then every subcommand of `subcommands::TABLE`), the keys
//! and channels of a command line, each line's check, and the refusals' replies and log
//! entries as Redis words them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::args::is;
use super::errors::CmdError;
use super::key_flags::{self, KeyFlags};
use super::{flags, glob, index_of, subcommands, CmdResult, Command, COMMANDS};
use crate::acl::log::{Context, Entry, Reason};
use crate::acl::selector::{READ, WRITE};
use crate::acl::{Catalog, Denied, Line, User, UserCell, DEFAULT_USER};
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_int_strict;

/// Redis 7.0's commands and subcommands this server does not serve (`Catalog::elsewhere`).
/// Sentinel's are not among them: a Redis server outside sentinel mode refuses them too.
const REDIS_ONLY: &[&str] = &[
    "cluster|addslots",
    "cluster|addslotsrange",
    "cluster|bumpepoch",
    "cluster|count-failure-reports",
    "cluster|delslots",
    "cluster|delslotsrange",
    "cluster|failover",
    "cluster|flushslots",
    "cluster|forget",
    "cluster|links",
    "cluster|meet",
    "cluster|replicas",
    "cluster|replicate",
    "cluster|reset",
    "cluster|saveconfig",
    "cluster|set-config-epoch",
    "cluster|setslot",
    "cluster|slaves",
    "lolwut",
    "module",
    "module|help",
    "module|list",
    "module|load",
    "module|loadex",
    "module|unload",
    "restore-asking",
    "script|debug",
];

/// The commands as [`crate::acl`] sees them.
pub struct CommandCatalog {
    names: Vec<&'static str>,
    parents: Vec<Option<usize>>,
    subs: Vec<Vec<usize>>,
    top: Vec<usize>,
    /// Per id, a bit per category of `flags::CATEGORY_ORDER`.
    categories: Vec<u32>,
    /// Per id, the flags of its key specs (`key_flags`).
    key_specs: Vec<Vec<KeyFlags>>,
    by_name: HashMap<&'static str, usize>,
}

/// The catalog of this server's commands.
pub fn catalog() -> &'static CommandCatalog {
    static CATALOG: OnceLock<CommandCatalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mask = |cats: &mut dyn Iterator<Item = &str>| {
            cats.filter_map(|c| flags::CATEGORY_ORDER.iter().position(|o| *o == c))
                .fold(0u32, |m, i| m | 1 << i)
        };
        let mut names: Vec<&'static str> = COMMANDS.iter().map(|c| c.name).collect();
        let mut categories: Vec<u32> =
            COMMANDS.iter().map(|c| mask(&mut flags::categories(c).into_iter())).collect();
        let mut parents = vec![None; COMMANDS.len()];
        let mut subs = vec![Vec::new(); COMMANDS.len()];
        for e in subcommands::TABLE {
            let id = names.len();
            let container = e.0.split_once('|').map_or(e.0, |(c, _)| c);
            let parent = COMMANDS.iter().position(|c| c.name == container);
            names.push(e.0);
            categories.push(mask(&mut subcommands::words(e.6)));
            parents.push(parent);
            subs.push(Vec::new());
            if let Some(p) = parent {
                subs[p].push(id);
            }
        }
        let mut top: Vec<usize> = (0..COMMANDS.len()).collect();
        top.sort_by_key(|&i| names[i]);
        let by_name = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let key_specs = names.iter().map(|n| key_flags::specs_of(n)).collect();
        CommandCatalog { names, parents, subs, top, categories, key_specs, by_name }
    })
}

impl Catalog for CommandCatalog {
    fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
    fn elsewhere(&self, name: &str) -> bool {
        REDIS_ONLY.contains(&name)
    }
    fn name(&self, id: usize) -> &str {
        self.names[id]
    }
    fn parent(&self, id: usize) -> Option<usize> {
        self.parents[id]
    }
    fn subcommands(&self, id: usize) -> &[usize] {
        &self.subs[id]
    }
    fn top_level(&self) -> &[usize] {
        &self.top
    }
    fn categories(&self) -> &[&'static str] {
        flags::CATEGORY_ORDER
    }
    fn in_category(&self, id: usize, category: &str) -> bool {
        flags::CATEGORY_ORDER
            .iter()
            .position(|c| *c == category)
            .is_some_and(|i| self.categories[id] & 1 << i != 0)
    }
    fn matches(&self, pattern: &[u8], s: &[u8]) -> bool {
        glob::matches(pattern, s)
    }
}

/// The id of what a command line runs: its listed subcommand's, or the command's.
fn line_id(cmd: &'static Command, args: &[Vec<u8>]) -> (usize, bool) {
    match subcommands::subcommand_of(cmd, args) {
        Some((i, _)) => (COMMANDS.len() + i, true),
        None => (index_of(cmd), false),
    }
}

/// What a command line asks of a user: its id, keys (each needs read permission when the
/// command reads its data and write permission when it changes it, by its key-spec flags:
/// `key_flags`; with neither, only a pattern that matches it) and channels
/// (PUBLISH's and SPUBLISH's channel, SUBSCRIBE's and SSUBSCRIBE's, PSUBSCRIBE's patterns).
pub fn line<'a>(cmd: &'static Command, args: &'a [Vec<u8>]) -> Line<'a> {
    let (id, sub) = line_id(cmd, args);
    let mut keys = Vec::new();
    let mut channels = Vec::new();
    match cmd.name {
        "publish" | "spublish" => channels.push((1, args[1].as_slice(), false)),
        "subscribe" | "ssubscribe" | "psubscribe" => {
            let pattern = cmd.name == "psubscribe";
            channels
                .extend(args.iter().enumerate().skip(1).map(|(i, a)| (i, a.as_slice(), pattern)));
        }
        _ if cmd.keys.channels => {}
        _ => {
            let positions = cmd.keys.positions(args);
            let flags = keys_flags(cmd, args, positions.len());
            keys.extend(positions.into_iter().enumerate().map(|(n, i)| {
                // A line without key specs (a container's unknown subcommand) asks for both.
                let needs = flags.as_ref().map_or(READ | WRITE, |f| {
                    (if f[n].reads() { READ } else { 0 }) | if f[n].writes() { WRITE } else { 0 }
                });
                (i, args[i].as_slice(), needs)
            }));
        }
    }
    Line {
        id,
        no_auth: super::runs_unauthenticated(cmd.name),
        first_arg: args.get(if sub { 2 } else { 1 }).map(Vec::as_slice),
        keys,
        channels,
    }
}

/// The flags of each of the `keys` keys of the command line (`key_flags`, by its command's
/// or subcommand's key specs): ACL's checks and COMMAND GETKEYSANDFLAGS; `None` for a line
/// without key specs.
pub fn keys_flags(cmd: &'static Command, args: &[Vec<u8>], keys: usize) -> Option<Vec<KeyFlags>> {
    let id = line_id(cmd, args).0;
    let cat = catalog();
    key_flags::of_keys(cat.names[id], &cat.key_specs[id], args, keys)
}

/// Whether `user` may run the command line (`None`: a server-internal state, which may).
pub fn check_user(
    user: Option<&Arc<UserCell>>,
    cmd: &'static Command,
    args: &[Vec<u8>],
) -> Result<(), Denied> {
    let Some(user) = user else { return Ok(()) };
    if user.unrestricted() {
        return Ok(());
    }
    if user.gone() {
        return Err(Denied::Command);
    }
    let u = user.read();
    u.check(catalog(), &line(cmd, args))
}

/// Whether `user` may read every key while it runs the command line (SORT's BY and GET
/// patterns: `None`, a server-internal state, may).
pub fn reads_every_key(
    user: Option<&Arc<UserCell>>,
    cmd: &'static Command,
    args: &[Vec<u8>],
) -> bool {
    let Some(user) = user else { return true };
    user.unrestricted() || user.read().reaches_every_key(catalog(), &line(cmd, args), READ)
}

/// The full name of what a command line runs (`get`, `config|get`), as refusals name it.
fn full_name(cmd: &'static Command, args: &[Vec<u8>]) -> &'static str {
    catalog().names[line_id(cmd, args).0]
}

/// The reply to a command line a client's user may not run.
pub fn refusal_text(denied: Denied, cmd: &'static Command, args: &[Vec<u8>]) -> String {
    match denied {
        Denied::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            full_name(cmd, args)
        ),
        Denied::Key(_) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        Denied::Channel(_) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
    }
}

/// The reason EXEC gives for a queued command its user may no longer run.
pub fn exec_refusal_text(denied: Denied) -> String {
    let reason = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the \
         EXEC call. This command is no longer allowed for the following reason: {reason}"
    )
}

/// The reply to a script's call its user may not make.
pub fn script_refusal_text(denied: Denied) -> String {
    let why = match denied {
        Denied::Command => "can't run this command or subcommand",
        Denied::Key(_) => {
            "can't access at least one of the keys mentioned in the command arguments"
        }
        Denied::Channel(_) => "can't publish to the channel mentioned in the command",
    };
    format!("ERR The user executing the script {why}")
}

/// The name of `conn`'s user (`default` for a server-internal state).
pub fn user_name(conn: &Conn) -> Vec<u8> {
    conn.user.as_ref().map_or_else(|| DEFAULT_USER.to_vec(), |u| u.name.clone())
}

/// Records a refusal in ACL LOG; `client` is the connection whose CLIENT INFO line the entry
/// shows (a script's caller).
pub fn log_refusal(
    sh: &Shared,
    client: u64,
    username: Vec<u8>,
    denied: Denied,
    context: Context,
    cmd: &'static Command,
    args: &[Vec<u8>],
) {
    let (reason, object) = match denied {
        Denied::Command => (Reason::Command, full_name(cmd, args).as_bytes().to_vec()),
        Denied::Key(i) => (Reason::Key, args[i].clone()),
        Denied::Channel(i) => (Reason::Channel, args[i].clone()),
    };
    log(sh, client, reason, context, object, username);
}

/// Records a refusal in ACL LOG, now, with `client`'s CLIENT INFO line.
fn log(
    sh: &Shared,
    client: u64,
    reason: Reason,
    context: Context,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    sh.acl.log.add(Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        at_ms: crate::types::keyspace::now_ms(),
        client_info: super::server::client_info(sh, client).trim_end().to_string(),
    });
}

/// Authenticates `conn` as `name` with `password` (AUTH, HELLO AUTH): Redis's WRONGPASS
/// and an ACL LOG entry when refused.
pub fn authenticate(
    sh: &Shared,
    conn: &mut Conn,
    name: &[u8],
    password: &[u8],
    command: &[u8],
) -> Result<(), CmdError> {
    match sh.acl.authenticate(name, password) {
        Some(user) => {
            if let Some(e) = sh.clients.lock().get_mut(&conn.id) {
                e.user = Some(user.clone());
            }
            conn.user = Some(user);
            conn.authed = true;
            Ok(())
        }
        None => {
            let context = if conn.multi.is_some() { Context::Multi } else { Context::Toplevel };
            log(sh, conn.id, Reason::Auth, context, command.to_vec(), name.to_vec());
            Err("WRONGPASS invalid username-password pair or user is disabled.".into())
        }
    }
}

/// The connections authenticated as one of `cells` (as the default user, also those that
/// never authenticated): the cells, not their names, so a user of the same name made since
/// is another's.
fn connections_of(sh: &Shared, cells: &[Arc<UserCell>]) -> Vec<u64> {
    let default_too = cells.iter().any(|c| c.name == DEFAULT_USER);
    let matches = |u: &Option<Arc<UserCell>>| {
        u.as_ref().map_or(default_too, |u| cells.iter().any(|c| Arc::ptr_eq(c, u)))
    };
    sh.clients.lock().iter().filter(|(_, e)| matches(&e.user)).map(|(&id, _)| id).collect()
}

/// Closes connections `ids`: `conn` after this command's reply, the others now.
fn close(sh: &Shared, conn: &mut Conn, ids: impl IntoIterator<Item = u64>) {
    for id in ids {
        if id == conn.id {
            conn.close = true;
        } else {
            super::client_kill::end_other(sh, id);
        }
    }
}

/// Closes the connections of `cell`'s user that are subscribed to a channel or pattern the
/// user may no longer use (Redis's rule after ACL SETUSER).
fn close_revoked_subscribers(sh: &Shared, conn: &mut Conn, cell: &Arc<UserCell>) {
    let revoked: std::collections::BTreeSet<u64> = {
        let user = cell.read();
        if user.selectors.iter().any(crate::acl::Selector::all_channels) {
            return;
        }
        let ids = connections_of(sh, std::slice::from_ref(cell)).into_iter().collect();
        let cat = catalog();
        sh.pubsub
            .subscriptions_of(&ids)
            .into_iter()
            .filter(|(_, kind, ch)| {
                !user.allows_channel(cat, ch, *kind == crate::pubsub::Kind::Pattern)
            })
            .map(|(id, _, _)| id)
            .collect()
    };
    close(sh, conn, revoked);
}

/// ACL.
pub fn acl(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    if is(sub, "setuser") {
        let (cell, existed) =
            sh.acl.set_user(catalog(), &a[2], &a[3..]).map_err(|e| format!("ERR {e}"))?;
        out.ok();
        if existed {
            close_revoked_subscribers(sh, c, &cell);
        }
    } else if is(sub, "deluser") {
        if a[2..].iter().any(|n| n == DEFAULT_USER) {
            return Err("ERR The 'default' user cannot be removed".into());
        }
        let gone = sh.acl.delete(&a[2..]);
        out.int(gone.len() as i64);
        close(sh, c, connections_of(sh, &gone));
    } else if is(sub, "getuser") {
        let Some(cell) = sh.acl.get(&a[2]) else {
            out.null();
            return Ok(());
        };
        getuser(&cell.read(), out);
    } else if is(sub, "users") || is(sub, "list") {
        let users = sh.acl.all();
        out.array(users.len());
        for cell in users {
            if is(sub, "users") {
                out.bulk(&cell.name);
            } else {
                out.bulk(&list_line(&cell.name, &cell.read()));
            }
        }
    } else if is(sub, "whoami") {
        out.bulk(&user_name(c));
    } else if is(sub, "cat") {
        cat(a, out)?;
    } else if is(sub, "genpass") {
        genpass(a, out)?;
    } else if is(sub, "log") {
        acl_log(sh, a, out)?;
    } else if is(sub, "dryrun") {
        dryrun(sh, a, out)?;
    } else if is(sub, "save") || is(sub, "load") {
        let file = sh.params.read().get("aclfile").cloned().unwrap_or_default();
        if file.is_empty() {
            return Err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.".into());
        }
        if is(sub, "save") {
            save_file(sh, &file).map_err(|e| {
                eprintln!("strata-server: ACL SAVE to {file}: {e}");
                CmdError::from("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
            })?;
        } else {
            let gone = load_file(sh, &file).map_err(|e| format!("ERR {e}"))?;
            close(sh, c, connections_of(sh, &gone));
        }
        out.ok();
    } else if is(sub, "help") {
        super::args::reply_help(out, &HELP);
    } else {
        return Err(super::errors::unknown_subcommand(a));
    }
    Ok(())
}

const HELP: [&str; 29] = [
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

/// ACL LIST's line of a user (and the ACL file's).
fn list_line(name: &[u8], user: &User) -> Vec<u8> {
    let mut line = b"user ".to_vec();
    line.extend_from_slice(name);
    line.push(b' ');
    line.extend_from_slice(&user.describe(catalog()));
    line
}

fn getuser(u: &User, out: &mut Out) {
    let describe = |s: &crate::acl::Selector, out: &mut Out| {
        out.bulk(b"commands");
        out.bulk(crate::acl::describe::command_rules(s, catalog()).as_bytes());
        out.bulk(b"keys");
        out.bulk(&s.describe_keys());
        out.bulk(b"channels");
        out.bulk(&s.describe_channels());
    };
    out.map(6);
    out.bulk(b"flags");
    let flags = u.flags();
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(u.passwords.len());
    for p in &u.passwords {
        out.bulk(p.as_bytes());
    }
    describe(&u.selectors[0], out);
    out.bulk(b"selectors");
    out.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        out.map(3);
        describe(s, out);
    }
}

fn cat(a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        return Err(super::errors::subcommand_syntax(a));
    }
    let Some(category) = a.get(2) else {
        out.array(flags::CATEGORY_ORDER.len());
        for c in flags::CATEGORY_ORDER {
            out.bulk(c.as_bytes());
        }
        return Ok(());
    };
    let name = String::from_utf8_lossy(category).to_ascii_lowercase();
    if !flags::CATEGORY_ORDER.contains(&name.as_str()) {
        let shown: String = String::from_utf8_lossy(category).chars().take(128).collect();
        return Err(format!("ERR Unknown category '{shown}'").into());
    }
    let cat = catalog();
    let ids: Vec<usize> =
        crate::acl::every_id(cat).filter(|&id| cat.in_category(id, &name)).collect();
    out.array(ids.len());
    for id in ids {
        out.bulk(cat.name(id).as_bytes());
    }
    Ok(())
}

fn genpass(a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    const MAX_BITS: i64 = 4096;
    if a.len() > 3 {
        return Err(super::errors::subcommand_syntax(a));
    }
    let bits = match a.get(2) {
        Some(b) => parse_int_strict(b).ok_or(CmdError::from(super::errors::NOT_INT))?,
        None => 256,
    };
    if bits <= 0 || bits > MAX_BITS {
        return Err(format!("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {MAX_BITS}").into());
    }
    use rand::Rng;
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut rng = rand::rngs::OsRng;
    let pass: Vec<u8> =
        (0..(bits as usize).div_ceil(4)).map(|_| DIGITS[rng.gen_range(0..16)]).collect();
    out.bulk(&pass);
    Ok(())
}

fn acl_log(sh: &Shared, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if a.len() > 3 {
        return Err(super::errors::subcommand_syntax(a));
    }
    let mut count = 10;
    if let Some(arg) = a.get(2) {
        if is(arg, "reset") {
            sh.acl.log.clear();
            out.ok();
            return Ok(());
        }
        count = parse_int_strict(arg).ok_or(CmdError::from(super::errors::NOT_INT))?.max(0);
    }
    let entries = sh.acl.log.newest(count as usize);
    let now = crate::types::keyspace::now_ms();
    out.array(entries.len());
    for e in entries {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(&e.username);
        out.bulk(b"age-seconds");
        out.double(now.saturating_sub(e.at_ms) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

fn dryrun(sh: &Shared, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let Some(cell) = sh.acl.get(&a[2]) else {
        return Err(format!("ERR User '{}' not found", String::from_utf8_lossy(&a[2])).into());
    };
    let line = &a[3..];
    let Some(cmd) = super::find(sh, &line[0]) else {
        return Err(format!("ERR Command '{}' not found", String::from_utf8_lossy(&line[0])).into());
    };
    if let Some(e) = super::arity_error(cmd, line) {
        return Err(e.into());
    }
    let denied = cell.read().check(catalog(), &self::line(cmd, line));
    match denied {
        Ok(()) => out.ok(),
        Err(d) => {
            let text = match d {
                Denied::Command => format!(
                    "This user has no permissions to run the '{}' command",
                    full_name(cmd, line)
                ),
                Denied::Key(i) => format!(
                    "This user has no permissions to access the '{}' key",
                    String::from_utf8_lossy(&line[i])
                ),
                Denied::Channel(i) => format!(
                    "This user has no permissions to access the '{}' channel",
                    String::from_utf8_lossy(&line[i])
                ),
            };
            out.bulk(text.as_bytes());
        }
    }
    Ok(())
}

/// Writes every user to the ACL file `path`: a new file written and synced
/// (`strata::env::write_file_synced`), renamed over the old one, the directory synced.
fn save_file(sh: &Shared, path: &str) -> strata::Result<()> {
    let mut text = Vec::new();
    for cell in sh.acl.all() {
        text.extend_from_slice(&list_line(&cell.name, &cell.read()));
        text.push(b'\n');
    }
    strata::env::replace_file_synced(&strata::env::OsFs, std::path::Path::new(path), &text)
}

/// Every user as a configuration file's `user` directive has it (the text after `user`), in
/// ACL LIST's order and form: what CONFIG REWRITE writes.
pub fn config_lines(sh: &Shared) -> Vec<String> {
    sh.acl
        .all()
        .iter()
        .map(|cell| {
            let line = list_line(&cell.name, &cell.read());
            String::from_utf8_lossy(line.strip_prefix(b"user ").unwrap_or(&line)).into_owned()
        })
        .collect()
}

/// Reads the ACL file `path` and replaces the users by its users (all or none): the cells
/// of the users it removed, or Redis's error text.
pub fn load_file(sh: &Shared, path: &str) -> Result<Vec<Arc<UserCell>>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{path}': {e}"))?;
    let lines: Vec<(usize, Vec<Vec<u8>>)> = text
        .split(|&c| c == b'\n')
        .enumerate()
        .map(|(i, l)| {
            let l = l.trim_ascii();
            let words = l.split(|&c| c == b' ').map(|w| w.trim_ascii().to_vec()).collect();
            (i + 1, if l.is_empty() { Vec::new() } else { words })
        })
        .collect();
    let users = sh.acl.parse_lines(catalog(), path, &lines)?;
    Ok(sh.acl.replace_all(users))
}

/// Installs the users of a configuration file's `user` directives and `--user` flags (each
/// the text after `user`, split as Redis splits a configuration line), at start; Redis's
/// errors if any, or the directive whose quotes do not balance.
pub fn load_configured(sh: &Shared, directives: &[String]) -> Result<(), String> {
    let mut lines = Vec::new();
    for (i, d) in directives.iter().enumerate() {
        let words = crate::resp::args::split_args(d.as_bytes())
            .ok_or_else(|| format!("user directive {}: unbalanced quotes: `{d}`", i + 1))?;
        lines.push((i + 1, [vec![b"user".to_vec()], words].concat()));
    }
    for (name, user) in sh.acl.parse_lines(catalog(), "config", &lines)? {
        sh.acl.store(&name, user);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::selector::MAX_IDS;

    #[test]
    fn the_catalog_fits_a_selector_and_names_every_command_and_subcommand() {
        let cat = catalog();
        assert!(cat.names.len() < MAX_IDS, "{} ids", cat.names.len());
        assert_eq!(cat.id("get"), Some(index_of(super::super::lookup(b"get").unwrap())));
        let config = cat.id("config").unwrap();
        let get = cat.id("config|get").unwrap();
        assert_eq!(cat.parent(get), Some(config));
        assert!(cat.subcommands(config).contains(&get));
        assert!(cat.in_category(cat.id("set").unwrap(), "write"));
        assert!(!cat.in_category(cat.id("get").unwrap(), "write"));
        assert!(cat.in_category(get, "admin") || cat.in_category(get, "slow"));
    }
}
