//! Compaction filters: user code that drops or rewrites values while flushes and compactions
//! write tables (garbage collection of application-level tombstones, TTL expiry, schema
//! migrations).
//!
//! Contract:
//! - A filter is called only for a *value* entry (not a deletion, merge operand or range
//!   tombstone) that is the newest entry of its key which **no live snapshot can see**: its
//!   sequence number is above every live snapshot's. So a filter never changes what a snapshot
//!   reads; entries older than a snapshot are kept as they are, and filtered by a later
//!   compaction once the snapshot is released.
//! - [`Decision::Remove`] turns the entry into a deletion at the same sequence number, so older
//!   versions of the key (in levels below the output) stay hidden; where nothing older can
//!   exist, the deletion itself is dropped as any other would be.
//! - [`Decision::Change`] replaces the value; the key and its sequence number are kept.
//! - A wide-column entity (`crate::wide_columns`) in the same place goes to
//!   [`CompactionFilter::filter_entity`] instead (RocksDB's `FilterV3` for an entity), which
//!   keeps it unless overridden; it may remove it, replace it with a plain value or with other
//!   columns ([`EntityDecision`]).
//! - A factory makes one filter per flush or (sub)compaction, used by one thread; the filter
//!   may keep state across the calls of that run. Calls come in key order within a run.
//! - A filter must be deterministic for a given key and value if the application relies on a
//!   key staying removed: a value it keeps may be presented again by a later compaction.
//! - A filter runs on a flush or compaction thread of the DB. It may read the DB (`get`, as a
//!   Redis-style server does to judge sub-keys by their key's metadata) but must not write to
//!   it, wait for its flushes or compactions, or hold the last handle to it (keep a weak one):
//!   closing a DB joins those threads.
//!
//! The filter belongs to a column family (`Options::compaction_filter_factory`, or the closure
//! form `Options::set_compaction_filter`); `Options::ttl`-style expiry is built on it
//! (`DbWithTtl`).

use std::sync::Arc;

/// What to do with one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep the entry unchanged.
    Keep,
    /// Remove the entry (it becomes a deletion at its sequence number).
    Remove,
    /// Replace the value.
    Change(Vec<u8>),
}

/// The `rocksdb` crate's decision (`rocksdb::CompactionDecision`), whose replacement value is
/// a static slice; it converts into a [`Decision`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionDecision {
    /// Keep the entry unchanged.
    Keep,
    /// Remove the entry.
    Remove,
    /// Replace the value.
    Change(&'static [u8]),
}

impl From<CompactionDecision> for Decision {
    fn from(d: CompactionDecision) -> Decision {
        match d {
            CompactionDecision::Keep => Decision::Keep,
            CompactionDecision::Remove => Decision::Remove,
            CompactionDecision::Change(v) => Decision::Change(v.to_vec()),
        }
    }
}

/// What to do with one wide-column entity ([`CompactionFilter::filter_entity`]; RocksDB's
/// `FilterV3` decisions for an entity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntityDecision {
    /// Keep the entity unchanged.
    Keep,
    /// Remove the entry (it becomes a deletion at its sequence number).
    Remove,
    /// Replace the entity with a plain value (RocksDB's `kChangeValue`).
    ChangeValue(Vec<u8>),
    /// Replace its columns (RocksDB's `kChangeWideColumnEntity`).
    ChangeEntity(crate::wide_columns::WideColumns),
}

/// Why a table file is being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFileCreationReason {
    /// A memtable flush.
    Flush,
    /// A compaction (automatic or manual).
    Compaction,
    /// A memtable written while replaying the WAL at open.
    Recovery,
}

/// What a factory knows about the run it makes a filter for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionFilterContext {
    /// Every table file of the family is an input (a full compaction).
    pub is_full_compaction: bool,
    /// Started by `compact_range`/`compact_files`.
    pub is_manual_compaction: bool,
    /// The family's id (`ColumnFamily::id`).
    pub column_family_id: u32,
    /// Flush, compaction or recovery.
    pub reason: TableFileCreationReason,
}

/// Decides, value by value, what a flush or compaction keeps.
pub trait CompactionFilter: Send {
    /// The fate of `value` of user key `key`, written to `level`.
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision;

