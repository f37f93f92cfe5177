//! Kill points: named places on the write path where a test build crashes on purpose.
//!
//! `crate::kill_point!("wal.sync")` compiles to nothing unless the `kill-points` cargo feature
//! is on. With the feature, a process-global configuration gives each point a probability;
//! when a point fires it appends its name to the configured log file (the OS keeps those bytes
//! when the process dies) and then either aborts the process ([`Action::Abort`], what the
//! kill -9 crash loop's child uses) or calls a hook ([`Action::Hook`], what in-process
//! power-loss tests use to cut the filesystem off at exactly that point). Every hit is
//! counted while the module is enabled.
//!
//! Configuration from the environment ([`configure_from_env`]):
//!
//! ```text
//! STRATA_KILL_POINTS="wal.sync=0.001,manifest.sync=0.01,*=0.0001"   name=probability, * = any
//! STRATA_KILL_POINTS_SEED=42                                         random stream (default: pid)
//! STRATA_KILL_POINTS_LOG=/path/fired.log                             where fired names go
//! ```
//!
//! A point costs one relaxed atomic load while nothing is configured.

/// Marks a kill point: `kill_point!("name")`, or `kill_point!("name", when cond)` to mark
/// it only when `cond` holds. The name is a `&'static str` from [`ALL`]; nothing is evaluated
/// when the `kill-points` feature is off.
#[macro_export]
#[doc(hidden)]
macro_rules! kill_point {
    ($name:expr) => {{
        #[cfg(feature = "kill-points")]
        {
            $crate::util::kill_point::hit($name);
        }
    }};
    ($name:expr, when $cond:expr) => {{
        #[cfg(feature = "kill-points")]
        {
            if $cond {
                $crate::util::kill_point::hit($name);
            }
        }
    }};
}

/// Every kill point the engine marks, for reports and for configuring `*` (read by the
/// stress tools, through the `kill-points` feature's re-export).
#[cfg_attr(not(feature = "kill-points"), allow(dead_code))]
pub const ALL: &[&str] = &[
    "wal.append",
    "wal.sync",
    "wal.switch",
    "wal.sync_retired",
    "wal.sync_dir",
    "wal.reuse",
    "manifest.append",
    "manifest.sync",
    "current.rename",
    "current.sync_dir",
    "sst.finish",
    "sst.sync_dir",
    "blob.sync",
    "blob.sync_dir",
    "flush.install",
    "compaction.sync_dir",
    "compaction.install",
    "compaction.delete",
    "obsolete.delete",
    "open.install",
    "open.delete",
    "checkpoint.table",
    "checkpoint.manifest",
    "checkpoint.rename",
    "backup.table",
    "backup.meta",
    "backup.meta_rename",
    "ingest.copy",
    "ingest.install",
    "txn.marker",
    "options.sync",
    "options.rename",
];

#[cfg(feature = "kill-points")]
pub use imp::*;

