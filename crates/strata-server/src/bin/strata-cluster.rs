//! `strata-cluster`: the controller of a strata-server cluster. It talks to any node over the
//! Redis protocol, sending the cluster map's commands (CLUSTER MAP, ADDNODE, REMOVENODE,
//! FORGETNODE, REBALANCE) to the node leading the meta group (following `REDIRECT`), and
//! reads every node's INFO cluster to tell how far the groups are from the map.
//!
//! ```text
//! strata-cluster [--node HOST:PORT] [--timeout SECONDS] COMMAND
//!   status                      the map, and each partition's leader, voters and state
//!   add-node ID HOST:PORT:RAFT  adds a node (started with cluster-nodes naming itself)
//!            [--rebalance] [--wait]
//!   remove-node ID [--wait]     moves the node's replicas away; with --wait, waits until it
//!                               holds nothing, drops it from the map (FORGETNODE) and
//!                               waits until the meta group no longer counts it (only
//!                               then may it stop)
//!   rebalance [--wait]          spreads replicas and preferred leaders over the nodes
//!   wait                        waits until every partition's voters are its placement
//! ```
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
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prints the map and each partition's leader, voters and state.
    Status,
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
}

/// A reply, as far as this tool needs to tell replies apart.
#[derive(Debug)]
enum Reply {
    Text(String),
    Error(String),
    Other,
}

/// Sends one command and reads its reply (simple, error, integer, bulk; arrays are skipped).
fn call(addr: &str, args: &[&str]) -> Result<Reply, String> {
    let timeout = Duration::from_secs(30);
    let sock: std::net::SocketAddr =
        addr.parse().map_err(|_| format!("`{addr}`: expected an IP address and a port"))?;
    let mut s = TcpStream::connect_timeout(&sock, Duration::from_secs(5))
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        let _ = write!(req, "${}\r\n{a}\r\n", a.len());
    }
    s.write_all(req.as_bytes()).map_err(|e| format!("send to {addr}: {e}"))?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| format!("read from {addr}: {e}"))?;
    let body = line.trim_end_matches("\r\n").to_string();
    let (kind, rest) = body.split_at(body.len().min(1));
    match kind {
        "+" | ":" => Ok(Reply::Text(rest.to_string())),
        "-" => Ok(Reply::Error(rest.to_string())),
        "$" => {
            let n: i64 = rest.parse().map_err(|_| format!("{addr}: bad bulk header `{body}`"))?;
            if n < 0 {
                return Ok(Reply::Other);
            }
            let mut buf = vec![0u8; n as usize + 2];
            std::io::Read::read_exact(&mut r, &mut buf)
                .map_err(|e| format!("read from {addr}: {e}"))?;
            buf.truncate(n as usize);
            Ok(Reply::Text(String::from_utf8_lossy(&buf).into_owned()))
        }
        _ => Ok(Reply::Other),
    }
}

/// Sends a map command, following `REDIRECT` and retrying `CLUSTERDOWN`, `TRYAGAIN` and
/// timeouts until `deadline`.
fn admin(start: &str, args: &[&str], deadline: Instant) -> Result<String, String> {
    let mut addr = start.to_string();
    loop {
        let retry = match call(&addr, args) {
            Ok(Reply::Text(t)) => return Ok(t),
            Ok(Reply::Error(e)) if e.starts_with("REDIRECT ") => {
                addr = e["REDIRECT ".len()..].trim().to_string();
                continue;
            }
            Ok(Reply::Error(e))
                if e.starts_with("CLUSTERDOWN")
                    || e.starts_with("TRYAGAIN")
                    || e.contains("timed out") =>
            {
                e
            }
            Ok(Reply::Error(e)) => return Err(format!("{}: {e}", args.join(" "))),
            Ok(Reply::Other) => return Err(format!("{}: unexpected reply", args.join(" "))),
            // The node may be restarting: start again from the one given.
            Err(e) => {
                addr = start.to_string();
                e
            }
        };
        if Instant::now() >= deadline {
            return Err(format!("{}: still `{retry}` at the deadline", args.join(" ")));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The map's text parsed: nodes (id -> client address, state) and placement.
struct Map {
    text: String,
    nodes: BTreeMap<u64, (String, String)>,
    placement: BTreeMap<u16, Vec<u64>>,
}

fn parse_map(text: String) -> Result<Map, String> {
    let bad = |l: &str| format!("CLUSTER MAP: cannot read `{l}`");
    let (mut nodes, mut placement) = (BTreeMap::new(), BTreeMap::new());
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f.first() {
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
    Ok(Map { text, nodes, placement })
}

/// The partition lines of a node's INFO cluster: partition -> field -> value.
fn partitions(addr: &str) -> Result<BTreeMap<u16, BTreeMap<String, String>>, String> {
    let Reply::Text(t) = call(addr, &["INFO", "cluster"])? else {
        return Err(format!("{addr}: INFO cluster failed"));
    };
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

/// Each partition's state against the map: `(leader, voters, settled)`; settled when its
/// leader's voters are the placement, no other member holds it, and no replica is catching
/// up.
fn partition_states(map: &Map) -> BTreeMap<u16, (Option<u64>, String, bool)> {
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
            (*p, (leader.map(|(id, _)| *id), voters, settled))
        })
        .collect()
}

/// The members (voters of every config, and learners) of the meta group as its leader among
/// `addrs` reports them; `None` while no node there says it leads the meta group.
fn meta_members(addrs: &[&str]) -> Option<Vec<u64>> {
    addrs.iter().find_map(|addr| {
        let Ok(Reply::Text(t)) = call(addr, &["INFO", "cluster"]) else { return None };
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
                let (leader, voters, settled) = &states[p];
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                let _ = writeln!(
                    out,
                    "partition {p} placement {} leader {} voters {} {}",
                    ids.join(","),
                    leader.map_or("?".to_string(), |l| l.to_string()),
                    if voters.is_empty() { "?" } else { voters },
                    if *settled { "settled" } else { "moving" }
                );
            }
            print!("{out}");
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
                // The node deletes its replicas once demoted; if it is down, nothing waits.
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
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-cluster: error: {e}");
            ExitCode::from(1)
        }
    }
}
