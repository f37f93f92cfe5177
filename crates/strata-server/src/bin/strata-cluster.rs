//! `strata-cluster`: the controller of a strata-server cluster. It talks to any node over the
//! Redis protocol, sending the cluster map's commands (CLUSTER MAP, ADDNODE, REMOVENODE,
//! FORGETNODE, REBALANCE) to the node leading the meta group (following `REDIRECT`), and
//! reads every node's INFO cluster to tell how far the groups are from the map.
//!
//! ```text
//! strata-cluster [--node HOST:PORT] [--timeout SECONDS] COMMAND
//!   status                      the map, and each partition's leader, voters and state
//!   create ID=HOST:PORT:RAFT... forms a cluster: --node is a node started as a cluster of
//!            [--no-wait]        one (`--cluster-nodes` naming itself, `--cluster-bootstrap
//!                               yes`, the partitions and replicas wanted), the others were
//!                               started naming only themselves; adds them, spreads the
//!                               replicas (as many as the first node's cluster-replicas)
//!                               and waits until every partition has its replicas
//!   add-node ID HOST:PORT:RAFT  adds a node (started with cluster-nodes naming itself)
//!            [--rebalance] [--wait]
//!   remove-node ID [--wait]     moves the node's replicas away; with --wait, waits until it
//!                               holds nothing, drops it from the map (FORGETNODE) and
//!                               waits until the meta group no longer counts it (only
//!                               then may it stop)
//!   rebalance [--wait]          spreads replicas and preferred leaders over the nodes
//!   wait                        waits until every partition's voters are its placement
//!   move-slots [SLOTS] [--key K]... --to P
//!                               moves slots (`5`, `100-200`, `1,7,9-12`; the slots of keys K)
//!                               to partition P,
//!                               one at a time, while clients go on (writes to a slot wait
//!                               only for the last of its copy); a move a crash left half
//!                               done resumes
//!            [--abort]          undoes instead a move to P not yet handed off: the slot
//!                               stays where it was, what was copied is dropped
//!            [--stop-after S]   leaves each move after step S (import, copy or freeze), as
//!                               a controller that died there would (fault runs, drills)
//! ```
//!
//! A slot move, step by step (`cluster::ownership` in the server says why it is safe): the
//! target partition T starts importing; the source S starts recording the slot's writes in
//! its outbox and goes on serving it; its records are copied from S's leader to T's leader
//! in pages (`CLUSTER SLOTRECORDS`, `CLUSTER IMPORTRECORDS`), then the outbox
//! (`CLUSTER SLOTTAIL`, `CLUSTER IMPORTCHANGES`) until less than a page is left; S freezes
//! the slot (its writes wait), the rest of the outbox is copied, S hands the slot off (its
//! clients are sent to T with `ASK`), T adopts it, the map gives it to T (`MOVED`), and S
//! deletes its copy. So writes wait only for the last page or so of the outbox.
//!
//! With `--pass P` (and `--user U`), every connection to a node first authenticates (`AUTH
//! [U] P`), for nodes with `requirepass` or ACL users; the user needs CLUSTER and INFO.
//!
//! Exit status 0 when done, 1 when a command failed or a wait timed out (with the reason on
//! stderr), 2 for bad usage.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "strata-cluster", about = "Controls a strata-server cluster's map")]
struct Cli {
    /// Any node of the cluster (its client address).
    #[arg(long, default_value = "127.0.0.1:7001")]
    node: String,
    /// How long a wait (and the retries of a command) may take, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// The ACL user to authenticate as (with --pass; the default user without it).
    #[arg(long, requires = "pass")]
    user: Option<String>,
    /// The password every connection to a node authenticates with first.
    #[arg(long)]
    pass: Option<String>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prints the map and each partition's leader, voters and state.
    Status,
    /// Forms a cluster from a one-node cluster (--node) and nodes started naming only
    /// themselves.
    Create {
        /// The other nodes, each `ID=HOST:PORT:RAFT_PORT`.
        #[arg(required = true)]
        nodes: Vec<String>,
        /// Returns once the map names them, without waiting for the replicas to move.
        #[arg(long)]
        no_wait: bool,
    },
    /// Adds a node to the map.
    AddNode {
        /// Its id (a positive integer, unique in the cluster).
        id: u64,
        /// host:port:raft_port, as in cluster-nodes.
        addr: String,
        /// Rebalances after adding it.
        #[arg(long)]
        rebalance: bool,
        /// Waits until the groups have moved to the new map.
        #[arg(long)]
        wait: bool,
    },
    /// Moves a node's replicas away; with --wait, then drops it from the map.
    RemoveNode {
        /// Its id.
        id: u64,
        /// Waits until it holds nothing, drops it from the map (FORGETNODE), then waits until
        /// the meta group no longer counts it.
        #[arg(long)]
        wait: bool,
    },
    /// Spreads replicas and preferred leaders evenly over the active nodes.
    Rebalance {
        /// Waits until the groups have moved to the new map.
        #[arg(long)]
        wait: bool,
    },
    /// Waits until every partition's voters are its placement in the map.
    Wait,
    /// Moves slots to another partition, live.
    MoveSlots {
        /// The slots: `5`, `100-200` or a comma-separated list of both.
        slots: Option<String>,
        /// The slot of this key too (repeatable).
        #[arg(long = "key")]
        keys: Vec<String>,
        /// The partition they move to.
        #[arg(long)]
        to: u16,
        /// Records (or outbox changes) per page of the copy.
        #[arg(long, default_value_t = 500)]
        page: usize,
        /// Undo a move to the partition that has not been handed off, instead of moving.
        #[arg(long, conflicts_with = "stop_after")]
        abort: bool,
        /// Leave each move after this step (import, copy or freeze), as a controller that died
        /// there would.
        #[arg(long = "stop-after", value_parser = ["import", "copy", "freeze"])]
        stop_after: Option<String>,
    },
}