#[cfg(feature = "kill-points")]
mod imp {
    use std::collections::BTreeMap;
    use std::io::Write;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard};

    /// What a firing point does.
    #[derive(Clone)]
    pub enum Action {
        /// `std::process::abort()`: the process dies as if killed.
        Abort,
        /// Calls the hook with the point's name, then returns (the engine goes on). The point
        /// set is disarmed first, so a configuration fires at most once.
        Hook(Arc<dyn Fn(&'static str) + Send + Sync>),
    }

    struct Config {
        /// (name or "*", probability in [0, 1]).
        points: Vec<(String, f64)>,
        rng: u64,
        action: Action,
        log: Option<PathBuf>,
        armed: bool,
    }

    #[derive(Default)]
    struct State {
        config: Option<Config>,
        hits: BTreeMap<&'static str, u64>,
        fired: BTreeMap<&'static str, u64>,
    }

    static ENABLED: AtomicBool = AtomicBool::new(false);
    static STATE: Mutex<Option<State>> = Mutex::new(None);

    fn state() -> MutexGuard<'static, Option<State>> {
        // A panic while holding the lock leaves plain counters behind: keep using them.
        STATE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Parses `name=p,name=p,...`; `*` matches every point.
    pub fn parse_spec(spec: &str) -> Result<Vec<(String, f64)>, String> {
        let mut out = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, p) =
                part.split_once('=').ok_or_else(|| format!("kill point {part:?}: want name=p"))?;
            let p: f64 = p.trim().parse().map_err(|_| format!("kill point {part:?}: bad p"))?;
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("kill point {part:?}: p must be in [0, 1]"));
            }
            let name = name.trim();
            if name != "*" && !super::ALL.contains(&name) {
                return Err(format!("unknown kill point {name:?}; known: {:?}", super::ALL));
            }
            out.push((name.to_string(), p));
        }
        Ok(out)
    }

    /// Installs a configuration (replacing any) and starts counting hits.
    pub fn configure(points: Vec<(String, f64)>, seed: u64, action: Action, log: Option<PathBuf>) {
        let mut st = state();
        let st = st.get_or_insert_with(State::default);
        st.config = Some(Config { points, rng: seed | 1, action, log, armed: true });
        ENABLED.store(true, Ordering::SeqCst);
    }

    /// Reads `STRATA_KILL_POINTS`, `STRATA_KILL_POINTS_SEED` and `STRATA_KILL_POINTS_LOG` and
    /// configures [`Action::Abort`]. Returns whether a configuration was installed.
    pub fn configure_from_env() -> Result<bool, String> {
        let Ok(spec) = std::env::var("STRATA_KILL_POINTS") else { return Ok(false) };
        let points = parse_spec(&spec)?;
        let seed = match std::env::var("STRATA_KILL_POINTS_SEED") {
            Ok(s) => s.parse().map_err(|_| format!("STRATA_KILL_POINTS_SEED={s:?}"))?,
            Err(_) => u64::from(std::process::id()),
        };
        let log = std::env::var_os("STRATA_KILL_POINTS_LOG").map(PathBuf::from);
        configure(points, seed, Action::Abort, log);
        Ok(true)
    }

    /// Only counts hits from now on (no point fires).
    pub fn count_only() {
        let mut st = state();
        let st = st.get_or_insert_with(State::default);
        if let Some(c) = &mut st.config {
            c.armed = false;
        }
        ENABLED.store(true, Ordering::SeqCst);
    }

    /// Forgets the configuration and the counters; points cost nothing again.
    pub fn reset() {
        ENABLED.store(false, Ordering::SeqCst);
        *state() = None;
    }

    /// Hits per point since the last [`reset`].
    pub fn hits() -> Vec<(&'static str, u64)> {
        state().as_ref().map(|s| s.hits.iter().map(|(k, v)| (*k, *v)).collect()).unwrap_or_default()
    }

    /// Firings per point since the last [`reset`].
    pub fn fired() -> Vec<(&'static str, u64)> {
        state()
            .as_ref()
            .map(|s| s.fired.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default()
    }

    /// Called by `kill_point!`.
    pub fn hit(name: &'static str) {
        if !ENABLED.load(Ordering::Relaxed) {
            return;
        }
        let mut guard = state();
        let Some(st) = guard.as_mut() else { return };
        *st.hits.entry(name).or_insert(0) += 1;
        let Some(cfg) = st.config.as_mut() else { return };
        if !cfg.armed {
            return;
        }
        let p = cfg
            .points
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| cfg.points.iter().find(|(n, _)| n == "*"))
            .map_or(0.0, |(_, p)| *p);
        if p <= 0.0 {
            return;
        }
        cfg.rng ^= cfg.rng << 13;
        cfg.rng ^= cfg.rng >> 7;
        cfg.rng ^= cfg.rng << 17;
        let draw = (cfg.rng >> 11) as f64 / (1u64 << 53) as f64;
        if draw >= p {
            return;
        }
        *st.fired.entry(name).or_insert(0) += 1;
        if let Some(log) = &cfg.log {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
                let _ = writeln!(f, "{name}");
            }
        }
        match cfg.action.clone() {
            Action::Abort => std::process::abort(),
            Action::Hook(h) => {
                cfg.armed = false;
                drop(guard);
                h(name);
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::sync::atomic::AtomicU64;

        #[test]
        fn spec_parsing() {
            assert_eq!(
                parse_spec("wal.sync=0.5, *=0").unwrap(),
                vec![("wal.sync".to_string(), 0.5), ("*".to_string(), 0.0)]
            );
            assert!(parse_spec("nope=0.1").is_err());
            assert!(parse_spec("wal.sync=2").is_err());
            assert!(parse_spec("wal.sync").is_err());
        }

        #[test]
        fn hook_fires_once_and_counts() {
            static CALLS: AtomicU64 = AtomicU64::new(0);
            configure(
                vec![("wal.append".into(), 1.0)],
                7,
                Action::Hook(Arc::new(|_| {
                    CALLS.fetch_add(1, Ordering::SeqCst);
                })),
                None,
            );
            crate::kill_point!("wal.sync");
            crate::kill_point!("wal.append");
            crate::kill_point!("wal.append");
            assert_eq!(CALLS.load(Ordering::SeqCst), 1);
            assert!(hits().iter().any(|&(n, c)| n == "wal.append" && c >= 2));
            assert_eq!(fired(), vec![("wal.append", 1)]);
            reset();
            assert!(hits().is_empty());
        }
    }
}
