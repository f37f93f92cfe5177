//! `--engine=memory`: a `BTreeMap` behind a lock, kept per DB path for the life of the
//! process. It exists to test the tool itself; it measures nothing about storage.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use anyhow::{anyhow, bail, Result};

use super::merge::MergeKind;
use super::{
    Batch, BatchOp, Bounds, Engine, EngineIter, EngineSnapshot, Operands, ReadOpts, WriteOpts,
};
use crate::config::Config;

// The engine-class flags applied here are listed in `crate::engine_kind::MEMORY_HONOURED_FLAGS`.

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn registry() -> &'static Mutex<HashMap<PathBuf, Arc<RwLock<Map>>>> {
    static R: OnceLock<Mutex<HashMap<PathBuf, Arc<RwLock<Map>>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

pub fn open(cfg: &Config) -> Result<Box<dyn Engine>> {
    let mut r = registry().lock().map_err(|_| anyhow!("memory engine registry poisoned"))?;
    let map = r.entry(cfg.db.clone()).or_default().clone();
    let merge = match cfg.flags.merge_operator.as_str() {
        "" => None,
        name => Some(MergeKind::parse(name)?),
    };
    Ok(Box::new(MemoryEngine { map, merge }))
}

pub fn exists(cfg: &Config) -> bool {
    registry().lock().is_ok_and(|r| r.contains_key(&cfg.db))
}

pub fn destroy(cfg: &Config) -> Result<()> {
    let mut r = registry().lock().map_err(|_| anyhow!("memory engine registry poisoned"))?;
    r.remove(&cfg.db);
    Ok(())
}

struct MemorySnapshot(Map);

impl EngineSnapshot for MemorySnapshot {
    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        Ok(super::copy_found(self.0.get(key), out))
    }
}

struct MemoryEngine {
    map: Arc<RwLock<Map>>,
    merge: Option<MergeKind>,
}

impl MemoryEngine {
    fn write_map(&self) -> Result<std::sync::RwLockWriteGuard<'_, Map>> {
        self.map.write().map_err(|_| anyhow!("memory engine lock poisoned"))
    }

    fn read_map(&self) -> Result<std::sync::RwLockReadGuard<'_, Map>> {
        self.map.read().map_err(|_| anyhow!("memory engine lock poisoned"))
    }

    fn apply(&self, m: &mut Map, op: BatchOp, key: &[u8], value: &[u8]) -> Result<()> {
        match op {
            BatchOp::Put => {
                m.insert(key.to_vec(), value.to_vec());
            }
            BatchOp::Delete => {
                m.remove(key);
            }
            BatchOp::Merge => {
                let Some(kind) = self.merge else { bail!("merge without --merge_operator") };
                let Some(new) = kind.apply(m.get(key).map(Vec::as_slice), value) else {
                    bail!(
                        "merge of {:?} into key {:?}: the {kind:?} operator cannot apply it",
                        String::from_utf8_lossy(value),
                        String::from_utf8_lossy(key)
                    )
                };
                m.insert(key.to_vec(), new);
            }
            BatchOp::DeleteRange => {
                if key < value {
                    let doomed: Vec<Vec<u8>> =
                        m.range(key.to_vec()..value.to_vec()).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        m.remove(&k);
                    }
                }
            }
        }
        Ok(())
    }
}

impl Engine for MemoryEngine {
    fn put(&self, key: &[u8], value: &[u8], _wo: &WriteOpts) -> Result<()> {
        let mut m = self.write_map()?;
        self.apply(&mut m, BatchOp::Put, key, value)
    }

    fn delete(&self, key: &[u8], _wo: &WriteOpts) -> Result<()> {
        let mut m = self.write_map()?;
        self.apply(&mut m, BatchOp::Delete, key, &[])
    }

    fn merge(&self, key: &[u8], value: &[u8], _wo: &WriteOpts) -> Result<()> {
        let mut m = self.write_map()?;
        self.apply(&mut m, BatchOp::Merge, key, value)
    }

