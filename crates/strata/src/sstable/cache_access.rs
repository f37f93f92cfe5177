//! The block cache as the tables use it: [`Cache`], the shareable handle users create
//! (`cache/block_cache.rs`) holding this format's blocks, and [`CacheAccess`], one table
//! cache's view of it under an owner id of its own.

use super::Block;
use crate::cache::{BlockCache, CacheKey};

/// A block cache shared by every `Db` (and every clone) holding it: `strata::Cache`.
pub type Cache = BlockCache<Block>;

/// A block cache as one table cache uses it: the shared cache and this user's owner id.
#[derive(Clone, Debug)]
pub(crate) struct CacheAccess {
    pub cache: Cache,
    pub owner: u64,
}

impl CacheAccess {
    /// Access to `cache` under a fresh owner id.
    pub(crate) fn new(cache: Cache) -> Self {
        CacheAccess { cache, owner: CacheKey::new_owner() }
    }
}