    /// The fate of the wide-column entity `columns` of user key `key`, written to `level`.
    /// Default: kept, as RocksDB's default `FilterV3` keeps entities without showing them
    /// to `FilterV2`.
    fn filter_entity(
        &mut self,
        level: u32,
        key: &[u8],
        columns: &crate::wide_columns::WideColumns,
    ) -> EntityDecision {
        let _ = (level, key, columns);
        EntityDecision::Keep
    }

    /// The filter's name, for the info LOG.
    fn name(&self) -> &str;
}

/// Makes a [`CompactionFilter`] for each flush or (sub)compaction.
pub trait CompactionFilterFactory: Send + Sync {
    /// A filter for the run described by `ctx`.
    fn create(&self, ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter>;

    /// The factory's name, for the info LOG and `Options` dumps.
    fn name(&self) -> &str;

    /// Whether runs of this kind are filtered at all. Default: every kind.
    fn should_filter_table_file_creation(&self, reason: TableFileCreationReason) -> bool {
        let _ = reason;
        true
    }
}

/// The closure form: one shared, stateless function (`Options::set_compaction_filter`).
pub(crate) struct FnFilterFactory<F> {
    name: String,
    f: Arc<F>,
}

impl<F> FnFilterFactory<F>
where
    F: Fn(u32, &[u8], &[u8]) -> Decision + Send + Sync + 'static,
{
    pub(crate) fn new(name: &str, f: F) -> Self {
        FnFilterFactory { name: name.to_string(), f: Arc::new(f) }
    }
}

struct FnFilter<F> {
    name: String,
    f: Arc<F>,
}

impl<F> CompactionFilter for FnFilter<F>
where
    F: Fn(u32, &[u8], &[u8]) -> Decision + Send + Sync + 'static,
{
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision {
        (self.f)(level, key, value)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl<F> CompactionFilterFactory for FnFilterFactory<F>
where
    F: Fn(u32, &[u8], &[u8]) -> Decision + Send + Sync + 'static,
{
    fn create(&self, _ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
        Box::new(FnFilter { name: self.name.clone(), f: self.f.clone() })
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A factory's filter for a run of kind `reason`, when it filters such runs.
pub(crate) fn filter_for(
    factory: Option<&dyn CompactionFilterFactory>,
    ctx: &CompactionFilterContext,
) -> Option<Box<dyn CompactionFilter>> {
    factory.filter(|f| f.should_filter_table_file_creation(ctx.reason)).map(|f| f.create(ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closure_factory_makes_filters_that_call_the_closure() {
        let fac = FnFilterFactory::new("drop-x", |level, k: &[u8], v: &[u8]| {
            if k.starts_with(b"x") {
                Decision::Remove
            } else if level == 3 {
                Decision::Change(v.repeat(2))
            } else {
                Decision::Keep
            }
        });
        let ctx = CompactionFilterContext {
            is_full_compaction: false,
            is_manual_compaction: false,
            column_family_id: 0,
            reason: TableFileCreationReason::Compaction,
        };
        let mut f = filter_for(Some(&fac), &ctx).unwrap();
        assert_eq!(f.name(), "drop-x");
        assert_eq!(f.filter(1, b"xa", b"v"), Decision::Remove);
        assert_eq!(f.filter(3, b"a", b"v"), Decision::Change(b"vv".to_vec()));
        assert_eq!(f.filter(1, b"a", b"v"), Decision::Keep);
    }

    #[test]
    fn a_factory_can_decline_a_kind_of_run() {
        struct CompactionsOnly;
        impl CompactionFilterFactory for CompactionsOnly {
            fn create(&self, _: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
                Box::new(FnFilter {
                    name: "n".into(),
                    f: Arc::new(|_, _: &[u8], _: &[u8]| Decision::Keep),
                })
            }
            fn name(&self) -> &str {
                "compactions-only"
            }
            fn should_filter_table_file_creation(&self, r: TableFileCreationReason) -> bool {
                r == TableFileCreationReason::Compaction
            }
        }
        let mut ctx = CompactionFilterContext {
            is_full_compaction: false,
            is_manual_compaction: false,
            column_family_id: 0,
            reason: TableFileCreationReason::Flush,
        };
        assert!(filter_for(Some(&CompactionsOnly), &ctx).is_none());
        ctx.reason = TableFileCreationReason::Compaction;
        assert!(filter_for(Some(&CompactionsOnly), &ctx).is_some());
        assert!(filter_for(None, &ctx).is_none());
    }
}
