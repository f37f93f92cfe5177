//! Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (LOAD, EXISTS, FLUSH, KILL,
//! HELP), on the Lua engine of [`crate::script`].
//!
//! A script is atomic as Redis's are: it runs holding every key-lock stripe (no other
//! writer, nor reader of several keys, runs meanwhile) and its commands' writes gather in
//! the thread's overlay, which its own reads see, written as one batch when it ends (as EXEC
//! does, `multi`): readers of one key elsewhere see all of its writes or none, and a crash
//! keeps all or none. A script inside EXEC runs under EXEC's locks and overlay instead.
//!
//! `redis.call` goes through [`dispatch`] on a connection state of the script's own, after
//! Redis's checks: commands scripts may not run (the blocking pops among them), unknown ones, wrong arities, writes from a read-only script
//! (EVAL_RO, EVALSHA_RO, `#!lua flags=no-writes`). Other clients wait for a running script
//! (on its locks) rather than being told BUSY.

use super::args::is;
use super::errors::CmdError;
use super::{blocking, dispatch, find, CmdResult};
use crate::resp::Out;
use crate::script::{Host, KillRefused};
use crate::state::{Conn, Shared};
use crate::storage::overlay;
use crate::types::number::parse_int_strict;

/// Redis's reply when a script names no cached script.
const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// Whether Redis 7.0 flags the command of `argv` (or its subcommand) `noscript`: refused
/// from scripts unless DEBUG SET-DISABLE-DENY-SCRIPTS lifted the rule, as Redis refuses it.
/// (BLMPOP and BZMPOP, and the containers' HELP, are not flagged: a script may call them.)
fn flagged_noscript(cmd: &'static super::Command, argv: &[Vec<u8>]) -> bool {
    super::flags::line_has(cmd, argv, "noscript")
        // CLUSTER's subcommands are not in the subcommand table; Redis flags RESET.
        || (cmd.name == "cluster" && argv.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"reset")))
}

/// Whether an XREAD or XREADGROUP line has a BLOCK option (with its value) before STREAMS:
/// refused from scripts, as Redis refuses it (blocking means nothing there).
fn asks_to_block(argv: &[Vec<u8>]) -> bool {
    let mut i = 1;
    while i < argv.len() {
        let o = &argv[i];
        let more = argv.len() - i - 1;
        if o.eq_ignore_ascii_case(b"streams") {
            return false;
        }
        if o.eq_ignore_ascii_case(b"block") && more > 0 {
            return true;
        }
        i += if o.eq_ignore_ascii_case(b"count") && more > 0 {
            2
        } else if o.eq_ignore_ascii_case(b"group") && more > 1 {
            3
        } else {
            1
        };
    }
    false
}

/// Whether `args` must be refused with BUSY: a script has run longer than
/// `busy-reply-threshold` and the command is not one Redis lets through then
/// ([`allowed_while_busy`]).
pub fn busy_refusal(sh: &Shared, cmd: &super::Command, args: &[Vec<u8>]) -> bool {
    let Some(ms) = sh.scripts.busy_ms() else { return false };
    ms >= busy_threshold_ms(sh) && !allowed_while_busy(sh, cmd, args)
}

/// The commands Redis serves while a script is busy: SCRIPT KILL, FUNCTION KILL and STATS,
/// SHUTDOWN NOSAVE, and the connection's own set-up (AUTH, HELLO...).
fn allowed_while_busy(sh: &Shared, cmd: &super::Command, args: &[Vec<u8>]) -> bool {
    let sub = |w: &str| args.get(1).is_some_and(|a| is(a, w));
    let function = sh.scripts.running_function();
    match cmd.name {
        // Each KILL stops its own kind of script only.
        "script" => sub("kill") && !function,
        "function" => (sub("kill") && function) || sub("stats"),
        "shutdown" => sub("nosave"),
        "auth" | "hello" | "quit" | "reset" | "multi" | "discard" | "watch" | "unwatch" => true,
        _ => false,
    }
}

