//! Checking a recovered DB against the oracle.

use std::collections::HashMap;

use strata::{Db, IteratorMode};

use crate::expected::{observe, ExpectedState, KeyState, Observed};
use crate::value::{decode_value, is_counter, key, parse_key, VERSION_COLUMN};

/// Reads every key with `get`, then scans the DB with an iterator and checks that the scan
/// agrees (same values, no key the harness never wrote). Returns the observations and the
/// disagreements found by the scan.
pub fn read_all(db: &Db, keys: u32) -> Result<(Vec<Observed>, Vec<String>), strata::Error> {
    let mut obs = Vec::with_capacity(keys as usize);
    for i in 0..keys {
        obs.push(observe(i, db.get(key(i))?.as_deref()));
    }
    let mut problems = Vec::new();
    let mut seen = vec![false; keys as usize];
    for item in db.iterator(IteratorMode::Start) {
        let (k, v) = item?;
        match parse_key(&k).filter(|&i| i < keys) {
            Some(i) => {
                seen[i as usize] = true;
                let o = observe(i, Some(&v));
                if o != obs[i as usize] {
                    problems.push(format!(
                        "key {i}: iterator returns {o:?}, get returns {:?}",
                        obs[i as usize]
                    ));
                }
            }
            None => problems.push(format!("iterator returns a key never written: {k:?}")),
        }
    }
    for i in 0..keys {
        if !seen[i as usize] && obs[i as usize] != Observed::Absent {
            problems.push(format!("key {i}: get finds it, the iterator skips it"));
        }
    }
    // An entity's version column survives with its default column (a value key's default
    // column names its version; a counter's is changed by merges, so only read).
    for i in 0..keys {
        let Some(cols) = db.get_entity(key(i))? else { continue };
        let Some(version) = cols.get(VERSION_COLUMN) else { continue };
        if is_counter(i) {
            continue;
        }
        let default = cols.default_value().unwrap_or_default();
        match decode_value(default) {
            Ok((_, v)) if v.to_le_bytes() == version => {}
            other => problems.push(format!(
                "key {i}: entity's version column {version:?} does not match its default \
                 column ({other:?})"
            )),
        }
    }
    // Every table whose checksum the MANIFEST records still has those bytes.
    if let Err(e) = db.verify_file_checksums() {
        problems.push(format!("verify_file_checksums: {e}"));
    }
    // Every write went to both families in one batch: they must agree after any crash.
    if let Some(cf) = db.cf_handle(crate::SHADOW_CF) {
        for i in 0..keys {
            let o = observe(i, db.get_cf(&cf, key(i))?.as_deref());
            if o != obs[i as usize] {
                problems.push(format!(
                    "key {i}: family {} holds {o:?}, default {:?} (a batch torn across families)",
                    crate::SHADOW_CF,
                    obs[i as usize]
                ));
            }
        }
    }
    Ok((obs, problems))
}

/// The outcome of checking that every acknowledged write survived.
#[derive(Debug, Default, Clone)]
pub struct AckedReport {
    pub keys: u64,
    /// Keys found in an older state than the committed one (an acknowledged write is gone).
    pub lost: u64,
    /// Keys holding garbage, a value from the future, or a state no write produced.
    pub wrong: u64,
    /// Batches found partly applied.
    pub torn_batches: u64,
    /// Pending operations found applied / not applied.
    pub pending_new: u64,
    pub pending_old: u64,
    pub messages: Vec<String>,
}

impl AckedReport {
    pub fn violations(&self) -> u64 {
        self.lost + self.wrong + self.torn_batches
    }
}

/// The state a key is in after it was observed as `o` (for the next round of the oracle).
pub fn state_from_observed(i: u32, o: Observed, fallback: KeyState) -> KeyState {
    match o {
        Observed::Absent => KeyState { exists: false, version: fallback.version, counter: 0 },
        Observed::Value(v) => KeyState { exists: true, version: v, counter: 0 },
        Observed::Counter(c) if is_counter(i) => {
            KeyState { exists: true, version: fallback.version, counter: c }
        }
        _ => fallback,
    }
}