/// Sends one command on a connection of its own and reads its reply.
fn call(addr: &str, args: &[&str]) -> Result<Value, String> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Conns::default().call(addr, &args)
}

/// Sends a map command to the meta group's leader, following `REDIRECT` and retrying
/// `CLUSTERDOWN`, `TRYAGAIN` and timeouts until `deadline` ([`Conns::at_leader`]); the
/// reply's text.
fn admin(start: &str, args: &[&str], deadline: Instant) -> Result<String, String> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    match Conns::default().at_leader(start, &bytes, deadline)?.0 {
        Value::Bytes(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Value::Int(n) => Ok(n.to_string()),
        other => Err(format!("{}: unexpected reply {other:?}", args.join(" "))),
    }
}

/// The map's text parsed: nodes (id -> client address, state), placement, the partitions'
/// count and the slots moved out of their runs.
struct Map {
    text: String,
    nodes: BTreeMap<u64, (String, String)>,
    placement: BTreeMap<u16, Vec<u64>>,
    partitions: u16,
    moved: BTreeMap<u16, u16>,
}

impl Map {
    /// The partition `slot` belongs to (its run's, as the server computes runs, unless
    /// moved).
    fn partition_of(&self, slot: u16) -> u16 {
        match self.moved.get(&slot) {
            Some(p) => *p,
            None => (u32::from(slot) * u32::from(self.partitions.max(1)) / 16384) as u16,
        }
    }
}

fn parse_map(text: String) -> Result<Map, String> {
    let bad = |l: &str| format!("CLUSTER MAP: cannot read `{l}`");
    let (mut nodes, mut placement) = (BTreeMap::new(), BTreeMap::new());
    let (mut partitions, mut moved) = (0, BTreeMap::new());
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f.first() {
            Some(&"partitions") if f.len() == 4 => {
                partitions = f[1].parse().map_err(|_| bad(l))?;
            }
            Some(&"slot") if f.len() == 4 => {
                let slot = f[1].parse().map_err(|_| bad(l))?;
                moved.insert(slot, f[3].parse().map_err(|_| bad(l))?);
            }
            Some(&"node") if f.len() == 5 => {
                let id = f[1].parse().map_err(|_| bad(l))?;
                nodes.insert(id, (f[2].to_string(), f[4].to_string()));
            }
            Some(&"partition") if f.len() == 3 => {
                let p = f[1].parse().map_err(|_| bad(l))?;
                let ids: Result<Vec<u64>, _> = f[2].split(',').map(str::parse).collect();
                placement.insert(p, ids.map_err(|_| bad(l))?);
            }
            _ => {}
        }
    }
    Ok(Map { text, nodes, placement, partitions, moved })
}

