//! FUNCTION (LOAD, DELETE, FLUSH, LIST, STATS, KILL, HELP) and FCALL, FCALL_RO: Lua
//! libraries (`script::library`) run as EVAL runs scripts (`scripting::atomically`).
//!
//! A loaded library is kept in the store's `server` family (`function\0<name>` -> its code,
//! written synced before FUNCTION LOAD replies) and loaded again when the server starts
//! ([`restore`]), as Redis keeps functions in its RDB and AOF. FUNCTION DUMP and RESTORE
//! carry the libraries in Redis's payload format (`types::rdb`).

use super::args::is;
use super::errors::CmdError;
use super::scripting::{atomically, keys_and_args};
use super::CmdResult;
use crate::resp::Out;
use crate::script::library::library_name;
use crate::script::KillRefused;
use crate::state::{Conn, Shared};
use crate::types::rdb::{self, FunctionsError};

/// The prefix of a library's record in the `server` family.
const RECORD_PREFIX: &[u8] = b"function\0";

fn record_key(name: &str) -> Vec<u8> {
    let mut k = RECORD_PREFIX.to_vec();
    k.extend_from_slice(name.as_bytes());
    k
}

/// Loads the libraries kept in the store (at start): how many, or why one failed.
pub fn restore(sh: &Shared) -> Result<usize, String> {
    let records = sh
        .engine()
        .server_records(RECORD_PREFIX)
        .map_err(|e| format!("cannot read the FUNCTION libraries: {e}"))?;
    for (key, code) in &records {
        sh.scripts.load_library(code, true).map_err(|e| {
            format!(
                "the FUNCTION library {:?} kept in the store does not load: {e}",
                String::from_utf8_lossy(&key[RECORD_PREFIX.len()..])
            )
        })?;
    }
    Ok(records.len())
}

fn store_err(e: strata::Error) -> CmdError {
    CmdError::from(format!("ERR cannot keep the FUNCTION libraries: {e}"))
}

