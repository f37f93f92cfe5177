//! INFO: the server's sections as Redis names and fills them (server, clients, memory,
//! persistence, stats, replication, CPU, command and error statistics, cluster, keyspace),
//! plus the engine's own (`strata`).

use super::errors::CmdError;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Figure, Shared};
use crate::types::keys;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use strata::ColumnFamily;

pub use super::server::REDIS_VERSION;

/// INFO [section ...]
pub fn info(sh: &Shared, _: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let want: Vec<String> =
        a[1..].iter().map(|s| String::from_utf8_lossy(s).to_ascii_lowercase()).collect();
    let t = info_text(sh, &want)?;
    out.verbatim(&t);
    Ok(())
}

/// CPU time used by `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`): user and system seconds.
fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage writes one rusage struct, which is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// An engine property of one column family (0 when unknown).
pub(super) fn prop_cf(sh: &Shared, cf: &ColumnFamily, name: &str) -> u64 {
    sh.engine().db.property_int_value_cf(cf, name).ok().flatten().unwrap_or(0)
}

/// An engine property summed over the data families of every database.
pub(super) fn prop(sh: &Shared, name: &str) -> u64 {
    sh.dbs.each().flat_map(|(_, st)| st.families()).map(|cf| prop_cf(sh, cf, name)).sum()
}

/// The sections INFO gives without arguments (and for `default`), in its order.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "errorstats",
    "cluster",
    "keyspace",
    "strata",
];

