//! Crashes during two-phase commit: a `TransactionDb` on `MemFs` behind `FaultFs` prepares,
//! commits and rolls back named transactions (every write synced, so the model is exact),
//! with plain writes between them and memtables small enough that WALs switch and flush while
//! transactions are prepared. The filesystem is cut off at a random point (a kill point of the
//! WAL or of a transaction record, or the Nth filesystem operation), the process crashes
//! (power loss, torn power loss or a kill), and the reopened DB must show:
//! - every acknowledged prepare not resolved since among `prepared_transactions`, with its
//!   writes, none of them visible and its keys locked;
//! - every acknowledged commit visible and no longer prepared, every acknowledged rollback
//!   gone; the operation the cut interrupted either done or not (never half);
//! - every acknowledged plain write.
//!
//! Then the recovered transactions are committed, and after one more reopen nothing is
//! prepared and every committed write is there.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::Rng;
use strata::env::{CrashMode, FaultFs, FileSystem, MemFs};
use strata::{
    ErrorKind, Options, Transaction, TransactionDb, TransactionDbOptions, TransactionOptions,
    WriteOptions,
};

/// What the model knows of a transaction once the run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Prepared,
    Committed,
    RolledBack,
    /// Its prepare was interrupted: prepared, or nothing.
    PrepareCut,
    /// Its commit was interrupted: committed, or still prepared.
    CommitCut,
    /// Its rollback was interrupted: rolled back, or still prepared.
    RollbackCut,
}

fn writes_of(name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    ["a", "b"]
        .iter()
        .map(|s| (format!("{name}-{s}").into_bytes(), name.as_bytes().to_vec()))
        .collect()
}

fn open(fs: Arc<dyn FileSystem>) -> Result<TransactionDb, String> {
    let o =
        Options { fs, create_if_missing: true, write_buffer_size: 8 << 10, ..Options::default() };
    let mut t = TransactionDbOptions::new();
    t.set_default_lock_timeout(0);
    TransactionDb::open(&o, &t, "/db").map_err(|e| format!("open: {e}"))
}