/// A reply in full (binary-safe), for the commands whose replies are arrays.
#[derive(Debug)]
enum Value {
    Bytes(Vec<u8>),
    Int(i64),
    Error(String),
    Array(Vec<Value>),
    Nil,
}

fn read_value(r: &mut impl BufRead, addr: &str) -> Result<Value, String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).map_err(|e| format!("read from {addr}: {e}"))?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(format!("{addr}: the connection ended inside a reply"));
    }
    let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let num = |t: &str| t.parse::<i64>().map_err(|_| format!("{addr}: bad reply line `{t}`"));
    Ok(match line[0] {
        b'+' => Value::Bytes(text.into_bytes()),
        b'-' => Value::Error(text),
        b':' => Value::Int(num(&text)?),
        b'$' => match num(&text)? {
            n if n < 0 => Value::Nil,
            n => {
                let mut buf = vec![0u8; n as usize + 2];
                std::io::Read::read_exact(r, &mut buf)
                    .map_err(|e| format!("read from {addr}: {e}"))?;
                buf.truncate(n as usize);
                Value::Bytes(buf)
            }
        },
        b'*' => match num(&text)? {
            n if n < 0 => Value::Nil,
            n => (0..n).map(|_| read_value(r, addr)).collect::<Result<_, _>>().map(Value::Array)?,
        },
        other => return Err(format!("{addr}: unknown reply type {:?}", other as char)),
    })
}

/// Sends one command with binary arguments on `conn` and reads its reply.
fn call_on(conn: &mut BufReader<TcpStream>, addr: &str, args: &[&[u8]]) -> Result<Value, String> {
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        req.extend_from_slice(a);
        req.extend_from_slice(b"\r\n");
    }
    conn.get_mut().write_all(&req).map_err(|e| format!("send to {addr}: {e}"))?;
    read_value(conn, addr)
}

/// What every new connection sends first: `AUTH [user] pass` (`--user`, `--pass`).
static AUTH: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();

/// Connections to the nodes a move talks to, by address, reused across its calls.
#[derive(Default)]
struct Conns(BTreeMap<String, BufReader<TcpStream>>);