/// Checks the observations against the oracle: committed keys must match exactly, pending keys
/// may be old or new, and a batch must be all old or all new. With `resolve`, the oracle is
/// updated to what was found (pending operations settle).
pub fn check_acked(
    state: &ExpectedState,
    obs: &[Observed],
    resolve: bool,
) -> std::io::Result<AckedReport> {
    let mut rep = AckedReport { keys: obs.len() as u64, ..AckedReport::default() };
    // batch id -> (keys found old, keys found new, what each key showed)
    let mut batches: HashMap<u64, (u32, u32, Vec<String>)> = HashMap::new();
    for (i, &o) in obs.iter().enumerate() {
        let i = i as u32;
        let rec = state.get(i);
        let old = rec.state.observed(i);
        let new = rec.pending_state(i);
        let settled = if o == old {
            if let Some(n) = new {
                if n.observed(i) != old {
                    rep.pending_old += 1;
                    let b = batches.entry(rec.batch).or_default();
                    b.0 += 1;
                    b.2.push(format!("key {i} {:?}: old {old:?}", rec.pending));
                }
            }
            rec.state
        } else if let Some(n) = new.filter(|n| n.observed(i) == o) {
            rep.pending_new += 1;
            let b = batches.entry(rec.batch).or_default();
            b.1 += 1;
            b.2.push(format!("key {i} {:?}: new {o:?}", rec.pending));
            n
        } else {
            let lost = match (o, old) {
                (Observed::Absent, _) => true,
                (Observed::Value(v), _) => v < rec.state.version,
                _ => false,
            };
            let what = if lost { "acknowledged write lost" } else { "wrong value" };
            if lost {
                rep.lost += 1;
            } else {
                rep.wrong += 1;
            }
            if rep.messages.len() < 20 {
                rep.messages.push(format!(
                    "key {i}: {what}: found {o:?}, committed {old:?}, pending {:?} -> {:?}",
                    rec.pending,
                    new.map(|n| n.observed(i))
                ));
            }
            state_from_observed(i, o, KeyState { version: rec.issued, ..rec.state })
        };
        if resolve {
            state.resolve(i, settled)?;
        }
    }
    for (b, (old, new, keys)) in batches {
        if old > 0 && new > 0 {
            rep.torn_batches += 1;
            if rep.messages.len() < 20 {
                rep.messages.push(format!(
                    "batch {b:#x} torn: {old} keys without it, {new} keys with it ({})",
                    keys.join("; ")
                ));
            }
        }
    }
    if resolve {
        state.sync()?;
    }
    Ok(rep)
}

/// Percentiles of a list of durations in microseconds: (p50, p99, max).
pub fn percentiles(v: &[u64]) -> (u64, u64, u64) {
    if v.is_empty() {
        return (0, 0, 0);
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), s[s.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expected::OpKind;

    #[test]
    fn classifies_lost_wrong_pending_and_torn() {
        let s = ExpectedState::in_memory(8);
        // Key 0 committed at version 1, then 2.
        s.mark(0, OpKind::Put, 1).unwrap();
        s.commit(0).unwrap();
        s.mark(0, OpKind::Put, 2).unwrap();
        s.commit(0).unwrap();
        // Keys 1 and 2 pending in one batch.
        s.mark(1, OpKind::Put, 3).unwrap();
        s.mark(2, OpKind::Put, 3).unwrap();
        // Key 3 (a counter) committed with one merge.
        s.mark(3, OpKind::Merge, 4).unwrap();
        s.commit(3).unwrap();
        let c = s.get(3).state.counter;

        let ok = [
            Observed::Value(2),
            Observed::Value(1),
            Observed::Value(1),
            Observed::Counter(c),
            Observed::Absent,
            Observed::Absent,
            Observed::Absent,
            Observed::Absent,
        ];
        let r = check_acked(&s, &ok, false).unwrap();
        assert_eq!((r.lost, r.wrong, r.torn_batches, r.pending_new), (0, 0, 0, 2));

        let mut bad = ok;
        bad[0] = Observed::Value(1); // an acknowledged write lost
        bad[2] = Observed::Absent; // batch half applied
        bad[3] = Observed::Counter(c ^ 1); // wrong counter
        bad[4] = Observed::Garbage;
        let r = check_acked(&s, &bad, false).unwrap();
        assert_eq!((r.lost, r.wrong, r.torn_batches), (1, 2, 1), "{:?}", r.messages);
    }
}