/// One cycle (module docs); `arm` cuts the filesystem off at the step it is called, `crash`
/// crashes it (told whether an operation failed) and says how. Returns how many prepared
/// transactions were recovered.
pub(crate) fn cycle(
    rng: &mut StdRng,
    mem: &MemFs,
    fault: &FaultFs,
    arm: &mut dyn FnMut(&mut StdRng),
    crash: &mut dyn FnMut(&mut StdRng, bool) -> CrashMode,
) -> Result<usize, String> {
    let db = open(Arc::new(fault.clone()))?;
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    let mut fates: BTreeMap<String, Fate> = BTreeMap::new();
    let mut plain: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut plain_cut: Option<(Vec<u8>, Vec<u8>)> = None;
    let mut live: Vec<(String, Transaction<'_, TransactionDb>)> = Vec::new();
    let steps = rng.gen_range(30..150);
    let cut_at = rng.gen_range(5..steps);
    let mut interrupted = false;
    for step in 0..steps {
        if step == cut_at {
            arm(rng);
        }
        let failed = match rng.gen_range(0..5) {
            0 | 1 => {
                let name = format!("t{step:03}");
                let t = db.transaction_opt(&sync, &TransactionOptions::new());
                let r = (|| {
                    for (k, v) in writes_of(&name) {
                        t.put(k, v)?;
                    }
                    t.set_name(name.as_bytes())?;
                    t.prepare()
                })();
                let ok = r.is_ok();
                fates.insert(name.clone(), if ok { Fate::Prepared } else { Fate::PrepareCut });
                if ok {
                    live.push((name, t));
                }
                !ok
            }
            2 if !live.is_empty() => {
                let (name, t) = live.swap_remove(rng.gen_range(0..live.len()));
                let ok = t.commit().is_ok();
                fates.insert(name, if ok { Fate::Committed } else { Fate::CommitCut });
                !ok
            }
            3 if !live.is_empty() => {
                let (name, t) = live.swap_remove(rng.gen_range(0..live.len()));
                let ok = t.rollback().is_ok();
                fates.insert(name, if ok { Fate::RolledBack } else { Fate::RollbackCut });
                !ok
            }
            _ => {
                let (k, v) =
                    (format!("p{step:03}").into_bytes(), vec![b'x'; rng.gen_range(1..400)]);
                let ok = db.put_opt(&k, &v, &sync).is_ok();
                if ok {
                    plain.insert(k, v);
                } else {
                    plain_cut = Some((k, v));
                }
                !ok
            }
        };
        if failed {
            interrupted = true;
            break;
        }
    }
    drop(live);
    drop(db);
    let mode = crash(rng, interrupted);

    let db = open(Arc::new(mem.clone())).map_err(|e| format!("{mode:?}: re{e}"))?;
    let recovered = db.prepared_transactions();
    let mut prepared: BTreeMap<String, &Transaction<'_, TransactionDb>> = BTreeMap::new();
    for t in &recovered {
        let name = String::from_utf8_lossy(&t.get_name().unwrap_or_default()).into_owned();
        prepared.insert(name, t);
    }
    let check = |what: String| format!("{mode:?}: {what}");
    for (name, fate) in &fates {
        let is_prepared = prepared.contains_key(name);
        let visible: Vec<bool> = writes_of(name)
            .iter()
            .map(|(k, v)| db.get(k).map(|g| g.as_deref() == Some(&v[..])))
            .collect::<Result<_, _>>()
            .map_err(|e| check(format!("get: {e}")))?;
        let all = visible.iter().all(|v| *v);
        let none = visible.iter().all(|v| !*v);
        if !all && !none {
            return Err(check(format!("{name}: part of its writes are visible")));
        }
        let ok = match fate {
            Fate::Prepared => is_prepared && none,
            Fate::Committed => !is_prepared && all,
            Fate::RolledBack => !is_prepared && none,
            Fate::PrepareCut | Fate::RollbackCut => none,
            Fate::CommitCut => (is_prepared && none) || (!is_prepared && all),
        };
        if !ok {
            return Err(check(format!(
                "{name} ({fate:?}): prepared after the crash: {is_prepared}, its writes visible: \
                 {all}"
            )));
        }
        if let Some(t) = prepared.get(name) {
            for (k, v) in writes_of(name) {
                let seen = t.get(&k).map_err(|e| check(format!("read through {name}: {e}")))?;
                if seen.as_deref() != Some(&v[..]) {
                    return Err(check(format!("recovered {name} does not hold its writes")));
                }
                // Its locks are held again.
                match db.put(&k, b"intruder") {
                    Err(e) if e.kind() == ErrorKind::TimedOut => {}
                    other => return Err(check(format!("{name}'s key was not locked: {other:?}"))),
                }
            }
        }
    }
    for name in prepared.keys() {
        if !fates.contains_key(name) {
            return Err(check(format!("{name} is prepared but was never prepared")));
        }
    }
    for (k, v) in &plain {
        if db.get(k).map_err(|e| check(format!("get: {e}")))?.as_ref() != Some(v) {
            return Err(check(format!(
                "acknowledged write {:?} is lost",
                String::from_utf8_lossy(k)
            )));
        }
    }
    if let Some((k, v)) = &plain_cut {
        let got = db.get(k).map_err(|e| check(format!("get: {e}")))?;
        if got.is_some() && got.as_ref() != Some(v) {
            return Err(check("the interrupted write left another value".into()));
        }
    }
    // Resolve them all, then nothing is prepared after a reopen.
    let names: Vec<String> = prepared.keys().cloned().collect();
    drop(prepared);
    for t in recovered {
        t.commit().map_err(|e| check(format!("commit a recovered transaction: {e}")))?;
    }
    drop(db);
    let db = open(Arc::new(mem.clone())).map_err(|e| check(format!("third {e}")))?;
    if !db.prepared_transactions().is_empty() {
        return Err(check("transactions committed after the crash are prepared again".into()));
    }
    for name in &names {
        for (k, v) in writes_of(name) {
            if db.get(&k).map_err(|e| check(format!("get: {e}")))? != Some(v) {
                return Err(check(format!("{name}, committed after the crash, is lost")));
            }
        }
    }
    Ok(names.len())
}