impl Conns {
    /// Sends `args` to the node leading the partition the command names, starting at
    /// `start` and following `REDIRECT`; retries `CLUSTERDOWN`, `TRYAGAIN` and broken
    /// connections until `deadline`. Returns the reply and the address that gave it.
    fn at_leader(
        &mut self,
        start: &str,
        args: &[&[u8]],
        deadline: Instant,
    ) -> Result<(Value, String), String> {
        let what =
            || String::from_utf8_lossy(&args.join(&b' ')).chars().take(80).collect::<String>();
        let mut addr = start.to_string();
        loop {
            let reply = self.call(&addr, args);
            let retry = match reply {
                Ok(Value::Error(e)) if e.starts_with("REDIRECT ") => {
                    addr = e["REDIRECT ".len()..].trim().to_string();
                    continue;
                }
                Ok(Value::Error(e))
                    if e.starts_with("CLUSTERDOWN")
                        || e.starts_with("TRYAGAIN")
                        || e.contains("timed out")
                        || e.contains("outcome is unknown") =>
                {
                    e
                }
                Ok(Value::Error(e)) => return Err(format!("{}: {e}", what())),
                Ok(v) => return Ok((v, addr)),
                Err(e) => {
                    self.0.remove(&addr);
                    addr = start.to_string();
                    e
                }
            };
            if Instant::now() >= deadline {
                return Err(format!("{}: still `{retry}` at the deadline", what()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn call(&mut self, addr: &str, args: &[&[u8]]) -> Result<Value, String> {
        if !self.0.contains_key(addr) {
            let sock: std::net::SocketAddr =
                addr.parse().map_err(|_| format!("`{addr}`: expected an IP address and a port"))?;
            let s = TcpStream::connect_timeout(&sock, Duration::from_secs(5))
                .map_err(|e| format!("connect to {addr}: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
            let mut conn = BufReader::new(s);
            if let Some(auth) = AUTH.get() {
                let args: Vec<&[u8]> = auth.iter().map(Vec::as_slice).collect();
                match call_on(&mut conn, addr, &args)? {
                    Value::Bytes(ok) if ok == b"OK" => {}
                    // The node's refusal, as a command's: not retried.
                    Value::Error(e) => return Ok(Value::Error(format!("{e} (AUTH at {addr})"))),
                    other => return Err(format!("{addr}: AUTH: unexpected reply {other:?}")),
                }
            }
            self.0.insert(addr.to_string(), conn);
        }
        let conn = self.0.get_mut(addr).expect("inserted above");
        let r = call_on(conn, addr, args);
        if r.is_err() {
            self.0.remove(addr);
        }
        r
    }

    /// A step of a move on `partition` (CLUSTER MOVESLOT), at its leader; the reply text.
    fn step(
        &mut self,
        start: &str,
        partition: u16,
        op: &str,
        slot: u16,
        peer: u16,
        deadline: Instant,
    ) -> Result<String, String> {
        let (p, s, q) = (partition.to_string(), slot.to_string(), peer.to_string());
        let args: [&[u8]; 6] =
            [b"CLUSTER", b"MOVESLOT", p.as_bytes(), op.as_bytes(), s.as_bytes(), q.as_bytes()];
        match self.at_leader(start, &args, deadline)?.0 {
            Value::Bytes(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
            other => Err(format!("CLUSTER MOVESLOT {p} {op} {s} {q}: unexpected reply {other:?}")),
        }
    }
}

/// Parses `5`, `100-200`, `1,7,9-12` into slots, each below 16384.
fn parse_slots(text: &str) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let slot = |t: &str| {
            t.trim()
                .parse::<u16>()
                .ok()
                .filter(|s| *s < 16384)
                .ok_or_else(|| format!("slots `{text}`: `{t}` is not a slot (0-16383)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (slot(a)?, slot(b)?);
                if a > b {
                    return Err(format!("slots `{text}`: the range `{part}` is empty"));
                }
                out.extend(a..=b);
            }
            None => out.push(slot(part)?),
        }
    }
    Ok(out)
}

/// Moves `slot` to partition `to` (module text), resuming a move left half done; with
/// `stop`, leaves a new move after that step.
fn move_slot(
    node: &str,
    conns: &mut Conns,
    slot: u16,
    to: u16,
    page: usize,
    stop: Option<&str>,
    deadline: Instant,
) -> Result<String, String> {
    let (map, from) = serving(node, slot, to, deadline)?;
    if from == to {
        // Moved already; a move that stopped after the map change left its source to
        // release (it holds the slot's old records, handed off to `to`).
        let handed = format!("handed off to partition {to}");
        for p in (0..map.partitions).filter(|p| *p != to) {
            if conns.step(node, p, "state", slot, to, deadline)? == handed {
                conns.step(node, p, "release", slot, to, deadline)?;
                return Ok(format!("slot {slot} moved from partition {p} to partition {to}"));
            }
        }
        return Ok(format!("slot {slot} is partition {to}'s"));
    }
    let target = conns.step(node, to, "state", slot, from, deadline)?;
    let source = conns.step(node, from, "state", slot, to, deadline)?;
    // What was copied, and how long the slot's writes were held (from the freeze until the
    // target serves the slot).
    let (mut records, mut changes, mut held) = (0u64, 0u64, None);
    if !target.starts_with("adopted") {
        let mut frozen = None;
        let stopped =
            |step: &str| format!("slot {slot}: its move to partition {to} left after {step}");
        if !source.starts_with("handed off") {
            conns.step(node, to, "import", slot, from, deadline)?;
            if stop == Some("import") {
                return Ok(stopped("import"));
            }
            if source.starts_with("frozen") {
                // Stopped after its freeze: the frozen records are final, copied as they are.
                records = copy_slot(node, conns, slot, from, to, page, deadline)?;
            } else {
                conns.step(node, from, "copy", slot, to, deadline)?;
                records = copy_slot(node, conns, slot, from, to, page, deadline)?;
                if stop == Some("copy") {
                    return Ok(stopped("copy"));
                }
                // The outbox, while clients write, until a page is not full (or for a while
                // at most: a slot written faster than it copies still moves, pausing longer).
                let live = Instant::now() + TAIL_LIVE;
                let mut after = 0;
                loop {
                    let n;
                    (after, n) = copy_tail(node, conns, slot, from, to, after, page, deadline)?;
                    changes += n as u64;
                    if n < page || Instant::now() >= live {
                        break;
                    }
                }
                frozen = Some(Instant::now());
                conns.step(node, from, "freeze", slot, to, deadline)?;
                if stop == Some("freeze") {
                    return Ok(stopped("freeze"));
                }
                // The rest, final once the freeze is applied.
                loop {
                    let n;
                    (after, n) = copy_tail(node, conns, slot, from, to, after, page, deadline)?;
                    changes += n as u64;
                    if n == 0 {
                        break;
                    }
                }
            }
            conns.step(node, from, "handoff", slot, to, deadline)?;
        }
        // Handed off only after its copy ended: the target has every record.
        conns.step(node, to, "adopt", slot, from, deadline)?;
        held = frozen.map(|t| t.elapsed());
    }
    let (s, t) = (slot.to_string(), to.to_string());
    admin(node, &["CLUSTER", "SETSLOTPARTITION", &s, &t], deadline)?;
    conns.step(node, from, "release", slot, to, deadline)?;
    let mut text = format!(
        "slot {slot} moved from partition {from} to partition {to}: {records} records, \
         {changes} changes copied"
    );
    if let Some(h) = held {
        let _ = write!(text, ", writes held {:.1} ms", h.as_secs_f64() * 1e3);
    }
    Ok(text)
}

/// The map, and the partition it gives `slot` to, once `to` is known to be a partition of it.
fn serving(node: &str, slot: u16, to: u16, deadline: Instant) -> Result<(Map, u16), String> {
    let map = parse_map(admin(node, &["CLUSTER", "MAP"], deadline)?)?;
    if to >= map.partitions {
        return Err(format!("partition {to} is out of range ({} partitions)", map.partitions));
    }
    let from = map.partition_of(slot);
    Ok((map, from))
}

/// Undoes a move of `slot` to partition `to` that has not reached its handoff (the server's
/// `cluster::ownership` says how): its source serves it on, its target drops what was
/// copied. A slot in no move is left as it is; one past its handoff is refused (finish it).
fn abort_move(
    node: &str,
    conns: &mut Conns,
    slot: u16,
    to: u16,
    deadline: Instant,
) -> Result<String, String> {
    let (_, from) = serving(node, slot, to, deadline)?;
    let finish = format!("finish it with `move-slots {slot} --to {to}`");
    if from == to {
        return Err(format!("slot {slot} is partition {to}'s already: {finish} if it is not done"));
    }
    let target = conns.step(node, to, "state", slot, from, deadline)?;
    let source = conns.step(node, from, "state", slot, to, deadline)?;
    if target.starts_with("adopted") || source.starts_with("handed off") {
        return Err(format!(
            "slot {slot}'s move from partition {from} to {to} is past its handoff (source: \
             {source}; target: {target}): {finish}"
        ));
    }
    let moving = source.starts_with("copying") || source.starts_with("frozen");
    if !moving && !target.starts_with("importing") {
        return Ok(format!("slot {slot} is in no move to partition {to}: nothing to undo"));
    }
    conns.step(node, from, "abort", slot, to, deadline)?;
    conns.step(node, to, "abort", slot, from, deadline)?;
    Ok(format!(
        "slot {slot} stays in partition {from}: its move to partition {to} is undone (was: \
         source {source}, target {target})"
    ))
}

/// How long a move copies a slot's outbox before it freezes the slot, however much is left.
const TAIL_LIVE: Duration = Duration::from_secs(10);

/// Copies a page of `slot`'s outbox in partition `from` after log index `after` to `to`;
/// the last index copied and how many changes.
#[allow(clippy::too_many_arguments)]
fn copy_tail(
    node: &str,
    conns: &mut Conns,
    slot: u16,
    from: u16,
    to: u16,
    after: u64,
    page: usize,
    deadline: Instant,
) -> Result<(u64, usize), String> {
    let (f, t, s, n) = (from.to_string(), to.to_string(), slot.to_string(), page.to_string());
    let a = after.to_string();
    let args: [&[u8]; 6] =
        [b"CLUSTER", b"SLOTTAIL", f.as_bytes(), s.as_bytes(), a.as_bytes(), n.as_bytes()];
    let Value::Array(items) = conns.at_leader(node, &args, deadline)?.0 else {
        return Err(format!("CLUSTER SLOTTAIL {f} {s} {a}: not an array"));
    };
    let mut items = items.into_iter();
    let last = match items.next() {
        Some(Value::Bytes(b)) => String::from_utf8_lossy(&b).parse::<u64>().ok(),
        _ => None,
    };
    let Some(last) = last else {
        return Err(format!("CLUSTER SLOTTAIL {f} {s} {a}: no log index first"));
    };
    let n = forward(node, conns, "IMPORTCHANGES", &t, &s, items.collect(), 4, deadline)?;
    Ok((last, n as usize))
}

/// Sends `items` (a page's records after its cursor, `width` items each) to `command`
/// (IMPORTRECORDS, IMPORTCHANGES) of partition `to` at its leader; how many it wrote (0,
/// sending nothing, for an empty page).
#[allow(clippy::too_many_arguments)]
fn forward(
    node: &str,
    conns: &mut Conns,
    command: &str,
    to: &str,
    slot: &str,
    items: Vec<Value>,
    width: usize,
    deadline: Instant,
) -> Result<u64, String> {
    if !items.len().is_multiple_of(width) {
        return Err(format!("a page for CLUSTER {command} {to} {slot}: {} items", items.len()));
    }
    if items.is_empty() {
        return Ok(0);
    }
    let mut args: Vec<Vec<u8>> = vec![b"CLUSTER".to_vec(), command.into(), to.into(), slot.into()];
    for v in items {
        args.push(match v {
            Value::Int(i) => i.to_string().into_bytes(),
            Value::Bytes(b) => b,
            other => return Err(format!("a page for CLUSTER {command}: unexpected {other:?}")),
        });
    }
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    match conns.at_leader(node, &args, deadline)?.0 {
        Value::Int(k) => Ok(k.max(0) as u64),
        other => Err(format!("CLUSTER {command} {to} {slot}: {other:?}")),
    }
}

/// Copies `slot`'s records from partition `from`'s leader to `to`'s, a page at a time (as
/// they are when each page is read: the outbox has every later change); returns how many.
fn copy_slot(
    node: &str,
    conns: &mut Conns,
    slot: u16,
    from: u16,
    to: u16,
    page: usize,
    deadline: Instant,
) -> Result<u64, String> {
    let (f, t, s, n) = (from.to_string(), to.to_string(), slot.to_string(), page.to_string());
    let mut cursor: Vec<u8> = Vec::new();
    let mut copied = 0u64;
    loop {
        let args: [&[u8]; 6] =
            [b"CLUSTER", b"SLOTRECORDS", f.as_bytes(), s.as_bytes(), &cursor, n.as_bytes()];
        let Value::Array(items) = conns.at_leader(node, &args, deadline)?.0 else {
            return Err(format!("CLUSTER SLOTRECORDS {f} {s}: not an array"));
        };
        let mut items = items.into_iter();
        let Some(Value::Bytes(next)) = items.next() else {
            return Err(format!("CLUSTER SLOTRECORDS {f} {s}: no cursor"));
        };
        copied += forward(node, conns, "IMPORTRECORDS", &t, &s, items.collect(), 3, deadline)?;
        if next.is_empty() {
            return Ok(copied);
        }
        cursor = next;
    }
}

/// The partition lines of a node's INFO cluster: partition -> field -> value.
fn partitions(addr: &str) -> Result<BTreeMap<u16, BTreeMap<String, String>>, String> {
    let Value::Bytes(t) = call(addr, &["INFO", "cluster"])? else {
        return Err(format!("{addr}: INFO cluster failed"));
    };
    let t = String::from_utf8_lossy(&t);
    let mut out = BTreeMap::new();
    for line in t.lines() {
        let Some((name, fields)) = line.trim().split_once(':') else { continue };
        let Some(p) = name.strip_prefix("partition").and_then(|p| p.parse().ok()) else {
            continue;
        };
        let f = fields
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.insert(p, f);
    }
    Ok(out)
}

/// Each partition's state against the map: `(leader, voters, settled, moving)`; settled when
/// its leader's voters are the placement, no other member holds it, and no replica is
/// catching up; moving: its leader's slots in the middle of a move (`slot:state:peer|..`,
/// empty for none).
type PartitionState = (Option<u64>, String, bool, String);

fn partition_states(map: &Map) -> BTreeMap<u16, PartitionState> {
    let infos: BTreeMap<u64, _> = map
        .nodes
        .iter()
        .filter_map(|(id, (addr, _))| partitions(addr).ok().map(|p| (*id, p)))
        .collect();
    map.placement
        .iter()
        .map(|(p, ids)| {
            let mut want = ids.clone();
            want.sort_unstable();
            let want: Vec<String> = want.iter().map(ToString::to_string).collect();
            let want = want.join("|");
            let leader =
                infos.iter().find(|(_, i)| i.get(p).is_some_and(|f| f["role"] == "leader"));
            let voters = leader.map_or(String::new(), |(_, i)| i[p]["voters"].clone());
            let held = infos.values().filter(|i| i.contains_key(p)).count();
            let caught = infos.values().all(|i| i.get(p).is_none_or(|f| f["catching_up"] == "0"));
            let settled = voters == want && held == ids.len() && caught;
            let moving = leader
                .and_then(|(_, i)| i[p].get("moving").cloned())
                .filter(|m| m != "-")
                .unwrap_or_default();
            (*p, (leader.map(|(id, _)| *id), voters, settled, moving))
        })
        .collect()
}

/// The members (voters of every config, and learners) of the meta group as its leader among
/// `addrs` reports them; `None` while no node there says it leads the meta group.
fn meta_members(addrs: &[&str]) -> Option<Vec<u64>> {
    addrs.iter().find_map(|addr| {
        let Ok(Value::Bytes(t)) = call(addr, &["INFO", "cluster"]) else { return None };
        let t = String::from_utf8_lossy(&t);
        let fields = t.lines().find_map(|l| l.trim().strip_prefix("meta:"))?;
        let f: BTreeMap<&str, &str> =
            fields.split(',').filter_map(|kv| kv.split_once('=')).collect();
        if f.get("role") != Some(&"leader") {
            return None;
        }
        let ids = |k: &str| {
            f.get(k).into_iter().flat_map(|v| v.split('|')).filter_map(|i| i.parse().ok())
        };
        Some(ids("voters").chain(ids("learners")).collect())
    })
}

/// Waits until the meta group no longer counts node `id` (after FORGETNODE): it moves its
/// voters off a node only once the map has forgotten it, and the node must keep running
/// until that change is committed, or a voter set that still counts it could lose its
/// majority to the node's stop and one more failure.
fn wait_meta_without(map: &Map, id: u64, deadline: Instant) -> Result<(), String> {
    let addrs: Vec<&str> =
        map.nodes.iter().filter(|(n, _)| **n != id).map(|(_, (a, _))| a.as_str()).collect();
    loop {
        if meta_members(&addrs).is_some_and(|m| !m.contains(&id)) {
            println!("the meta group no longer counts node {id}");
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("the meta group still counts node {id} at the deadline"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_settled(node: &str, deadline: Instant) -> Result<(), String> {
    loop {
        let map = parse_map(admin(node, &["CLUSTER", "MAP"], deadline)?)?;
        let states = partition_states(&map);
        let moving = states.values().filter(|s| !s.2).count();
        if moving == 0 {
            println!("settled: every partition's voters are its placement");
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{moving} partitions still moving at the deadline"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(cli.timeout);
    let node = cli.node.as_str();
    match cli.command {
        Cmd::Status => {
            let map = parse_map(admin(node, &["CLUSTER", "MAP"], deadline)?)?;
            let states = partition_states(&map);
            let mut out = String::new();
            for l in map.text.lines().filter(|l| !l.starts_with("partition ")) {
                out.push_str(l);
                out.push('\n');
            }
            for (p, ids) in &map.placement {
                let (leader, voters, settled, moving) = &states[p];
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                let _ = writeln!(
                    out,
                    "partition {p} placement {} leader {} voters {} {}",
                    ids.join(","),
                    leader.map_or("?".to_string(), |l| l.to_string()),
                    if voters.is_empty() { "?" } else { voters },
                    if *settled { "settled" } else { "moving" }
                );
                // Slots in a move: one a controller left half done holds its writes (frozen)
                // or grows its outbox (copying) until a move-slots run finishes or aborts it.
                for m in moving.split('|').filter(|m| !m.is_empty()) {
                    let mut f = m.split(':');
                    let (slot, state, peer) = (f.next(), f.next(), f.next());
                    let (Some(slot), Some(state), Some(peer)) = (slot, state, peer) else {
                        continue;
                    };
                    let to = if state == "importing" { p.to_string() } else { peer.to_string() };
                    let _ = writeln!(
                        out,
                        "  slot {slot} {state} (partition {peer} at the other end): in a move; \
                         unless a move-slots is running, `move-slots {slot} --to {to}` finishes \
                         it{}",
                        if state == "handed-off" {
                            ""
                        } else {
                            ", or undoes it with --abort before its handoff"
                        }
                    );
                }
            }
            print!("{out}");
        }
        Cmd::Create { nodes, no_wait } => {
            // The first node's map: it must be a cluster already (of one node).
            parse_map(admin(node, &["CLUSTER", "MAP"], deadline)?)?;
            for spec in &nodes {
                let (id, addr) = spec
                    .split_once('=')
                    .ok_or_else(|| format!("create: `{spec}` is not ID=HOST:PORT:RAFT_PORT"))?;
                let id: u64 = id
                    .parse()
                    .ok()
                    .filter(|i| *i > 0)
                    .ok_or_else(|| format!("create: `{id}` is not a node id (1 or more)"))?;
                let ids = id.to_string();
                println!("{}", admin(node, &["CLUSTER", "ADDNODE", &ids, addr], deadline)?);
            }
            println!("{}", admin(node, &["CLUSTER", "REBALANCE"], deadline)?);
            if !no_wait {
                wait_settled(node, deadline)?;
            }
        }
        Cmd::AddNode { id, addr, rebalance, wait } => {
            let id = id.to_string();
            println!("{}", admin(node, &["CLUSTER", "ADDNODE", &id, &addr], deadline)?);
            if rebalance {
                println!("{}", admin(node, &["CLUSTER", "REBALANCE"], deadline)?);
            }
            if wait {
                wait_settled(node, deadline)?;
            }
        }
        Cmd::RemoveNode { id, wait } => {
            let ids = id.to_string();
            println!("{}", admin(node, &["CLUSTER", "REMOVENODE", &ids], deadline)?);
            if wait {
                wait_settled(node, deadline)?;
                let map = parse_map(admin(node, &["CLUSTER", "MAP"], deadline)?)?;
                // The node deletes its replicas once their leaders removed it; if it is down,
                // nothing waits.
                if let Some((addr, _)) = map.nodes.get(&id) {
                    while partitions(addr).is_ok_and(|p| !p.is_empty()) {
                        if Instant::now() >= deadline {
                            return Err(format!("node {id} still holds replicas at the deadline"));
                        }
                        std::thread::sleep(Duration::from_millis(500));
                    }
                }
                println!("{}", admin(node, &["CLUSTER", "FORGETNODE", &ids], deadline)?);
                wait_meta_without(&map, id, deadline)?;
            }
        }
        Cmd::Rebalance { wait } => {
            println!("{}", admin(node, &["CLUSTER", "REBALANCE"], deadline)?);
            if wait {
                wait_settled(node, deadline)?;
            }
        }
        Cmd::Wait => wait_settled(node, deadline)?,
        Cmd::MoveSlots { slots, keys, to, page, abort, stop_after } => {
            let mut slots = match slots {
                Some(text) => parse_slots(&text)?,
                None => Vec::new(),
            };
            slots.extend(keys.iter().map(|k| strata_server::slots::key_slot(k.as_bytes())));
            if slots.is_empty() {
                return Err("move-slots: name the slots, or keys with --key".into());
            }
            let mut conns = Conns::default();
            for slot in slots {
                let done = if abort {
                    abort_move(node, &mut conns, slot, to, deadline)?
                } else {
                    let stop = stop_after.as_deref();
                    move_slot(node, &mut conns, slot, to, page.max(1), stop, deadline)?
                };
                println!("{done}");
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if let Some(pass) = &cli.pass {
        let mut auth = vec![b"AUTH".to_vec()];
        auth.extend(cli.user.iter().map(|u| u.as_bytes().to_vec()));
        auth.push(pass.as_bytes().to_vec());
        let _ = AUTH.set(auth);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-cluster: error: {e}");
            ExitCode::from(1)
        }
    }
}