/// `busy-reply-threshold` (milliseconds).
fn busy_threshold_ms(sh: &Shared) -> u128 {
    sh.params.read().get("busy-reply-threshold").and_then(|v| v.parse().ok()).unwrap_or(5000)
}

/// Whether command `name` runs a script (EVAL, EVALSHA, FCALL and their read-only forms).
pub fn runs_script(name: &str) -> bool {
    matches!(name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
}

/// Whether `cmd` with `args` may take key-lock stripes (the ones a running script holds): a
/// write, EXEC, or a command of several keys.
pub fn takes_stripes(cmd: &super::Command, args: &[Vec<u8>]) -> bool {
    cmd.write
        || cmd.name == "exec"
        || (cmd.keys.may_be_several() && cmd.keys.positions(args).len() > 1)
}

/// Until when a connection's command `args` waits, as a task, for the running script: one
/// that would wait for the script's key locks (a write, EXEC, a reader of several keys)
/// while the script is under `busy-reply-threshold`. Then it runs, and is refused with BUSY
/// if the script still runs (Redis's other clients wait for a script the same way). `None`:
/// no script runs, the threshold passed, or the command would not wait (a read of one key,
/// one served while a script is busy such as SCRIPT KILL, a command queued inside MULTI).
/// Another script waits on its own thread (`server::listener`).
pub fn waits_for_script(
    sh: &Shared,
    conn: &Conn,
    cmd: &super::Command,
    args: &[Vec<u8>],
) -> Option<std::time::Instant> {
    // A script that holds the stripes and has not started yet counts as just started.
    let ms = sh.scripts.busy_ms().or_else(|| sh.scripts.gate.holding().then_some(0))?;
    if conn.multi.is_some()
        || conn.in_exec
        || runs_script(cmd.name)
        || allowed_while_busy(sh, cmd, args)
    {
        return None;
    }
    let left =
        busy_threshold_ms(sh).checked_sub(ms).filter(|&l| l > 0 && takes_stripes(cmd, args))?;
    Some(std::time::Instant::now() + std::time::Duration::from_millis(left as u64))
}

/// Runs a script's commands: its own connection state, the checks, and what it wrote.
pub(super) struct ScriptHost<'a> {
    sh: &'a Shared,
    conn: Conn,
    read_only: bool,
    /// Every key its commands named (their cached metadata is dropped when the batch is
    /// written, as after EXEC).
    keys: Vec<Vec<u8>>,
    /// A FLUSHALL/FLUSHDB ran.
    wide: bool,
    /// The server was out of memory when the script started and its flags do not say
    /// `allow-oom`: its first `denyoom` call is refused unless it has written already
    /// (`commands::oom`, Redis's `scriptVerifyOOM`).
    oom_at_start: bool,
    /// It has called a write command.
    wrote: bool,
}

