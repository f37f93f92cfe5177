//! The replica's handshake with its master, in redis-server 7.0's order: PING, AUTH (when
//! `masterauth` is set), REPLCONF listening-port and capa, PSYNC.

use std::sync::atomic::Ordering;

use super::wire::Wire;
use super::LinkError;
use crate::master_link::LinkState;
use crate::state::Shared;

/// What PSYNC settled.
#[derive(Debug, PartialEq, Eq)]
pub enum Sync {
    /// The whole dataset comes next, taken at the master's `offset` of stream `replid`.
    Full { replid: String, offset: i64 },
    /// The stream resumes after the offset the link applied; `replid`: the master's new id,
    /// when it changed.
    Continue { replid: Option<String> },
}

/// Runs the handshake on `wire`; the master's answer to PSYNC.
pub fn run(sh: &Shared, link: &LinkState, wire: &mut Wire) -> Result<Sync, LinkError> {
    wire.send(&[b"PING"])?;
    let pong = wire.line()?;
    // A master that wants a password answers PING with NOAUTH; AUTH follows then.
    let refused_ping = pong.starts_with("-NOAUTH") || pong.starts_with("-NOPERM");
    if !pong.starts_with('+') && !refused_ping {
        return Err(LinkError::Failed(format!("the master answered PING with {pong:?}")));
    }
    let (user, pass) = {
        let p = sh.params.read();
        (
            p.get("masteruser").cloned().unwrap_or_default(),
            p.get("masterauth").cloned().unwrap_or_default(),
        )
    };
    if !pass.is_empty() {
        if user.is_empty() {
            wire.send(&[b"AUTH", pass.as_bytes()])?;
        } else {
            wire.send(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?;
        }
        let ok = wire.line()?;
        if !ok.starts_with('+') {
            return Err(LinkError::Failed(format!("unable to AUTH to the master: {ok}")));
        }
    } else if refused_ping {
        return Err(LinkError::Failed(format!(
            "the master wants a password ({pong}); set masterauth"
        )));
    }
    let port = sh.port.load(Ordering::Relaxed).to_string();
    wire.send(&[b"REPLCONF", b"listening-port", port.as_bytes()])?;
    // Redis goes on whatever these two answer (an old master knows neither).
    let _ = wire.line()?;
    wire.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?;
    let _ = wire.line()?;
    // Read once nothing more is added to the stream: under the gate, a link stopped for
    // this one adds nothing; under every key lock, no write this server took as a master
    // is still to be added (a later one finds the server following, and is local).
    let (replid, offset) = {
        let _gate = sh.engine().backlog.gate();
        let _all = sh.engine().locks.lock_all();
        resume_point(sh)
    };
    let next = if offset >= 0 { (offset + 1).to_string() } else { "-1".into() };
    if link.failover.load(Ordering::Acquire) {
        // A failover's: the replica taking over becomes a master first (`commands::failover`).
        wire.send(&[b"PSYNC", replid.as_bytes(), next.as_bytes(), b"FAILOVER"])?;
    } else {
        wire.send(&[b"PSYNC", replid.as_bytes(), next.as_bytes()])?;
    }
    parse_psync_reply(&wire.line()?)
}

/// What PSYNC asks for: this server's own stream and its end (`storage::backlog`), whether it
/// followed a master before (the master's stream, as it came) or was a master itself (a
/// failover: the new master knows this stream as its second id); or `?` and -1 for a full
/// sync when the stream is off (it never had a replica nor followed a master since it
/// started, so its end does not count its writes). Under the second id while nothing was
/// added since the shift that made it the second (the same bytes under either name): a
/// server restarted as a master, or promoted, that follows its old master again before it
/// wrote resumes there, where that master knows only the second.
fn resume_point(sh: &Shared) -> (String, i64) {
    let backlog = &sh.engine().backlog;
    if !backlog.is_active() {
        return ("?".into(), -1);
    }
    let end = backlog.offset();
    let id = match backlog.replid2() {
        Some((second_id, second)) if end < second => second_id,
        _ => backlog.replid(),
    };
    (id, end as i64)
}

/// The master's answer to PSYNC.
fn parse_psync_reply(line: &str) -> Result<Sync, LinkError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["+FULLRESYNC", id, offset] => {
            let offset = offset.parse::<i64>().map_err(|_| {
                LinkError::Failed(format!("FULLRESYNC with an offset that is no number: {line:?}"))
            })?;
            Ok(Sync::Full { replid: (*id).to_string(), offset })
        }
        ["+CONTINUE"] => Ok(Sync::Continue { replid: None }),
        ["+CONTINUE", id] => Ok(Sync::Continue { replid: Some((*id).to_string()) }),
        _ => Err(LinkError::Failed(format!("the master answered PSYNC with {line:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psync_replies_as_redis_sends_them() {
        assert_eq!(
            parse_psync_reply("+FULLRESYNC 0123456789abcdef0123456789abcdef01234567 1234").unwrap(),
            Sync::Full { replid: "0123456789abcdef0123456789abcdef01234567".into(), offset: 1234 }
        );
        assert_eq!(parse_psync_reply("+CONTINUE").unwrap(), Sync::Continue { replid: None });
        assert_eq!(
            parse_psync_reply("+CONTINUE abc").unwrap(),
            Sync::Continue { replid: Some("abc".into()) }
        );
        for bad in
            ["-NOMASTERLINK Can't SYNC while not connected with my master", "+FULLRESYNC x y"]
        {
            let Err(LinkError::Failed(e)) = parse_psync_reply(bad) else { panic!("{bad}") };
            assert!(e.contains(bad.split_whitespace().next().unwrap()), "{e}");
        }
    }
}
