//! MIGRATE: keys moved (with COPY, copied) to another Redis-protocol server, as redis-server
//! 7.0 moves them: `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password | AUTH2 username password] [KEYS key ...]`.
//!
//! The keys' stripes are locked for the whole move (no write to them lands between their
//! read and their deletion). Each key present is sent as `RESTORE key ttl payload [REPLACE]`
//! (DUMP's payload, the TTL left in milliseconds), after `AUTH` and `SELECT db`, in one write
//! on a new connection; then one reply line is read per command. A key the target restored
//! is deleted here unless COPY (`del` notified, as DEL does); the first error the target
//! answers is the reply (`ERR Target instance replied with error: ...`), the keys it took
//! are gone all the same, as in Redis. No key present: `NOKEY`. A connection that cannot be
//! made, written or read within `timeout` milliseconds (1000 when 0 or less): Redis's
//! `IOERR` texts. Unlike Redis, the connection is not kept for the next MIGRATE. In cluster
//! mode MIGRATE is refused: a slot's keys move between partitions with `strata-cluster
//! move-slots`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::args::{int_arg, is};
use super::errors::SYNTAX;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::rdb::{self, key};

/// What the options after the timeout ask.
#[derive(Default)]
struct Options<'a> {
    copy: bool,
    replace: bool,
    user: Option<&'a [u8]>,
    password: Option<&'a [u8]>,
}

/// Longest reply line read from the target.
const MAX_LINE: u64 = 64 << 10;

pub fn migrate(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    if sh.router.is_some() {
        return Err("ERR MIGRATE is not served in cluster mode: a slot's keys move between \
                    partitions with strata-cluster move-slots"
            .into());
    }
    let mut o = Options::default();
    let mut keys: &[Vec<u8>] = &a[3..4];
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(&a[j], "copy") {
            o.copy = true;
        } else if is(&a[j], "replace") {
            o.replace = true;
        } else if is(&a[j], "auth") && more >= 1 {
            o.password = Some(&a[j + 1]);
            j += 1;
        } else if is(&a[j], "auth2") && more >= 2 {
            o.user = Some(&a[j + 1]);
            o.password = Some(&a[j + 2]);
            j += 2;
        } else if is(&a[j], "keys") {
            if !a[3].is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set \
                            to the empty string"
                    .into());
            }
            keys = &a[j + 1..];
            break;
        } else {
            return Err(SYNTAX.into());
        }
        j += 1;
    }
    let timeout = int_arg(&a[5])?;
    let db = int_arg(&a[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout.unsigned_abs() });

    let ks = sh.keyspace(c.db);
    let _locked = ks.store.locks.lock(keys);
    let encodings = super::dump::encodings(sh);
    // The commands, encoded as a client sends them.
    let mut request = Out::default();
    let mut command = |args: &[&[u8]]| {
        request.array(args.len());
        for a in args {
            request.bulk(a);
        }
    };
    if let Some(pw) = o.password {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(o.user);
        auth.push(pw);
        command(&auth);
    }
    command(&[b"SELECT", db.to_string().as_bytes()]);
    let mut sent = Vec::new();
    for k in keys {
        let Some(meta) = ks.meta(k)? else { continue };
        let ttl = match meta.expire_ms {
            0 => 0,
            at if at <= ks.now_ms => continue,
            at => at - ks.now_ms,
        };
        let payload = rdb::encode_payload(&key::read_of(&ks, k, meta)?, &encodings);
        let ttl = ttl.to_string();
        let mut restore: Vec<&[u8]> = vec![b"RESTORE", k, ttl.as_bytes(), &payload];
        if o.replace {
            restore.push(b"REPLACE");
        }
        command(&restore);
        sent.push(k);
    }
    let request = request.buf;
    if sent.is_empty() {
        out.simple("NOKEY");
        return Ok(());
    }

    let Some(stream) = connect(&a[1], &a[2], timeout) else {
        return Err("IOERR error or timeout connecting to the client".into());
    };
    let written =
        stream.set_write_timeout(Some(timeout)).and_then(|()| (&stream).write_all(&request));
    if written.is_err() {
        return Err("IOERR error or timeout writing to target instance".into());
    }
    let _ = stream.set_read_timeout(Some(timeout));
    let mut replies = BufReader::new(&stream);
    let mut line = || -> Option<Vec<u8>> {
        let mut l = Vec::new();
        match (&mut replies).take(MAX_LINE).read_until(b'\n', &mut l) {
            Ok(n) if n > 0 && l.ends_with(b"\n") => Some(l),
            _ => None,
        }
    };
    // AUTH's and SELECT's replies: an error there is the target's first error.
    let mut target_error = None;
    for _ in 0..=usize::from(o.password.is_some()) {
        let Some(l) = line() else {
            return Err("IOERR error or timeout reading to target instance".into());
        };
        if target_error.is_none() && l.starts_with(b"-") {
            target_error = Some(l);
        }
    }
    let mut moved = Vec::new();
    let mut lost = false;
    for k in &sent {
        let Some(l) = line() else {
            lost = true;
            break;
        };
        if target_error.is_some() || l.starts_with(b"-") {
            target_error.get_or_insert(l);
        } else if !o.copy {
            moved.push((*k).clone());
        }
    }
    if !moved.is_empty() {
        crate::types::keys::delete(&ks, &moved)?;
        // Its replicas delete what it moved (they do not migrate it again).
        let mut words: Vec<&[u8]> = vec![b"DEL"];
        words.extend(moved.iter().map(Vec::as_slice));
        super::propagation::replace(c.db, &words);
    } else {
        crate::storage::propagated::replace_with_nothing();
    }
    if let Some(e) = target_error {
        let text = String::from_utf8_lossy(e.trim_ascii_end().strip_prefix(b"-").unwrap_or(&e));
        return Err(format!("ERR Target instance replied with error: {text}").into());
    }
    if lost {
        return Err("IOERR error or timeout reading to target instance".into());
    }
    out.ok();
    Ok(())
}

/// A connection to `host`:`port` made within `timeout`, or `None`.
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Option<TcpStream> {
    let host = std::str::from_utf8(host).ok()?;
    let port: u16 = std::str::from_utf8(port).ok()?.parse().ok()?;
    let addrs = (host, port).to_socket_addrs().ok()?;
    addrs.into_iter().find_map(|addr| TcpStream::connect_timeout(&addr, timeout).ok())
}