impl ScriptHost<'_> {
    /// Counts an error reply in INFO's error statistics (`errorstats`, `total_error_replies`).
    fn count_error(&self, reply: &str) {
        self.sh.stats.errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sh.stats.count_error(reply);
    }

    /// A call refused before it reaches the command: replied and counted, as the command's
    /// own errors are, and as a rejected call of `cmd` (INFO commandstats), as Redis counts
    /// its scripts' refused calls.
    fn refuse(&self, out: &mut Out, cmd: Option<&super::Command>, reply: &str) -> Vec<u8> {
        super::count_rejected(self.sh, cmd, reply);
        out.error(reply);
        std::mem::take(&mut out.buf)
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: &[Vec<u8>], resp3: bool) -> Vec<u8> {
        let mut out = Out { buf: Vec::new(), resp3 };
        let Some(cmd) = find(self.sh, &argv[0]) else {
            return self.refuse(&mut out, None, "ERR Unknown Redis command called from script");
        };
        if !cmd.arity_fits(argv.len()) {
            let reply = "ERR Wrong number of args calling Redis command from script";
            return self.refuse(&mut out, Some(cmd), reply);
        }
        if flagged_noscript(cmd, argv)
            && !self.sh.scripts_may_call_noscript.load(std::sync::atomic::Ordering::Relaxed)
        {
            let reply = "ERR This Redis command is not allowed from script";
            return self.refuse(&mut out, Some(cmd), reply);
        }
        if let Err(denied) = super::acl::check_user(self.conn.user.as_ref(), cmd, argv) {
            let user = self
                .conn
                .user
                .as_ref()
                .map_or_else(|| crate::acl::DEFAULT_USER.to_vec(), |u| u.name.clone());
            let context = crate::acl::log::Context::Lua;
            super::acl::log_refusal(self.sh, self.conn.id, user, denied, context, cmd, argv);
            return self.refuse(&mut out, Some(cmd), &super::acl::script_refusal_text(denied));
        }
        if matches!(cmd.name, "xread" | "xreadgroup") && asks_to_block(argv) {
            let name = String::from_utf8_lossy(&argv[0]);
            let reply = format!("ERR {name} command is not allowed with BLOCK option from scripts");
            return self.refuse(&mut out, Some(cmd), &reply);
        }
        // As Redis, a read-only script may not call what may be replicated either.
        if self.read_only && (cmd.write || super::flags::may_replicate(cmd.name)) {
            let reply = "ERR Write commands are not allowed from read-only scripts.";
            return self.refuse(&mut out, Some(cmd), reply);
        }
        if self.oom_at_start && !self.wrote && super::flags::line_has(cmd, argv, "denyoom") {
            return self.refuse(&mut out, Some(cmd), super::oom::OOM);
        }
        if cmd.write {
            if self.sh.lacks_good_replicas() {
                return self.refuse(&mut out, Some(cmd), super::NOREPLICAS);
            }
            // SCRIPT KILL answered OK before this first write: the write is not made (the
            // hook stops the script at its next look; a pcall of this error does not help).
            if !self.sh.scripts.note_write() {
                return self.refuse(&mut out, Some(cmd), crate::script::KILLED_REPLY);
            }
            self.wrote = true;
        }
        self.keys.extend(blocking::written_keys(cmd, argv));
        self.wide |= super::multi::spans_databases(cmd.name);
        self.conn.resp3 = resp3;
        dispatch(self.sh, &mut self.conn, argv, &mut out);
        out.buf
    }

    fn script_error(&mut self, reply: &str) {
        self.count_error(reply);
    }

    fn acl_check(&mut self, argv: &[Vec<u8>]) -> Result<bool, String> {
        let cmd = find(self.sh, &argv[0])
            .filter(|c| c.arity_fits(argv.len()))
            .ok_or("ERR Invalid command passed to redis.acl_check_cmd()")?;
        Ok(super::acl::check_user(self.conn.user.as_ref(), cmd, argv).is_ok())
    }
}

/// Ends this thread's overlay however the script leaves (an early return, a panic).
struct OverlayScope;

impl Drop for OverlayScope {
    fn drop(&mut self) {
        overlay::take();
    }
}

/// A script's keys and its other arguments.
pub(super) type KeysAndArgs<'a> = (&'a [Vec<u8>], &'a [Vec<u8>]);

/// `numkeys key ... arg ...` from index 2: the keys and the arguments.
pub(super) fn keys_and_args(a: &[Vec<u8>]) -> Result<KeysAndArgs<'_>, CmdError> {
    let n = parse_int_strict(&a[2]).ok_or(CmdError::from(super::errors::NOT_INT))?;
    if n < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let rest = &a[3..];
    if n as u64 > rest.len() as u64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    Ok(rest.split_at(n as usize))
}