/// FUNCTION <subcommand> ...
pub fn function(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    let wrong =
        || CmdError::from(format!("ERR wrong number of arguments for 'function|{sub}' command"));
    match sub.as_str() {
        "load" => {
            let (replace, code) = match a.len() {
                3 => (false, &a[2]),
                4 if is(&a[2], "replace") => (true, &a[3]),
                4 => {
                    return Err(format!(
                        "ERR Unknown option given: {}",
                        String::from_utf8_lossy(&a[2])
                    )
                    .into())
                }
                n if n < 3 => return Err(wrong()),
                _ => return Err("ERR Unknown option given: too many arguments".into()),
            };
            let name = sh.scripts.load_library(code, replace).map_err(CmdError::from)?;
            if let Err(e) =
                sh.engine().write_server_records(&[(record_key(&name), Some(code.clone()))])
            {
                sh.scripts.delete_library(&name);
                return Err(store_err(e));
            }
            out.bulk(name.as_bytes());
        }
        "delete" => {
            if a.len() != 3 {
                return Err(wrong());
            }
            let name = String::from_utf8_lossy(&a[2]).into_owned();
            if !sh.scripts.delete_library(&name) {
                return Err("ERR Library not found".into());
            }
            sh.engine().write_server_records(&[(record_key(&name), None)]).map_err(store_err)?;
            out.ok();
        }
        "flush" => {
            if a.len() > 3 {
                return Err(super::errors::subcommand_syntax(a));
            }
            if a.len() == 3 && !is(&a[2], "sync") && !is(&a[2], "async") {
                return Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into());
            }
            let gone: Vec<_> =
                sh.scripts.libraries().iter().map(|l| (record_key(&l.name), None)).collect();
            sh.scripts.flush_libraries();
            sh.engine().write_server_records(&gone).map_err(store_err)?;
            out.ok();
        }
        "list" => list(sh, a, out)?,
        "kill" => match sh.scripts.kill() {
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
        },
        "stats" => {
            let libs = sh.scripts.libraries();
            out.map(2);
            out.bulk(b"running_script");
            match sh.scripts.running() {
                Some((name, line, ms)) => {
                    out.map(3);
                    out.bulk(b"name");
                    out.bulk(name.as_bytes());
                    out.bulk(b"command");
                    out.array(line.len());
                    for arg in &line {
                        out.bulk(arg);
                    }
                    out.bulk(b"duration_ms");
                    out.int(ms as i64);
                }
                None => out.null(),
            }
            out.bulk(b"engines");
            out.map(1);
            out.bulk(b"LUA");
            out.map(2);
            out.bulk(b"libraries_count");
            out.int(libs.len() as i64);
            out.bulk(b"functions_count");
            out.int(libs.iter().map(|l| l.functions.len()).sum::<usize>() as i64);
        }
        "dump" => {
            if a.len() != 2 {
                return Err(wrong());
            }
            let libs = sh.scripts.libraries();
            out.bulk(&rdb::encode_functions(libs.iter().map(|l| l.code.as_slice())));
        }
        "restore" => {
            if a.len() < 3 {
                return Err(wrong());
            }
            if a.len() > 4 {
                return Err(super::errors::subcommand_syntax(a));
            }
            let policy = match a.get(3) {
                None => Policy::Append,
                Some(p) if is(p, "append") => Policy::Append,
                Some(p) if is(p, "replace") => Policy::Replace,
                Some(p) if is(p, "flush") => Policy::Flush,
                Some(_) => {
                    return Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.".into())
                }
            };
            let codes = rdb::decode_functions(&a[2]).map_err(|e| {
                CmdError::from(match e {
                    FunctionsError::VersionOrChecksum => {
                        "ERR DUMP payload version or checksum are wrong".to_string()
                    }
                    FunctionsError::NotAFunction => "ERR given type is not a function".to_string(),
                    FunctionsError::Unreadable(what) => format!("ERR {what}"),
                })
            })?;
            restore_libraries(sh, &codes, policy)?;
            out.ok();
        }
        "help" if a.len() == 2 => {
            let help = [
                "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "LOAD [REPLACE] <FUNCTION CODE>",
                "DELETE <LIBRARY NAME>",
                "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                "FLUSH [ASYNC|SYNC]",
                "DUMP",
                "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
                "STATS",
                "KILL",
                "HELP",
            ];
            super::args::reply_help(out, &help);
        }
        _ => return Err(super::errors::unknown_subcommand(a)),
    }
    Ok(())
}

/// What FUNCTION RESTORE does with the libraries there are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Adds the payload's libraries; a name already loaded refuses the whole payload.
    Append,
    /// Adds them, replacing libraries of the same names.
    Replace,
    /// Drops every library first.
    Flush,
}

/// The function libraries replaced by `codes`, all or none (a replica's full sync: the
/// master's libraries and no others).
pub fn replace_all(sh: &Shared, codes: &[Vec<u8>]) -> Result<(), String> {
    restore_libraries(sh, codes, Policy::Flush).map_err(|e| e.reply_text().into_owned())
}

