//! strata-server: the Redis protocol (RESP2/RESP3) served on the Strata engine.
//!
//! # Layers
//!
//! The top-level modules form layers; a module uses only modules of lower layers, never one
//! of its own layer or above (`tests/layering.rs` reads the sources and fails otherwise).
//! From the bottom:
//!
//! 0. [`resp`]: the wire format (the frame parser, the reply writer); [`slots`]: Redis
//!    Cluster's key slots (CRC16 and hash tags); [`socket`]: a client's socket, TCP or Unix.
//! 1. [`filing`]: the slot (and in cluster mode the partition) that leads every stored key.
//! 2. [`storage`]: the engine under the types: the DB and its column families, records as
//!    bytes, batches written under the sync policy, per-key locks, the metadata cache, pop
//!    hints, group commit. Fails with the engine's errors.
//! 3. [`types`]: the Redis types, as Kvrocks' `types/`: record encodings, the metadata and
//!    expiry rules, type checks, and one module per type that computes each command's reads
//!    and its `WriteBatch` (with the index upkeep it needs). Fails with
//!    [`types::TypeError`].
//! 4. [`acl`]: ACL users, their rules and checks, and ACL LOG; [`config`]: flags and the
//!    config file; [`routing`]: where a slot's commands run in
//!    cluster mode (the router a clustered server installs); [`blocked`]: the clients
//!    blocked on keys (BLPOP...), in the order they blocked; [`script`]: the Lua engine of
//!    EVAL (the interpreter, its script cache, the `redis` library over a command host);
//!    [`pubsub`]: pub/sub's subscriptions and each subscriber's message queue; [`slowlog`]:
//!    SLOWLOG's log of slow commands; [`latency`]: LATENCY's monitor and the commands'
//!    latency histograms; [`pause`]: CLIENT PAUSE's state.
//! 5. [`master_link`]: the state of this server's link to a Redis master (REPLICAOF), as
//!    the commands read it; [`replicas`]: the replicas following this server.
//! 6. [`tracking`]: client-side caching's server half (CLIENT TRACKING): who tracks which
//!    keys, and the invalidations sent through the connections' queues (`pubsub`'s).
//! 7. [`state`]: what commands run against: the state every connection shares, and one
//!    connection's; [`cluster`]: cluster mode's side of a node (partitions, the state machine
//!    of their Raft groups, the store's replication and the router).
//! 8. [`commands`]: the command table and the handlers. A handler parses its arguments,
//!    calls `types` and formats the reply; [`commands::errors`] maps a `TypeError` to Redis's
//!    error text, in one place.
//! 9. [`sync_source`]: the dataset sent as one RDB to a client that asked with SYNC, and
//!    to a replica the replication stream after it.
//! 10. [`server`]: the listener, the connection loop and the background tasks; `fuzz_api`:
//!     the `commands` fuzz target's body (command lines run through `commands::dispatch`);
//!     [`replicaof`]: the link to a Redis master, which runs the master's commands.
//! 11. `lib` ([`run`]) and `main` (the binary).
//!
//! The data layers (`storage`, `types`) return errors, never reply texts, and do not use
//! `resp`: the same test checks that.

pub mod acl;
pub mod blocked;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod failover;
pub mod filing;
#[doc(hidden)]
pub mod fuzz_api;
pub mod latency;
pub mod master_link;
pub mod pause;
pub mod pubsub;
pub mod replicaof;
pub mod replicas;
pub mod resp;
pub mod routing;
pub mod script;
pub mod server;
pub mod slots;
pub mod slowlog;
pub mod socket;
pub mod state;
pub mod storage;
pub mod sync_source;
pub mod tracking;
pub mod types;

use state::Shared;
use std::sync::Arc;