    fn write(&self, batch: &Batch, _wo: &WriteOpts) -> Result<()> {
        let mut m = self.write_map()?;
        for (op, k, v) in batch.iter() {
            self.apply(&mut m, op, k, v)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8], _ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool> {
        Ok(super::copy_found(self.read_map()?.get(key), out))
    }

    /// Merges are applied as they are written: a key's value is its one operand (what a
    /// fully compacted LSM gives).
    fn get_merge_operands(
        &self,
        key: &[u8],
        _ro: &ReadOpts,
        _max: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<Operands> {
        out.clear();
        let Some(v) = self.read_map()?.get(key).cloned() else { return Ok(Operands::Missing) };
        out.push(v);
        Ok(Operands::Found)
    }

    /// Values only: a value is one default column (its name empty).
    fn get_entity(&self, key: &[u8], _ro: &ReadOpts) -> Result<Option<u64>> {
        Ok(self.read_map()?.get(key).map(|v| v.len() as u64))
    }

    /// Everything is in memory: the exact entries of the range and their key and value bytes.
    fn approximate_memtable_stats(&self, start: &[u8], end: &[u8]) -> Result<(u64, u64)> {
        if start >= end {
            return Ok((0, 0));
        }
        let m = self.read_map()?;
        Ok(m.range(start.to_vec()..end.to_vec())
            .fold((0, 0), |(n, b), (k, v)| (n + 1, b + (k.len() + v.len()) as u64)))
    }

    /// The exact bytes (keys and values) in each range.
    fn approximate_sizes(
        &self,
        ranges: &[u8],
        key_size: usize,
        sizes: &mut Vec<u64>,
    ) -> Result<()> {
        let m = self.read_map()?;
        sizes.clear();
        for r in ranges.chunks_exact(2 * key_size) {
            let (lo, hi) = (&r[..key_size], &r[key_size..]);
            let n = if lo < hi {
                m.range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)))
                    .map(|(k, v)| (k.len() + v.len()) as u64)
                    .sum()
            } else {
                0
            };
            sizes.push(n);
        }
        Ok(())
    }

    /// A copy of the map: this engine is for tests, whose DBs are small.
    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        Ok(Box::new(MemorySnapshot(self.read_map()?.clone())))
    }

    /// Each range through an iterator of the map (the model has nothing to plan).
    fn multi_scan(
        &self,
        ranges: &[u8],
        key_size: usize,
        settings: &super::MultiScanSettings,
        ro: &ReadOpts,
    ) -> Result<u64> {
        super::scan_with_iterator(self, ranges, key_size, settings.reverse, ro)
    }

    fn new_iterator<'a>(
        &'a self,
        _ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>> {
        Ok(Box::new(MemoryIter {
            map: self.map.clone(),
            lower: bounds.lower.map(<[u8]>::to_vec),
            upper: bounds.upper.map(<[u8]>::to_vec),
            cur: None,
        }))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact_range(&self) -> Result<()> {
        Ok(())
    }

    fn wait_for_compaction(&self) -> Result<()> {
        Ok(())
    }

    fn property(&self, name: &str) -> Result<Option<String>> {
        let m = self.read_map()?;
        Ok(match super::strip_rocksdb_prefix(name) {
            "estimate-num-keys" => Some(m.len().to_string()),
            "num-immutable-mem-table" => Some("0".into()),
            "cur-size-active-mem-table" | "cur-size-all-mem-tables" | "size-all-mem-tables" => {
                Some(m.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>().to_string())
            }
            "num-entries-active-mem-table" => Some(m.len().to_string()),
            "num-entries-imm-mem-tables" => Some("0".into()),
            _ => None,
        })
    }

    fn stats_text(&self) -> Result<String> {
        let m = self.read_map()?;
        Ok(format!("** Memory engine: {} keys (no LSM statistics) **\n", m.len()))
    }

    fn level_stats_text(&self) -> Result<String> {
        Ok("Level Files Size(MB)\n--------------------\n".to_string())
    }

    fn sstables_text(&self) -> Result<String> {
        Ok(String::new())
    }

    fn reset_stats(&self) -> Result<()> {
        Ok(())
    }
}

struct MemoryIter {
    map: Arc<RwLock<Map>>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    cur: Option<(Vec<u8>, Vec<u8>)>,
}

impl MemoryIter {
    fn settle(&mut self, found: Option<(&Vec<u8>, &Vec<u8>)>) -> Option<(Vec<u8>, Vec<u8>)> {
        let (k, v) = found?;
        if self.lower.as_ref().is_some_and(|l| k < l) || self.upper.as_ref().is_some_and(|u| k >= u)
        {
            return None;
        }
        Some((k.clone(), v.clone()))
    }

    fn forward_from(&mut self, from: Bound<Vec<u8>>) {
        let map = self.map.clone();
        let Ok(m) = map.read() else {
            self.cur = None;
            return;
        };
        let found = m.range((from, Bound::Unbounded)).next();
        self.cur = self.settle(found);
    }

    fn backward_from(&mut self, to: Bound<Vec<u8>>) {
        let map = self.map.clone();
        let Ok(m) = map.read() else {
            self.cur = None;
            return;
        };
        let found = m.range((Bound::Unbounded, to)).next_back();
        self.cur = self.settle(found);
    }
}

impl EngineIter for MemoryIter {
    fn seek_to_first(&mut self) {
        let from = self.lower.clone().map_or(Bound::Unbounded, Bound::Included);
        self.forward_from(from);
    }

    fn seek_to_last(&mut self) {
        let to = self.upper.clone().map_or(Bound::Unbounded, Bound::Excluded);
        self.backward_from(to);
    }

    fn seek(&mut self, key: &[u8]) {
        let key = match &self.lower {
            Some(l) if l.as_slice() > key => l.clone(),
            _ => key.to_vec(),
        };
        self.forward_from(Bound::Included(key));
    }

    fn next(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.forward_from(Bound::Excluded(k));
        }
    }

    fn prev(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.backward_from(Bound::Excluded(k));
        }
    }

    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |(k, _)| k.as_slice())
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |(_, v)| v.as_slice())
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}
