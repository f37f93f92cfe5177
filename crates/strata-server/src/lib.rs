//! strata-server: the Redis protocol (RESP2/RESP3) served on the Strata engine.
//!
//! Layers: [`resp`] (wire format) <- [`server`] (connections) -> [`commands`] (semantics) ->
//! [`types`] (the Redis types: encodings and operations) -> [`storage`] (the engine and its
//! column families). [`state`] is what commands run against; [`config`] resolves flags and
//! the config file.

pub mod commands;
pub mod config;
pub mod resp;
pub mod server;
pub mod state;
pub mod storage;
pub mod types;

use state::Shared;
use std::sync::Arc;

/// Opens the store, binds, prints the ready line and serves until SIGINT/SIGTERM, then
/// flushes the DB.
pub async fn run(cfg: config::Config) -> Result<(), String> {
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| format!("cannot create {}: {e}", cfg.dir.display()))?;
    let store =
        types::open(cfg.engine_options(), &cfg.dir, cfg.appendfsync).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind((cfg.bind.as_str(), cfg.port))
        .await
        .map_err(|e| format!("cannot listen on {}:{}: {e}", cfg.bind, cfg.port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let sh = Arc::new(Shared::new(store.clone(), cfg.clone(), port));
    server::tasks::start(&sh);
    println!(
        "strata-server {} on {}:{port}, data in {}, appendfsync {}",
        env!("CARGO_PKG_VERSION"),
        cfg.bind,
        cfg.dir.display(),
        cfg.appendfsync.name()
    );
    println!("Ready to accept connections on port {port}");
    server::listener::serve(sh.clone(), listener, shutdown_signal()).await;
    println!("Shutting down: flushing the database");
    let st = store.clone();
    tokio::task::spawn_blocking(move || st.close())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot close the database: {e}"))?;
    println!("Bye");
    Ok(())
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
