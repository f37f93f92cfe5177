//! MEMORY (USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP) and the figures INFO's memory
//! section shows: what the server holds in memory, in the parts Redis reports.
//!
//! `used_memory` here is what the server holds for its data and its clients: the engine's
//! memtables and block cache (one cache for every family: counted once) and the metadata
//! cache in front of them, the connections' buffers (`clients.normal`, each connection's
//! CLIENT LIST `tot-mem`), the script cache's bodies (`lua.caches`), the function libraries'
//! code (`functions.caches`) and the two interpreters' heaps (scripts', functions'). As in Redis, the overhead is what
//! the server held at start (`startup.allocated`) and the clients' and scripts' parts, and
//! the dataset (`dataset.bytes`) the rest: the engine's memory grown since the start. The
//! data themselves live on disk: the dataset is the part of them held in memory, bounded by
//! `--write-buffer-size` and `--block-cache-size`. There is no per-database hash table (keys are found in the engine),
//! so each `db.N` of MEMORY STATS reports no overhead; `keys.count` is the engine's estimate
//! of the metadata records (one per key), which counts keys expired but not yet removed.
//! The process's resident set (`used_memory_rss`) holds more than `used_memory` (the
//! program, its threads' stacks, the allocator's free pages), so the fragmentation ratio
//! starts above 1 on an empty server.
//!
//! The peak is taken whenever the figures are read and by the server's clients' round
//! (`server::tasks`, ten times a second), as Redis's cron samples it.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::args::is;
use super::errors::{NOT_INT, SYNTAX};
use super::info;
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::number::parse_int_strict;

/// What the server holds in memory now (module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct Figures {
    /// Memtables, block cache and metadata cache.
    pub engine: u64,
    /// The connections' buffers and state.
    pub clients: u64,
    /// The scripts' figures.
    pub scripts: crate::script::ScriptMemory,
    /// The most in use since the start, this reading included.
    pub peak: u64,
    /// In use once the server started.
    pub startup: u64,
    /// The process's resident set.
    pub rss: u64,
}

impl Figures {
    /// The figures now; notes the peak.
    pub fn now(sh: &Shared) -> Figures {
        let clients = sh.clients.lock().values().map(|e| e.activity.total_memory()).sum();
        Figures { rss: resident_bytes(), ..Figures::counted(sh, clients) }
    }

    /// The figures but the resident set (0), the connections' part being `clients`; notes
    /// the peak.
    fn counted(sh: &Shared, clients: u64) -> Figures {
        let memtables = info::prop(sh, "strata.size-all-mem-tables");
        // One block cache serves every family: counted once.
        let cache = info::prop_cf(sh, &sh.dbs.first().meta_cf, "strata.block-cache-usage");
        let mut f = Figures {
            engine: memtables + cache + sh.engine().meta_cache.stats().1 as u64,
            clients,
            scripts: sh.scripts.memory(),
            peak: 0,
            startup: sh.stats.memory_startup.load(Ordering::Relaxed),
            rss: 0,
        };
        f.peak = sh.stats.memory_peak.fetch_max(f.used(), Ordering::Relaxed).max(f.used());
        f
    }

    /// Everything counted (Redis's `used_memory`).
    pub fn used(&self) -> u64 {
        let s = &self.scripts;
        self.engine
            + self.clients
            + s.cached_bytes
            + s.library_bytes
            + s.vm_bytes
            + s.functions_vm_bytes
    }

    /// What is not the dataset (Redis's `used_memory_overhead`): what the server held at
    /// start, the connections, the scripts and functions.
    pub fn overhead(&self) -> u64 {
        let s = &self.scripts;
        self.startup + self.clients + s.cached_bytes + s.library_bytes
    }

    /// The rest (Redis's `used_memory_dataset`).
    pub fn dataset(&self) -> u64 {
        self.used().saturating_sub(self.overhead())
    }

    /// The resident set over what is counted (Redis's `mem_fragmentation_ratio`).
    pub fn fragmentation(&self) -> f64 {
        ratio(self.rss, self.used())
    }

    /// The dataset in percent of what grew since the start (Redis's `dataset.percentage`).
    fn dataset_percent(&self) -> f64 {
        let net = self.used().saturating_sub(self.startup).max(1);
        self.dataset() as f64 * 100.0 / net as f64
    }
}