/// The INFO text of the sections `want` (lower case; empty: the default ones). `default`
/// names the default sections, `all` and `everything` those and `commandstats` and
/// `latencystats` too.
pub fn info_text(sh: &Shared, want: &[String]) -> Result<String, CmdError> {
    let every = want.iter().any(|w| w == "all" || w == "everything");
    let default = want.is_empty() || every || want.iter().any(|w| w == "default");
    let on = |s: &str| {
        (default && DEFAULT_SECTIONS.contains(&s))
            || (every && (s == "commandstats" || s == "latencystats"))
            || want.iter().any(|w| w == s)
    };
    let mut t = String::new();
    if on("server") {
        let _ = write!(
            t,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nstrata_server_version:{}\r\nredis_mode:{}\r\nos:{}\r\narch_bits:64\r\nmultiplexing_api:tokio\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nexecutable:strata-server\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            if sh.router.is_some() { "cluster" } else { "standalone" },
            std::env::consts::OS,
            std::process::id(),
            sh.port.load(Ordering::Relaxed),
            sh.started.elapsed().as_secs(),
            sh.started.elapsed().as_secs() / 86400
        );
    }
    if on("clients") {
        // The largest read and reply buffers the connections hold now.
        let (mut input, mut output) = (0, 0);
        for e in sh.clients.lock().values() {
            input = input.max(e.activity.get(Figure::Rbs));
            output = output.max(e.activity.get(Figure::OutSize));
        }
        let _ = write!(
            t,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:10000\r\n\
             client_recent_max_input_buffer:{input}\r\nclient_recent_max_output_buffer:{output}\r\n\
             blocked_clients:{}\r\ntracking_clients:{}\r\n\r\n",
            sh.stats.connected.load(Ordering::Relaxed),
            sh.blocked.count() + sh.pause.waiting(),
            sh.tracking.stats().0
        );
    }
    if on("memory") {
        super::memory::info_section(sh, &mut t);
    }
    if on("persistence") {
        let _ = write!(
            t,
            "# Persistence\r\nloading:{}\r\naof_enabled:1\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:0\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_changes_since_last_save:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nappendfsync:{}\r\nstrata_sst_bytes:{}\r\n\r\n",
            u8::from(sh.master_link.loading()),
            u8::from(sh.persistence.rewriting.load(Ordering::Acquire)),
            if sh.persistence.last_rewrite_ok.load(Ordering::Acquire) { "ok" } else { "err" },
            sh.persistence.rewrites.load(Ordering::Relaxed),
            u8::from(sh.persistence.saving.load(Ordering::Acquire)),
            sh.notifier
                .changes()
                .saturating_sub(sh.persistence.saved_changes.load(Ordering::Acquire)),
            sh.persistence.last_save.load(Ordering::Acquire),
            if sh.persistence.last_bgsave_ok.load(Ordering::Acquire) { "ok" } else { "err" },
            sh.engine().sync_policy().name(),
            prop(sh, "strata.total-sst-files-size")
        );
    }
    if on("stats") {
        let s = &sh.stats;
        let (_, keys, items, prefixes) = sh.tracking.stats();
        // No MIGRATE here, so never a cached connection to another server.
        let _ = write!(
            t,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ntotal_error_replies:{}\r\nexpired_keys:{}\r\nexpired_time_cap_reached_count:{}\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:0\r\nkeyspace_hits:0\r\nkeyspace_misses:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\ntotal_protocol_errors:{}\r\ntracking_total_keys:{keys}\r\ntracking_total_items:{items}\r\ntracking_total_prefixes:{prefixes}\r\nunexpected_error_replies:{}\r\n\r\n",
            s.connections.load(Ordering::Relaxed),
            s.commands.load(Ordering::Relaxed),
            s.errors.load(Ordering::Relaxed),
            sh.notifier.expired(),
            s.expire_time_capped.load(Ordering::Relaxed),
            s.expire_micros.load(Ordering::Relaxed) / 1000,
            sh.engine().own_due.len(),
            sh.replicas.full_syncs.load(Ordering::Relaxed),
            sh.replicas.partial_syncs.load(Ordering::Relaxed),
            sh.replicas.partial_refused.load(Ordering::Relaxed),
            s.protocol_errors.load(Ordering::Relaxed),
            s.unexpected_errors.load(Ordering::Relaxed)
        );
    }
    if on("replication") {
        let cluster = sh.router.as_ref().and_then(|r| r.replication_info());
        match (sh.master_link.current(), cluster) {
            (Some(link), _) => replica_section(sh, &link, &mut t),
            (None, Some(lines)) => {
                t.push_str("# Replication\r\n");
                for (field, value) in lines {
                    let _ = write!(t, "{field}:{value}\r\n");
                }
                t.push_str("\r\n");
            }
            (None, None) => master_section(sh, &mut t),
        }
    }
    if on("cpu") {
        let (user, sys) = cpu_seconds(libc::RUSAGE_SELF);
        let (cuser, csys) = cpu_seconds(libc::RUSAGE_CHILDREN);
        let _ = write!(
            t,
            "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{csys:.6}\r\nused_cpu_user_children:{cuser:.6}\r\n\r\n"
        );
    }
    if on("commandstats") {
        t.push_str("# Commandstats\r\n");
        for (i, c) in sh.stats.per_command.iter().enumerate() {
            let calls = c.calls.load(Ordering::Relaxed);
            let rejected = c.rejected.load(Ordering::Relaxed);
            if calls == 0 && rejected == 0 {
                continue;
            }
            let usec = c.usec.load(Ordering::Relaxed);
            let per_call = if calls == 0 { 0.0 } else { usec as f64 / calls as f64 };
            let _ = write!(
                t,
                "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={}\r\n",
                super::stats_name(i),
                c.failed.load(Ordering::Relaxed)
            );
        }
        t.push_str("\r\n");
    }
    if on("latencystats") {
        t.push_str("# Latencystats\r\n");
        let wanted = sh.params.read().get("latency-tracking-info-percentiles").cloned();
        let wanted: Vec<f64> =
            wanted.unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect();
        for (i, c) in sh.stats.per_command.iter().enumerate() {
            if c.histogram.percentile(100.0).is_none() {
                continue;
            }
            let values: Vec<String> = wanted
                .iter()
                .filter_map(|&p| Some(format!("p{p}={:.3}", c.histogram.percentile(p)?)))
                .collect();
            let name = super::stats_name(i);
            let _ = write!(t, "latency_percentiles_usec_{name}:{}\r\n", values.join(","));
        }
        t.push_str("\r\n");
    }
    if on("errorstats") {
        t.push_str("# Errorstats\r\n");
        for (code, n) in sh.stats.error_codes.lock().iter() {
            let _ = write!(t, "errorstat_{code}:count={n}\r\n");
        }
        t.push_str("\r\n");
    }
    if on("cluster") {
        let _ = write!(t, "# Cluster\r\ncluster_enabled:{}\r\n", u8::from(sh.router.is_some()));
        for (field, value) in sh.router.as_ref().map(|r| r.info()).unwrap_or_default() {
            let _ = write!(t, "{field}:{value}\r\n");
        }
        t.push_str("\r\n");
    }
    if on("keyspace") {
        t.push_str("# Keyspace\r\n");
        for (db, _) in sh.dbs.each() {
            let (keys, expires) = keys::stats(&sh.keyspace(db))?;
            if keys > 0 {
                let _ = write!(t, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
        t.push_str("\r\n");
    }
    if on("strata") {
        t.push_str("# Strata\r\n");
        let steps = sh.engine().scan_steps.load(std::sync::atomic::Ordering::Relaxed);
        let _ = write!(t, "strata_scan_steps:{steps}\r\n");
        let deltas = sh.engine().field_deltas.load(std::sync::atomic::Ordering::Relaxed);
        let _ = write!(t, "strata_field_deltas:{deltas}\r\n");
        let (due, cap) = (sh.engine().due.len(), crate::storage::due::CAPACITY);
        let _ = write!(t, "strata_expiry_index:keys={due},capacity={cap}\r\n");
        let rounds = sh.stats.expire_walk_rounds.load(std::sync::atomic::Ordering::Relaxed);
        let patrol = sh.stats.expire_walk_patrolling.load(std::sync::atomic::Ordering::Relaxed);
        let gaps = sh.engine().due.gaps();
        let patrol = u8::from(patrol);
        let _ = write!(t, "strata_expiry_walk:rounds={rounds},patrolling={patrol},gaps={gaps}\r\n");
        let (n, bytes, hits, misses) = sh.engine().meta_cache.stats();
        let _ = write!(
            t,
            "strata_meta_cache:entries={n},bytes={bytes},hits={hits},misses={misses}\r\n"
        );
        // The block cache's capacity is its configured one unless `maxmemory` lowered it.
        if let Some((c, configured)) = sh.engine().block_cache.as_ref() {
            let (usage, capacity) = (c.usage(), c.capacity());
            let _ = write!(
                t,
                "strata_block_cache:usage={usage},capacity={capacity},configured={configured}\r\n"
            );
        }
        // The DB-wide section (WAL, writes, stalls) comes with the `default` family's stats.
        let db_wide =
            sh.engine().db.property_value("strata.stats").ok().flatten().unwrap_or_default();
        let _ = write!(t, "strata_db_stats:{}\r\n", fold_lines(&db_wide));
        let first = sh.dbs.first();
        for (name, cf) in
            [("metadata", &first.meta_cf), ("subkey", &first.sub_cf), ("zscore", &first.score_cf)]
        {
            let stats = sh
                .engine()
                .db
                .property_value_cf(&**cf, "strata.stats")
                .ok()
                .flatten()
                .unwrap_or_default();
            let _ = write!(t, "strata_cf_{name}_stats:{}\r\n", fold_lines(&stats));
        }
        t.push_str("\r\n");
    }
    Ok(t)
}

/// INFO replication of a replica (REPLICAOF), with redis-server 7.0's fields.
fn replica_section(sh: &Shared, link: &crate::master_link::LinkState, t: &mut String) {
    use crate::master_link::Phase;
    let now = crate::types::keyspace::now_ms();
    let secs_since = |ms: u64| if ms == 0 { -1 } else { (now.saturating_sub(ms) / 1000) as i64 };
    let phase = link.phase();
    let up = phase == Phase::Connected;
    let offset = link.offset(&sh.engine().backlog).max(0);
    let read_only = super::read_only_replica(sh);
    let _ = write!(
        t,
        "# Replication\r\nrole:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\n",
        link.target.host,
        link.target.port,
        if up { "up" } else { "down" },
        if up { secs_since(link.last_io_ms.load(Ordering::Relaxed)) } else { -1 },
        u8::from(phase == Phase::Sync),
    );
    if phase == Phase::Sync {
        let total = link.sync_total.load(Ordering::Relaxed);
        let read = link.sync_read.load(Ordering::Relaxed);
        let perc = if total == 0 { 0.0 } else { read as f64 * 100.0 / total as f64 };
        let _ = write!(
            t,
            "master_sync_total_bytes:{}\r\nmaster_sync_read_bytes:{read}\r\nmaster_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
            if total == 0 { -1 } else { total as i64 },
            if total == 0 { -1 } else { total.saturating_sub(read) as i64 },
            secs_since(link.last_io_ms.load(Ordering::Relaxed)),
        );
    }
    if !up {
        let _ = write!(
            t,
            "master_link_down_since_seconds:{}\r\n",
            secs_since(link.down_since_ms.load(Ordering::Relaxed)).max(0)
        );
        let e = link.last_error.lock();
        if !e.is_empty() {
            let _ = write!(t, "master_link_last_error:{}\r\n", e.replace(['\r', '\n'], " "));
        }
    }
    let _ = write!(
        t,
        "slave_priority:100\r\nslave_read_only:{}\r\nreplica_announced:1\r\n",
        u8::from(read_only)
    );
    replicas_and_stream(sh, t);
    let _ = write!(
        t,
        "repl_full_syncs:{}\r\nrepl_partial_syncs:{}\r\n\r\n",
        link.full_syncs.load(Ordering::Relaxed),
        link.partial_syncs.load(Ordering::Relaxed),
    );
}

/// INFO replication of a master: its replicas (`sync_source`) and its stream's offsets
/// (`storage::backlog`), as redis-server lists them.
fn master_section(sh: &Shared, t: &mut String) {
    let _ = write!(t, "# Replication\r\nrole:master\r\n");
    replicas_and_stream(sh, t);
    t.push_str("\r\n");
}

/// The replicas of this server (a master's, or a replica's own) and its stream's ids and
/// offsets (`storage::backlog`; a replica's stream is its master's, at its offsets), as
/// redis-server lists them.
fn replicas_and_stream(sh: &Shared, t: &mut String) {
    let replicas = sh.replicas.list();
    let backlog = &sh.engine().backlog;
    let end = backlog.offset();
    let _ = write!(t, "connected_slaves:{}\r\n", replicas.len());
    for (i, r) in replicas.iter().enumerate() {
        let _ = write!(
            t,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip,
            r.port,
            r.state.name(),
            r.ack,
            r.ack_at.elapsed().as_secs()
        );
    }
    let (first, held) = backlog.held();
    let active = backlog.is_active();
    let size =
        sh.params.read().get("repl-backlog-size").cloned().unwrap_or_else(|| "1048576".into());
    let (replid2, second) = match backlog.replid2() {
        Some((id, second)) => (id, second as i64),
        None => ("0".repeat(40), -1),
    };
    let _ = write!(
        t,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{replid2}\r\nmaster_repl_offset:{end}\r\nsecond_repl_offset:{second}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{size}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        sh.failover.phase().info_word(),
        backlog.replid(),
        u8::from(active),
        if active { first + 1 } else { 0 },
        if active { held } else { 0 },
    );
}

/// The engine's multi-line stats text as one INFO field: lines folded with " | ".
fn fold_lines(text: &str) -> String {
    text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" | ")
}
