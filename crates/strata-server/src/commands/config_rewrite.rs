//! CONFIG REWRITE: the configuration file the server started from, rewritten with its
//! settings now (`config::rewrite` says what changes in it) and replaced whole
//! (`strata::env::replace_file_synced`), so CONFIG SET, ACL SETUSER and the command-line flags
//! outlive a restart. Redis's replies: an error without a configuration file, or naming what
//! failed.

use parking_lot::Mutex;

use crate::config::rewrite::{rewrite, Settings};
use crate::config::{Config, Flags};
use crate::state::Shared;

/// One rewrite at a time: two would each write a whole file, the last one renamed wins.
static REWRITING: Mutex<()> = Mutex::new(());

/// Rewrites the server's configuration file; Redis's error text when it cannot.
pub fn config_rewrite(sh: &Shared) -> Result<(), String> {
    let Some(path) = &sh.config.config_file else {
        return Err("ERR The server is running without a config file".into());
    };
    let failed = |e: &dyn std::fmt::Display| format!("ERR Rewriting config file: {e}");
    let _one = REWRITING.lock();
    // A file removed since the start is written anew, as Redis does.
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(&e)),
    };
    let defaults = defaults(&sh.config)?;
    let text = {
        let current = sh.params.read();
        let aclfile = current.get("aclfile").is_some_and(|f| !f.is_empty());
        let users = (!aclfile).then(|| super::acl::config_lines(sh));
        rewrite(&old, &Settings { current: &current, defaults: &defaults, users: users.as_deref() })
    };
    strata::env::replace_file_synced(&strata::env::OsFs, path, text.as_bytes())
        .map_err(|e| failed(&e))
}

/// Every parameter's value when neither a file nor a flag sets it, in the server's mode
/// (cluster mode reports one database).
fn defaults(config: &Config) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mode = if config.cluster.enabled { "yes" } else { "no" };
    let flags = Flags { cluster_enabled: Some(mode.into()), ..Flags::default() };
    Config::resolve(flags).map(|c| c.params()).map_err(|e| format!("ERR {e}"))
}