/// FUNCTION RESTORE: loads the libraries of `codes` under `policy`, all or none (on an error
/// every library there was is back as it was), then keeps the change in the store.
fn restore_libraries(sh: &Shared, codes: &[Vec<u8>], policy: Policy) -> Result<(), CmdError> {
    let old = sh.scripts.libraries();
    let mut names = Vec::with_capacity(codes.len());
    for code in codes {
        let name = library_name(code).map_err(CmdError::from)?;
        if names.contains(&name) {
            return Err(format!("ERR Library '{name}' already exists").into());
        }
        names.push(name);
    }
    let displaced: Vec<_> = match policy {
        Policy::Flush => old.clone(),
        Policy::Replace => old.iter().filter(|l| names.contains(&l.name)).cloned().collect(),
        Policy::Append => {
            if let Some(n) = names.iter().find(|n| old.iter().any(|l| &l.name == *n)) {
                return Err(format!("ERR Library {n} already exists").into());
            }
            Vec::new()
        }
    };
    for l in &displaced {
        sh.scripts.delete_library(&l.name);
    }
    let undo = |loaded: &[String]| {
        for n in loaded {
            sh.scripts.delete_library(n);
        }
        for l in &displaced {
            // It loaded before, beside the libraries that are still there.
            let _ = sh.scripts.load_library(&l.code, false);
        }
    };
    let mut loaded = Vec::with_capacity(codes.len());
    for code in codes {
        match sh.scripts.load_library(code, false) {
            Ok(name) => loaded.push(name),
            Err(e) => {
                undo(&loaded);
                return Err(e.into());
            }
        }
    }
    let mut records: Vec<_> = displaced.iter().map(|l| (record_key(&l.name), None)).collect();
    records.extend(loaded.iter().zip(codes).map(|(n, c)| (record_key(n), Some(c.clone()))));
    if let Err(e) = sh.engine().write_server_records(&records) {
        undo(&loaded);
        return Err(store_err(e));
    }
    Ok(())
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
fn list(sh: &Shared, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut pattern, mut with_code) = (None, false);
    let mut i = 2;
    while i < a.len() {
        if is(&a[i], "withcode") && !with_code {
            with_code = true;
            i += 1;
        } else if is(&a[i], "libraryname") && pattern.is_none() {
            let p =
                a.get(i + 1).ok_or(CmdError::from("ERR library name argument was not given"))?;
            pattern = Some(p.clone());
            i += 2;
        } else {
            return Err(format!("ERR Unknown argument {}", String::from_utf8_lossy(&a[i])).into());
        }
    }
    let libs: Vec<_> = sh
        .scripts
        .libraries()
        .into_iter()
        .filter(|l| pattern.as_ref().is_none_or(|p| super::glob::matches(p, l.name.as_bytes())))
        .collect();
    out.array(libs.len());
    for l in &libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(l.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(l.functions.len());
        for f in &l.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            out.opt_bulk(f.description.as_deref().map(str::as_bytes));
            out.bulk(b"flags");
            out.set(f.flags.len());
            for fl in &f.flags {
                out.bulk(fl.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&l.code);
        }
    }
    Ok(())
}

fn fcall_with(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], ro: bool, out: &mut Out) -> CmdResult {
    let name = String::from_utf8_lossy(&a[1]).into_owned();
    // FCALL's text for a count that is no number (EVAL's is the integer error).
    if crate::types::number::parse_int_strict(&a[2]).is_none() {
        return Err("ERR Bad number of keys provided".into());
    }
    let (keys, args) = keys_and_args(a)?;
    let f = sh.scripts.function(&name).ok_or(CmdError::from("ERR Function not found"))?;
    if ro && !f.no_writes() {
        return Err("ERR Can not execute a script with write flag using *_ro command.".into());
    }
    if !f.no_writes() && sh.lacks_good_replicas() {
        return Err(super::NOREPLICAS.into());
    }
    if !f.no_writes() && !ro && !conn.master && super::read_only_replica(sh) {
        return Err(super::READONLY_SCRIPT.into());
    }
    if !f.allow_stale() && !conn.master && super::stale_replica(sh) {
        return Err(super::MASTERDOWN.into());
    }
    atomically(sh, conn, keys, (ro || f.no_writes(), f.allow_oom()), out, |host, body| {
        sh.scripts.note_running(&name, a);
        sh.scripts.call_function(&name, keys, args, host, body);
    })
}

/// FCALL function numkeys [key ...] [arg ...]
pub fn fcall(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    fcall_with(sh, conn, a, false, out)
}

/// FCALL_RO function numkeys [key ...] [arg ...]
pub fn fcall_ro(sh: &Shared, conn: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    fcall_with(sh, conn, a, true, out)
}