/// Installs the ACL users of the configuration file's `user` directives, or of its
/// `aclfile` (not both, as Redis refuses); any error stops the start.
fn load_users(sh: &Shared, cfg: &config::Config) -> Result<(), String> {
    let aclfile = cfg.extra.get("aclfile").filter(|f| !f.is_empty());
    if aclfile.is_some() && !cfg.users.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting \
                    an ACL file path is invalid. Define either an ACL file or users in the \
                    configuration file, but not both."
            .into());
    }
    commands::acl::load_configured(sh, &cfg.users)
        .map_err(|e| format!("ACL users of the configuration file: {e}"))?;
    if let Some(file) = aclfile {
        commands::acl::load_file(sh, file)
            .map_err(|e| format!("Aborting startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

/// The names commands are served by after the configuration's `rename-command` lines; a
/// line naming no command served, or a name taken, stops the start (`config::renames`).
fn command_names(cfg: &config::Config) -> Result<config::renames::Renames, String> {
    let exists = |own: &str| commands::lookup(own.as_bytes()).is_some();
    config::renames::Renames::build(&cfg.renames, exists).map_err(|e| match &cfg.config_file {
        Some(f) if !e.starts_with("--") => format!("{}: {e}", f.display()),
        _ => e,
    })
}

/// The Unix socket the configuration names (`unixsocket`, `unixsocketperm`), bound.
fn unix_listener(
    cfg: &config::Config,
) -> Result<Option<(tokio::net::UnixListener, String)>, String> {
    let params = cfg.params();
    let Some(path) = params.get("unixsocket").filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let perm = config::unix_perm(params.get("unixsocketperm").map_or("0", String::as_str))?;
    let l = socket::bind_unix(std::path::Path::new(path), perm)
        .map_err(|e| format!("cannot listen on the Unix socket {path}: {e}"))?;
    Ok(Some((l, path.clone())))
}

/// Opens the store, binds, prints the ready line and serves until SIGINT/SIGTERM (or the
/// SHUTDOWN command), then flushes the DB.
pub async fn run(cfg: config::Config) -> Result<(), String> {
    let names = command_names(&cfg)?;
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| format!("cannot create {}: {e}", cfg.dir.display()))?;
    let dump = replicaof::load::dump_to_import(&cfg)?;
    let dbs = if cfg.cluster.enabled {
        types::open_partitioned(cfg.engine_options(), &cfg.dir, cfg.appendfsync)
    } else {
        types::open_databases(cfg.engine_options(), &cfg.dir, cfg.appendfsync, cfg.databases)
    }
    .map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind((cfg.bind.as_str(), cfg.port))
        .await
        .map_err(|e| format!("cannot listen on {}:{}: {e}", cfg.bind, cfg.port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let unix = unix_listener(&cfg)?;
    let spec = cluster::spec::ClusterSpec::from_config(&cfg)?;
    let running = match &spec {
        Some(spec) => Some(cluster::start::start(spec, dbs.store(0).clone(), &cfg.dir).await?),
        None => None,
    };
    let mut shared = Shared::new(dbs.clone(), cfg.clone(), port).with_names(names);
    if let Some(r) = &running {
        shared = shared.with_router(r.node.clone());
        r.track_with(shared.tracking.clone());
    }
    let sh = Arc::new(shared);
    load_users(&sh, &cfg)?;
    commands::functions::restore(&sh)?;
    if let Some((path, checked)) = dump {
        let l = replicaof::load::load_checked(&sh, &path, checked)?;
        replicaof::load::finish_import(&sh)?;
        println!(
            "imported {}: {} keys ({} expired left out), {} function libraries",
            path.display(),
            l.keys,
            l.expired,
            l.libraries
        );
    }
    // The stream's ids kept by a clean shutdown, for the link (and this server's replicas) to
    // resume from (`storage::repl_ids`).
    let restored = if running.is_none() {
        storage::repl_ids::restore(sh.engine(), &sh.engine().backlog)
            .map_err(|e| format!("cannot read the replication ids: {e}"))?
    } else {
        None
    };
    if let Some(ids) = &restored {
        println!("Resuming replication id {} at offset {}", ids.replid, ids.end);
    }
    replicaof::install(&sh)?;
    // A master goes on under a new id, the kept one its second up to the kept end, as
    // redis-server 7.0 shifts the id its RDB kept: its replicas resume under the old one,
    // and no other server's history is taken for its own. A replica keeps its master's.
    if restored.is_some() && !sh.master_link.following() {
        sh.engine().backlog.shift_id(None);
    }
    server::tasks::start(&sh);
    println!(
        "strata-server {} on {}:{port}, data in {}, appendfsync {}",
        env!("CARGO_PKG_VERSION"),
        cfg.bind,
        cfg.dir.display(),
        cfg.appendfsync.name()
    );
    if let (Some(spec), Some(r)) = (&spec, &running) {
        let map = r.node.map();
        println!(
            "cluster mode: node {} of {}, {} partitions, replicas of {} here, cluster map \
             version {}",
            spec.id,
            map.nodes.len(),
            spec.partitions.count(),
            map.held_by(spec.id).len(),
            map.version
        );
    }
    let signalled = shutdown_signal();
    let requested = sh.clone();
    // SIGTERM, SIGINT or the SHUTDOWN command, whichever comes first.
    let shutdown = async move {
        tokio::select! {
            () = signalled => {}
            () = requested.shutdown.notified() => {}
        }
    };
    // Outside cluster mode connections are served on threads of their own
    // (`server::conn_threads`); a cluster node's commands may wait inside for replication,
    // which needs the shared runtime's workers.
    let threads = if running.is_none() {
        let n = cfg.io_threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let t = server::conn_threads::ConnThreads::start(n)
            .map_err(|e| format!("cannot start the connection threads: {e}"))?;
        Some(t)
    } else {
        None
    };
    println!("Ready to accept connections on port {port}");
    if let Some((_, path)) = &unix {
        println!("The server is now ready to accept connections at {path}");
    }
    server::listener::serve(sh.clone(), listener, unix, shutdown, threads.as_ref()).await;
    // A script still running stops (SIGTERM, SIGINT or SHUTDOWN: it holds every key lock).
    sh.scripts.stop_for_shutdown();
    // The connections close before the database does.
    if let Some(t) = threads {
        t.stop(std::time::Duration::from_secs(1));
    }
    // The stream's ids as the last writer leaves them (`storage::repl_ids`): taken under the
    // gate with the link told to stop, so that it adds nothing after them.
    let kept = running.is_none().then(|| {
        let _gate = sh.engine().backlog.gate();
        sh.master_link.mark_stopping();
        storage::repl_ids::Ids::of(&sh.engine().backlog)
    });
    // A replica's link stops before the database closes (`replicaof`).
    let link_ended = sh.master_link.stop_for_shutdown(std::time::Duration::from_secs(2));
    if let (true, Some(Some(ids))) = (link_ended, kept) {
        match storage::repl_ids::save(sh.engine(), &sh.engine().backlog, &ids) {
            Ok(true) => println!("Kept the replication id {} at offset {}", ids.replid, ids.end),
            Ok(false) => {}
            Err(e) => eprintln!("cannot keep the replication ids: {e}"),
        }
    }
    if let Some(r) = running {
        r.shutdown().await;
    }
    println!("Shutting down: flushing the database");
    tokio::task::spawn_blocking(move || dbs.close())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot close the database: {e}"))?;
    println!("Bye");
    Ok(())
}

/// SIGTERM or SIGINT, whichever comes first. The handlers are installed when this is called,
/// not when the future is first polled: the server calls it before it prints that it is
/// ready, so a supervisor that signals as soon as it reads that line gets the graceful
/// shutdown, not the default action (death by the signal).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            // No signal handling here: Ctrl-C through the portable path.
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}