fn run(
    sh: &Shared,
    conn: &mut Conn,
    a: &[Vec<u8>],
    by_sha: bool,
    ro: bool,
    out: &mut Out,
) -> CmdResult {
    let (keys, args) = keys_and_args(a)?;
    let sha = if by_sha {
        if a[1].len() != 40 || !sh.scripts.exists(&a[1]) {
            return Err(NOSCRIPT.into());
        }
        String::from_utf8_lossy(&a[1]).to_ascii_lowercase()
    } else {
        sh.scripts.load(&a[1]).map_err(CmdError::from)?
    };
    let flags = sh.scripts.flags(sha.as_bytes()).unwrap_or_default();
    // A script declared with a shebang may write unless it says `no-writes`: refused up
    // front, as a write command is (one without a shebang meets the check at its writes).
    if flags.shebang && !flags.no_writes && !ro && sh.lacks_good_replicas() {
        return Err(super::NOREPLICAS.into());
    }
    if flags.shebang && !flags.no_writes && !ro && !conn.master && super::read_only_replica(sh) {
        return Err(super::READONLY_SCRIPT.into());
    }
    // A stale replica runs only a script declared `allow-stale` (EVAL's compatibility mode,
    // without a shebang, never), as Redis.
    if !flags.allow_stale && !conn.master && super::stale_replica(sh) {
        return Err(super::MASTERDOWN.into());
    }
    atomically(sh, conn, keys, (ro || flags.no_writes, flags.allow_oom), out, |host, body| {
        sh.scripts.run(&sha, keys, args, host, body);
    })
}

/// Runs a script (`body` writes its reply) atomically: under every key-lock stripe and an
/// overlay written as one batch at its end, or inside EXEC under EXEC's; `keys` are its
/// declared keys; of `(read_only, allow_oom)`, the first refuses its writes, the second lets
/// it write over `maxmemory` (`commands::oom`).
pub(super) fn atomically(
    sh: &Shared,
    conn: &mut Conn,
    keys: &[Vec<u8>],
    (read_only, allow_oom): (bool, bool),
    out: &mut Out,
    body: impl FnOnce(&mut ScriptHost<'_>, &mut Out),
) -> CmdResult {
    let mut host = ScriptHost {
        sh,
        conn: Conn::new(conn.id, true),
        read_only,
        keys: keys.to_vec(),
        wide: false,
        oom_at_start: !allow_oom && sh.out_of_memory.load(std::sync::atomic::Ordering::Relaxed),
        wrote: false,
    };
    // Its calls run as its caller's user (checked in `call`, and by the commands that look at
    // the user themselves: SORT's BY and GET).
    host.conn.user.clone_from(&conn.user);
    host.conn.in_exec = true;
    host.conn.in_script = true;
    // It starts in its caller's database; its SELECTs change only its own (Redis 7).
    host.conn.db = conn.db;
    // A script may run long: the async worker's other tasks are handed off first (they
    // include the connections that must be told BUSY, and SCRIPT KILL's).
    crate::storage::pending::off_worker(|| -> CmdResult {
        // The clock stands still while it runs, as Redis's does for a script: a key that
        // expires during the run expires for it after the run.
        if conn.in_exec {
            // Inside EXEC: its locks and overlay hold the script's writes too.
            crate::types::keyspace::with_time_held(|| body(&mut host, out));
            return Ok(());
        }
        // Through the gate: no command is then between its look at running scripts and busy
        // stripes and the end of its run (`script::gate`).
        let _all = sh.scripts.hold_stripes(|| sh.engine().locks.lock_all());
        let _scope = OverlayScope;
        overlay::begin();
        let mut reply = Out { buf: Vec::new(), resp3: out.resp3 };
        crate::types::keyspace::with_time_held(|| body(&mut host, &mut reply));
        let named: Vec<&[u8]> = host.keys.iter().map(Vec::as_slice).collect();
        sh.dbs.store(conn.db).commit_overlay(&named, host.wide).map_err(|e| {
            crate::types::notify::discard();
            super::propagation::discard_gathered();
            crate::types::TypeError::from(e)
        })?;
        // Its writes go to the replicas as one transaction, under its locks.
        super::propagation::append_gathered(sh, conn);
        out.buf.extend_from_slice(&reply.buf);
        Ok(())
    })?;
    // The clients blocked on what the script wrote are served after it (`blocking`).
    conn.touched.extend(std::mem::take(&mut host.conn.touched));
    // Whether it read, for its caller's client-side caching (`client_tracking`).
    conn.script_read |= host.conn.script_read;
    if host.conn.db != conn.db {
        // Its SELECTs were its own: CLIENT LIST shows the caller's database again.
        if let Some(e) = sh.clients.lock().get_mut(&conn.id) {
            e.db = conn.db;
        }
    }
    Ok(())
}

/// EVAL script numkeys [key ...] [arg ...]
pub fn eval(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, conn, a, false, false, out)
}