/// Records what the server holds once started (INFO's `used_memory_startup`).
pub fn note_startup(sh: &Shared) {
    let f = Figures::now(sh);
    sh.stats.memory_startup.store(f.used(), Ordering::Relaxed);
}

/// Takes the peak; `clients` is the connections' memory (the clients' round, which walks
/// them anyway, calls it). What is counted now ([`Figures::used`]).
pub fn note_peak(sh: &Shared, clients: u64) -> u64 {
    Figures::counted(sh, clients).used()
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The process's resident set in bytes (`/proc/self/statm`; 0 where there is none).
pub fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(0)
}

/// The machine's memory in bytes (INFO's `total_system_memory`; 0 when unknown).
fn system_memory() -> u64 {
    // SAFETY: sysconf only reads system constants.
    let (pages, page) =
        unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    u64::try_from(pages).unwrap_or(0) * u64::try_from(page).unwrap_or(0)
}

/// A byte count as Redis's `_human` fields write it (`1.50M`).
pub fn human(n: u64) -> String {
    let units = ["B", "K", "M", "G", "T", "P"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n}B")
    } else {
        format!("{v:.2}{}", units[u])
    }
}

/// INFO's memory section (`# Memory` and its fields, Redis 7.0's names).
pub fn info_section(sh: &Shared, t: &mut String) {
    let f = Figures::now(sh);
    let (used, s) = (f.used(), f.scripts);
    let (maxmemory, policy) = {
        let p = sh.params.read();
        let max = p.get("maxmemory").and_then(|v| crate::config::parse_size(v)).unwrap_or(0);
        (max, p.get("maxmemory-policy").cloned().unwrap_or_else(|| "noeviction".into()))
    };
    let system = system_memory();
    let allocator = if cfg!(feature = "mimalloc") { "mimalloc" } else { "libc" };
    let scripts = s.cached_bytes + s.library_bytes;
    let vm_total = s.vm_bytes + s.functions_vm_bytes;
    let lines = [
        ("used_memory", used.to_string()),
        ("used_memory_human", human(used)),
        ("used_memory_rss", f.rss.to_string()),
        ("used_memory_rss_human", human(f.rss)),
        ("used_memory_peak", f.peak.to_string()),
        ("used_memory_peak_human", human(f.peak)),
        ("used_memory_peak_perc", format!("{:.2}%", ratio(used * 100, f.peak))),
        ("used_memory_overhead", f.overhead().to_string()),
        ("used_memory_startup", f.startup.to_string()),
        ("used_memory_dataset", f.dataset().to_string()),
        ("used_memory_dataset_perc", format!("{:.2}%", f.dataset_percent())),
        ("total_system_memory", system.to_string()),
        ("total_system_memory_human", human(system)),
        ("used_memory_lua", s.vm_bytes.to_string()),
        ("used_memory_vm_eval", s.vm_bytes.to_string()),
        ("used_memory_lua_human", human(s.vm_bytes)),
        ("used_memory_scripts_eval", s.cached_bytes.to_string()),
        ("number_of_cached_scripts", sh.scripts.cached_count().to_string()),
        ("number_of_functions", s.functions.to_string()),
        ("number_of_libraries", s.libraries.to_string()),
        ("used_memory_vm_functions", s.functions_vm_bytes.to_string()),
        ("used_memory_vm_total", vm_total.to_string()),
        ("used_memory_vm_total_human", human(vm_total)),
        ("used_memory_functions", s.library_bytes.to_string()),
        ("used_memory_scripts", scripts.to_string()),
        ("used_memory_scripts_human", human(scripts)),
        ("maxmemory", maxmemory.to_string()),
        ("maxmemory_human", human(maxmemory)),
        ("maxmemory_policy", policy),
        ("mem_fragmentation_ratio", format!("{:.2}", f.fragmentation())),
        ("mem_fragmentation_bytes", (i128::from(f.rss) - i128::from(used)).to_string()),
        ("mem_not_counted_for_evict", "0".into()),
        ("mem_replication_backlog", "0".into()),
        ("mem_total_replication_buffers", "0".into()),
        ("mem_clients_slaves", "0".into()),
        ("mem_clients_normal", f.clients.to_string()),
        ("mem_cluster_links", "0".into()),
        ("mem_aof_buffer", "0".into()),
        ("mem_allocator", allocator.into()),
        ("active_defrag_running", "0".into()),
        ("lazyfree_pending_objects", "0".into()),
        ("lazyfreed_objects", sh.stats.lazyfreed.load(Ordering::Relaxed).to_string()),
    ];
    t.push_str("# Memory\r\n");
    for (k, v) in lines {
        let _ = write!(t, "{k}:{v}\r\n");
    }
    t.push_str("\r\n");
}

