//! CLIENT KILL: ends other connections (or, after its reply, this one), as Redis 7.0 does.
//!
//! Two forms. `CLIENT KILL ip:port` ends the connection from that address, this one
//! included, and answers `+OK` or `No such client`. `CLIENT KILL <filter> <value> ...` ends
//! every connection all its filters match and answers how many: `ID id`, `ADDR ip:port`,
//! `LADDR ip:port` (the server's end), `TYPE normal|pubsub|master|slave|replica` (a
//! connection subscribed to anything is `pubsub`; `master` is a replica's link to its master
//! (REPLICAOF), whose socket is shut: the link connects again and resumes; `slave` and
//! `replica` the connections of this server's replicas, after their SYNC or PSYNC: ended,
//! the replica connects again and resumes), `USER name` (the connections authenticated as
//! that ACL user; an unknown user is Redis's error) and `SKIPME yes|no` (whether this
//! connection is spared; yes unless said).
//!
//! Another connection is taken off the server's books at once (CLIENT LIST, its
//! subscriptions, its blocked wait), then its task is aborted, which closes its socket: a
//! command it is running ends at its next wait, as when its client goes away. This
//! connection closes after its reply.

use super::args::{int_arg, is};
use super::errors::SYNTAX;
use super::CmdResult;
use crate::blocked::Cancel;
use crate::config::ClientClass;
use crate::resp::Out;
use crate::state::{Conn, Shared};

/// Who CLIENT KILL ends.
#[derive(Default)]
struct Filter {
    id: Option<u64>,
    addr: Option<String>,
    laddr: Option<String>,
    /// TYPE.
    class: Option<ClientClass>,
    /// USER: CLIENT LIST's `user` of the connections wanted.
    user: Option<String>,
    skipme: bool,
}

/// The class `TYPE name` names, or Redis's error.
pub fn client_class(name: &[u8]) -> Result<ClientClass, String> {
    ClientClass::by_name(name)
        .ok_or_else(|| format!("ERR Unknown client type '{}'", String::from_utf8_lossy(name)))
}

/// Whether a connection is of class `k`, `master` saying whether it is the replication
/// link's client, `replica` whether it is a replica of this server's
/// ([`crate::replicas::Replicas::ids`]) and `subscribed` whether it is subscribed to anything
/// ([`crate::pubsub::PubSub::subscribed`]): `pubsub` when it is, `normal` when none.
pub fn of_class(k: ClientClass, master: bool, replica: bool, subscribed: bool) -> bool {
    match k {
        ClientClass::Normal => !subscribed && !master && !replica,
        ClientClass::Pubsub => subscribed,
        ClientClass::Master => master,
        ClientClass::Slave => replica,
    }
}

/// Parses the filter form's pairs (`a[2..]`).
fn parse(sh: &Shared, a: &[Vec<u8>]) -> Result<Filter, String> {
    let mut f = Filter { skipme: true, ..Filter::default() };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for pair in a[2..].chunks(2) {
        let [opt, val] = pair else { return Err(SYNTAX.into()) };
        if is(opt, "id") {
            let id = int_arg(val).ok().filter(|&id| id >= 1);
            let id = id.ok_or("ERR client-id should be greater than 0")?;
            f.id = Some(id as u64);
        } else if is(opt, "type") {
            f.class = Some(client_class(val)?);
        } else if is(opt, "addr") {
            f.addr = Some(text(val));
        } else if is(opt, "laddr") {
            f.laddr = Some(text(val));
        } else if is(opt, "user") {
            if sh.acl.get(val).is_none() {
                return Err(format!("ERR No such user '{}'", text(val)));
            }
            f.user = Some(text(val));
        } else if is(opt, "skipme") {
            if is(val, "yes") {
                f.skipme = true;
            } else if is(val, "no") {
                f.skipme = false;
            } else {
                return Err(SYNTAX.into());
            }
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok(f)
}

/// Takes another connection `id` off the server's books and aborts its task (module doc);
/// false when it is not on them (gone already).
pub fn end_other(sh: &Shared, id: u64) -> bool {
    let Some(e) = sh.clients.lock().remove(&id) else { return false };
    sh.stats.connected.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    sh.pubsub.drop_client(id);
    sh.blocked.cancel(id, Cancel::Gone);
    if let Some(task) = e.kill {
        task.abort();
    }
    if let Some(sock) = e.master_link {
        let _ = sock.shutdown(std::net::Shutdown::Both);
    }
    true
}

/// CLIENT KILL (`a[0]` is CLIENT, `a[1]` KILL).
pub fn kill(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let old_form = a.len() == 3;
    let f = if old_form {
        Filter { addr: Some(String::from_utf8_lossy(&a[2]).into_owned()), ..Filter::default() }
    } else {
        parse(sh, a)?
    };
    let subscribed = f.class.is_some().then(|| sh.pubsub.subscribed());
    let replicas = f.class.map(|_| sh.replicas.ids()).unwrap_or_default();
    let victims: Vec<u64> = {
        let clients = sh.clients.lock();
        clients
            .iter()
            .filter(|(&id, e)| {
                f.id.is_none_or(|want| want == id)
                    && f.addr.as_ref().is_none_or(|want| *want == e.addr)
                    && f.laddr.as_ref().is_none_or(|want| *want == e.laddr)
                    && f.user.as_ref().is_none_or(|want| {
                        e.user.as_ref().map_or(b"default".as_slice(), |u| &u.name)
                            == want.as_bytes()
                    })
                    && !(f.skipme && id == c.id)
                    && f.class.is_none_or(|k| {
                        let sub = subscribed.as_ref().is_some_and(|s| s.contains(&id));
                        of_class(k, e.master_link.is_some(), replicas.contains(&id), sub)
                    })
            })
            .map(|(&id, _)| id)
            .collect()
    };
    let mut killed = 0i64;
    for id in victims {
        if id == c.id {
            c.close = true;
        } else if !end_other(sh, id) {
            continue;
        }
        killed += 1;
    }
    if !old_form {
        out.int(killed);
    } else if killed == 0 {
        return Err("ERR No such client".into());
    } else {
        out.ok();
    }
    Ok(())
}