/// EVALSHA sha1 numkeys [key ...] [arg ...]
pub fn evalsha(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, conn, a, true, false, out)
}

/// EVAL_RO script numkeys [key ...] [arg ...]
pub fn eval_ro(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, conn, a, false, true, out)
}

/// EVALSHA_RO sha1 numkeys [key ...] [arg ...]
pub fn evalsha_ro(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    run(sh, conn, a, true, true, out)
}

/// SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP
pub fn script(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    let wrong = || super::errors::subcommand_syntax(a);
    if is(sub, "help") && a.len() == 2 {
        let help = [
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Print this help.",
        ];
        super::args::reply_help(out, &help);
    } else if is(sub, "load") {
        if a.len() != 3 {
            return Err(wrong());
        }
        let sha = sh.scripts.load(&a[2]).map_err(CmdError::from)?;
        out.bulk(sha.as_bytes());
    } else if is(sub, "exists") {
        if a.len() < 3 {
            return Err(wrong());
        }
        out.array(a.len() - 2);
        for sha in &a[2..] {
            out.int(i64::from(sh.scripts.exists(sha)));
        }
    } else if is(sub, "flush") {
        match a.get(2) {
            None => {}
            Some(m) if a.len() == 3 && (is(m, "sync") || is(m, "async")) => {}
            Some(_) => return Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into()),
        }
        sh.scripts.flush().map_err(CmdError::from)?;
        out.ok();
    } else if is(sub, "kill") {
        if a.len() != 2 {
            return Err(wrong());
        }
        match sh.scripts.kill() {
            Ok(()) => out.ok(),
            Err(KillRefused::NotBusy) => {
                return Err("NOTBUSY No scripts in execution right now.".into())
            }
            Err(KillRefused::Unkillable) => {
                return Err("UNKILLABLE Sorry the script already executed write commands against \
                            the dataset. You can either wait the script termination or kill the \
                            server in a hard way using the SHUTDOWN NOSAVE command."
                    .into())
            }
        }
    } else {
        return Err(wrong());
    }
    Ok(())
}

/// Whether the script `cmd` would run with `args` is refused over `maxmemory` by its
/// declared flags (`script::Flags::denies_oom`; a function: neither `allow-oom` nor
/// `no-writes`). An unknown sha or function: no (the command's own error follows).
pub fn declares_denyoom(sh: &Shared, cmd: &super::Command, args: &[Vec<u8>]) -> bool {
    let Some(arg) = args.get(1) else { return false };
    match cmd.name {
        "eval" | "eval_ro" => crate::script::declared_flags(arg).denies_oom(),
        "evalsha" | "evalsha_ro" => sh.scripts.flags(arg).is_some_and(|f| f.denies_oom()),
        "fcall" | "fcall_ro" => sh
            .scripts
            .function(&String::from_utf8_lossy(arg))
            .is_some_and(|f| !f.allow_oom() && !f.no_writes()),
        _ => false,
    }
}

/// Whether the script `name` (EVAL, EVALSHA or FCALL) would run with `args` declares
/// `no-writes`: EVAL's by its body's `#!lua` line, EVALSHA's by the cached script's (an
/// unknown sha: no), FCALL's by the function's flags (an unknown function: no).
pub fn declares_no_writes(sh: &Shared, name: &str, args: &[Vec<u8>]) -> bool {
    let Some(arg) = args.get(1) else { return false };
    match name {
        "eval" => crate::script::declared_flags(arg).no_writes,
        "evalsha" => sh.scripts.flags(arg).is_some_and(|f| f.no_writes),
        "fcall" => {
            sh.scripts.function(&String::from_utf8_lossy(arg)).is_some_and(|f| f.no_writes())
        }
        _ => false,
    }
}