/// MEMORY <subcommand>.
pub fn memory(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let sub = &a[1];
    if is(sub, "help") && a.len() == 2 {
        let help = [
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a report of memory problems found.",
            "MALLOC-STATS",
            "    Return the memory allocator's own statistics.",
            "PURGE",
            "    Ask the allocator to give its free pages back to the system.",
            "STATS",
            "    Return the server's memory, by the parts it is used for.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return an estimate of the bytes the key's records take (its elements sampled,",
            "    5 by default; 0 samples them all).",
            "HELP",
            "    Print this help.",
        ];
        super::args::reply_help(out, &help);
        return Ok(());
    }
    // Each subcommand's arity is checked before, by the subcommand table
    // (`commands::arity_error`).
    if is(sub, "usage") {
        usage(sh, c, a, out)?;
    } else if is(sub, "stats") {
        stats(sh, out);
    } else if is(sub, "doctor") {
        out.verbatim(&doctor(&Figures::now(sh), sh.clients.lock().len()));
    } else if is(sub, "malloc-stats") {
        match allocator::stats() {
            Some(text) => out.verbatim(&text),
            None => out.bulk(b"Stats not supported for the current allocator"),
        }
    } else if is(sub, "purge") {
        allocator::purge();
        out.ok();
    } else {
        return Err(super::errors::unknown_subcommand(a));
    }
    Ok(())
}

/// MEMORY USAGE key [SAMPLES count].
fn usage(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let samples = match a.len() {
        3 => 5,
        5 if is(&a[3], "samples") => match parse_int_strict(&a[4]) {
            Some(n) if n >= 0 => n as usize,
            _ => return Err(NOT_INT.into()),
        },
        _ => return Err(SYNTAX.into()),
    };
    match crate::types::keys::memory_usage(&sh.keyspace(c.db), &a[2], samples)? {
        Some(n) => out.int(n as i64),
        None => out.null(),
    }
    Ok(())
}

/// MEMORY STATS: Redis 7.0's fields in its order (module doc says what each holds here).
fn stats(sh: &Shared, out: &mut Out) {
    let f = Figures::now(sh);
    let s = f.scripts;
    // Databases with keys (Redis lists only those), and the keys' estimate.
    let mut dbs = Vec::new();
    let mut keys = 0;
    for (db, st) in sh.dbs.each() {
        let n = info::prop_cf(sh, &st.meta_cf, "strata.estimate-num-keys");
        if n > 0 {
            dbs.push(db);
            keys += n;
        }
    }
    let used = f.used();
    let net = used.saturating_sub(f.startup);
    let rss_over = i128::from(f.rss) - i128::from(used);
    let int = |out: &mut Out, k: &str, v: u64| {
        out.bulk(k.as_bytes());
        out.int(i64::try_from(v).unwrap_or(i64::MAX));
    };
    let double = |out: &mut Out, k: &str, v: f64| {
        out.bulk(k.as_bytes());
        out.double(v);
    };
    out.map(27 + dbs.len());
    int(out, "peak.allocated", f.peak);
    int(out, "total.allocated", used);
    int(out, "startup.allocated", f.startup);
    int(out, "replication.backlog", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", f.clients);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", 0);
    int(out, "lua.caches", s.cached_bytes);
    int(out, "functions.caches", s.library_bytes);
    for db in dbs {
        out.bulk(format!("db.{db}").as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", 0);
        int(out, "overhead.hashtable.expires", 0);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", f.overhead());
    int(out, "keys.count", keys);
    int(out, "keys.bytes-per-key", net.checked_div(keys).unwrap_or(0));
    int(out, "dataset.bytes", f.dataset());
    double(out, "dataset.percentage", f.dataset_percent());
    double(out, "peak.percentage", ratio(used * 100, f.peak));
    // The allocator's figures: what it has committed and holds resident (mimalloc's own
    // estimates); the bytes it has handed out are not kept by it, so `allocated` is 0 and the
    // ratios over it too, as Redis reports for an allocator it cannot read.
    let (active, resident) = allocator::committed_and_resident();
    let signed = |a: u64, b: u64| i64::try_from(i128::from(a) - i128::from(b)).unwrap_or(0);
    int(out, "allocator.allocated", 0);
    int(out, "allocator.active", active);
    int(out, "allocator.resident", resident);
    double(out, "allocator-fragmentation.ratio", 0.0);
    int(out, "allocator-fragmentation.bytes", 0);
    double(out, "allocator-rss.ratio", ratio(resident, active));
    out.bulk(b"allocator-rss.bytes");
    out.int(signed(resident, active));
    double(out, "rss-overhead.ratio", ratio(f.rss, resident));
    out.bulk(b"rss-overhead.bytes");
    out.int(signed(f.rss, resident));
    double(out, "fragmentation", f.fragmentation());
    out.bulk(b"fragmentation.bytes");
    out.int(i64::try_from(rss_over).unwrap_or(0));
}

/// Below this much counted memory, the doctor has nothing to judge.
const DOCTOR_MIN_BYTES: u64 = 5 << 20;

/// MEMORY DOCTOR's report: the problems found in `f` (Redis's checks: a peak far above
/// today's use, fragmentation, large client buffers, large script caches), or that none is.
pub fn doctor(f: &Figures, clients: usize) -> String {
    let used = f.used();
    if used < DOCTOR_MIN_BYTES {
        return "This server holds very little in memory (under 5 MB): there is nothing for \
                the memory doctor to judge yet."
            .into();
    }
    let mut found = Vec::new();
    if f.peak > used / 2 * 3 {
        found.push(format!(
            " * Peak memory: the most in use was {} against {} now; the memory freed since \
             may not have gone back to the system, which would show as fragmentation \
             (MEMORY PURGE asks the allocator to give it back).",
            human(f.peak),
            human(used)
        ));
    }
    if f.fragmentation() > 1.4 && f.rss.saturating_sub(used) > 10 << 20 {
        found.push(format!(
            " * Fragmentation: the process's resident set is {} for {} counted ({:.2}x); \
             part of it is the program and its threads, the rest pages the allocator holds \
             free (MEMORY PURGE).",
            human(f.rss),
            human(used),
            f.fragmentation()
        ));
    }
    let per_client = f.clients.checked_div(clients as u64).unwrap_or(0);
    if per_client > 200 << 10 {
        found.push(format!(
            " * Client buffers: {} on average per connection ({} connections); a client \
             reading its replies slowly, or large pipelines, keep them (CLIENT LIST shows \
             each one's `tot-mem`; client-output-buffer-limit bounds them).",
            human(per_client),
            clients
        ));
    }
    if f.scripts.cached_bytes + f.scripts.library_bytes > 100 << 20 {
        found.push(
            " * Scripts: the script cache and function libraries hold over 100 MB; scripts \
             built per call (values in the body instead of ARGV) fill the cache (SCRIPT FLUSH \
             empties it)."
                .into(),
        );
    }
    if found.is_empty() {
        return "No memory problem found: the peak, fragmentation, client buffers and script \
                caches are within bounds."
            .into();
    }
    let mut t = String::from("Memory problems found on this server:\n\n");
    for line in found {
        t.push_str(&line);
        t.push_str("\n\n");
    }
    t
}

/// The allocator's own statistics and purge (mimalloc, the server binary's allocator).
mod allocator {
    #[cfg(feature = "mimalloc")]
    use mimalloc as _;

    #[cfg(feature = "mimalloc")]
    extern "C" {
        fn mi_stats_print_out(
            out: Option<unsafe extern "C" fn(*const std::ffi::c_char, *mut std::ffi::c_void)>,
            arg: *mut std::ffi::c_void,
        );
        fn mi_collect(force: bool);
        fn mi_process_info(
            elapsed_msecs: *mut usize,
            user_msecs: *mut usize,
            system_msecs: *mut usize,
            current_rss: *mut usize,
            peak_rss: *mut usize,
            current_commit: *mut usize,
            peak_commit: *mut usize,
            page_faults: *mut usize,
        );
    }

    /// The memory the allocator has committed and what of it is resident (mimalloc's
    /// estimates; on Linux it estimates the second from the first); zeros without mimalloc.
    pub fn committed_and_resident() -> (u64, u64) {
        #[cfg(feature = "mimalloc")]
        {
            let (mut rss, mut commit) = (0usize, 0usize);
            let null = std::ptr::null_mut();
            // SAFETY: every out-parameter is either null (not wanted) or a live usize.
            unsafe {
                mi_process_info(null, null, null, &raw mut rss, null, &raw mut commit, null, null);
            };
            (commit as u64, rss as u64)
        }
        #[cfg(not(feature = "mimalloc"))]
        (0, 0)
    }

    /// mimalloc's statistics as it prints them; `None` without mimalloc.
    pub fn stats() -> Option<String> {
        #[cfg(feature = "mimalloc")]
        {
            unsafe extern "C" fn append(msg: *const std::ffi::c_char, arg: *mut std::ffi::c_void) {
                // SAFETY: `arg` is the `String` passed below, alive for the call; `msg` is a
                // NUL-terminated string mimalloc owns for the call.
                unsafe {
                    let text = &mut *arg.cast::<String>();
                    text.push_str(&std::ffi::CStr::from_ptr(msg).to_string_lossy());
                }
            }
            let mut text = String::new();
            // SAFETY: mimalloc calls `append` with `arg` during this call only.
            unsafe { mi_stats_print_out(Some(append), std::ptr::from_mut(&mut text).cast()) };
            Some(text)
        }
        #[cfg(not(feature = "mimalloc"))]
        None
    }

    /// Frees what the allocator holds unused back to the system.
    pub fn purge() {
        // SAFETY: a full collection; mimalloc synchronizes with other threads itself.
        #[cfg(feature = "mimalloc")]
        unsafe {
            mi_collect(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(engine: u64, rss: u64, peak: u64) -> Figures {
        Figures { engine, peak, rss, ..Figures::default() }
    }

    #[test]
    fn human_sizes_read_as_redis_writes_them() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(3 << 20), "3.00M");
        assert_eq!(human(5 << 30), "5.00G");
    }

    #[test]
    fn the_doctor_names_each_problem_and_nothing_when_there_is_none() {
        assert!(doctor(&figures(1 << 20, 40 << 20, 1 << 20), 1).contains("very little"));
        let calm = doctor(&figures(100 << 20, 110 << 20, 100 << 20), 10);
        assert!(calm.starts_with("No memory problem found"), "{calm}");
        let peak = doctor(&figures(100 << 20, 110 << 20, 200 << 20), 10);
        assert!(peak.contains("Peak memory") && !peak.contains("Fragmentation"), "{peak}");
        let frag = doctor(&figures(100 << 20, 300 << 20, 100 << 20), 10);
        assert!(frag.contains("Fragmentation") && frag.contains("3.00x"), "{frag}");
        let mut f = figures(100 << 20, 110 << 20, 100 << 20);
        f.clients = 10 << 20;
        let buffers = doctor(&f, 4);
        assert!(buffers.contains("Client buffers: 2.50M"), "{buffers}");
    }

    #[test]
    fn used_memory_is_the_dataset_and_the_overheads() {
        let mut f = figures(1000, 5000, 0);
        f.clients = 10;
        f.scripts.cached_bytes = 20;
        f.scripts.library_bytes = 30;
        f.scripts.vm_bytes = 40;
        assert_eq!((f.overhead(), f.used(), f.dataset()), (60, 1100, 1040));
        assert!((f.fragmentation() - 5000.0 / 1100.0).abs() < 1e-9);
        // The start's memory is overhead; the dataset is what grew since, in percent of it.
        f.startup = 600;
        assert_eq!((f.overhead(), f.dataset()), (660, 440));
        assert!((f.dataset_percent() - 88.0).abs() < 1e-9);
    }
}
