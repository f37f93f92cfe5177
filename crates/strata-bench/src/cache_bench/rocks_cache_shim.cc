// cache_bench's bridge to RocksDB's block caches (feature `rocksdb`).
//
// RocksDB's C API creates caches but cannot insert into or look up in one, so cache_bench
// reaches `rocksdb::Cache` through these few C functions. Compiled by strata-bench's build
// script against the headers of the RocksDB that librocksdb-sys builds, and linked against
// that crate's static library (see `rocks_cache.rs` for the Rust side).
//
// Contracts:
// - Values are opaque pointers owned by the caller until an insert succeeds; from then on the
//   cache owns them and frees each one exactly once, when its entry is gone and no handle
//   holds it, through the free function given to the constructor (one per process: every
//   cache shares one `CacheItemHelper`, whose deleter has no context argument).
// - On a failed insert (strict capacity limit) the caller still owns the value.
// - Every handle returned by lookup (or insert with `out_handle`) is released exactly once,
//   before the cache is destroyed.
// - No C++ exception crosses into Rust: constructors catch and return null.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "rocksdb/advanced_cache.h"
#include "rocksdb/cache.h"
#include "rocksdb/version.h"

namespace {

using FreeFn = void (*)(void*);

std::atomic<FreeFn> g_free{nullptr};

void DeleteValue(rocksdb::Cache::ObjectPtr obj, rocksdb::MemoryAllocator* /*allocator*/) {
  FreeFn f = g_free.load(std::memory_order_acquire);
  if (f != nullptr && obj != nullptr) {
    f(obj);
  }
}

// Outlives every cache (static storage), as RocksDB requires of a helper.
const rocksdb::Cache::CacheItemHelper kHelper(rocksdb::CacheEntryRole::kMisc, &DeleteValue);

// Registers the process's free function; false when a different one is already registered.
bool SetFree(FreeFn f) {
  FreeFn expected = nullptr;
  if (g_free.compare_exchange_strong(expected, f, std::memory_order_acq_rel)) {
    return true;
  }
  return expected == f;
}

// 1: high priority (index and filter blocks), anything else: low.
rocksdb::Cache::Priority ToPriority(int p) {
  return p == 1 ? rocksdb::Cache::Priority::HIGH : rocksdb::Cache::Priority::LOW;
}

}  // namespace

struct strata_rocks_cache {
  std::shared_ptr<rocksdb::Cache> cache;
};

extern "C" {

// An LRU cache; null on bad options (RocksDB refuses them) or a different free function.
strata_rocks_cache* strata_rocks_cache_new_lru(size_t capacity, int num_shard_bits,
                                               double high_pri_pool_ratio, int strict,
                                               FreeFn free_value) {
  if (!SetFree(free_value)) {
    return nullptr;
  }
  try {
    rocksdb::LRUCacheOptions o;
    o.capacity = capacity;
    o.num_shard_bits = num_shard_bits;
    o.strict_capacity_limit = strict != 0;
    o.high_pri_pool_ratio = high_pri_pool_ratio;
    std::shared_ptr<rocksdb::Cache> c = o.MakeSharedCache();
    if (!c) {
      return nullptr;
    }
    return new strata_rocks_cache{std::move(c)};
  } catch (...) {
    return nullptr;
  }
}

// A HyperClockCache: a fixed table sized for `estimated_entry_charge`, or, when it is 0, the
// automatically growing table (RocksDB's `auto_hyper_clock_cache`).
strata_rocks_cache* strata_rocks_cache_new_hyper_clock(size_t capacity,
                                                       size_t estimated_entry_charge,
                                                       int num_shard_bits, int strict,
                                                       FreeFn free_value) {
  if (!SetFree(free_value)) {
    return nullptr;
  }
  try {
    rocksdb::HyperClockCacheOptions o(capacity, estimated_entry_charge, num_shard_bits,
                                      strict != 0);
    std::shared_ptr<rocksdb::Cache> c = o.MakeSharedCache();
    if (!c) {
      return nullptr;
    }
    return new strata_rocks_cache{std::move(c)};
  } catch (...) {
    return nullptr;
  }
}

// Frees every remaining entry (their values through the free function).
void strata_rocks_cache_destroy(strata_rocks_cache* c) { delete c; }

// Inserts `value` under the `key_len` bytes at `key` (HyperClockCache needs 16). Returns 0 on
// success, the cache then owning `value`; otherwise RocksDB's status code (MemoryLimit under
// a strict limit) and the caller keeps `value`. With `out_handle`, the entry comes back held.
int strata_rocks_cache_insert(strata_rocks_cache* c, const char* key, size_t key_len,
                              void* value, size_t charge, int priority, void** out_handle) {
  rocksdb::Cache::Handle* h = nullptr;
  rocksdb::Status s =
      c->cache->Insert(rocksdb::Slice(key, key_len), value, &kHelper, charge,
                       out_handle != nullptr ? &h : nullptr, ToPriority(priority));
  if (!s.ok()) {
    int code = static_cast<int>(s.code());
    return code != 0 ? code : -1;
  }
  if (out_handle != nullptr) {
    *out_handle = h;
  }
  return 0;
}

// The entry for the key, held (null when absent); its value in `*out_value`.
void* strata_rocks_cache_lookup(strata_rocks_cache* c, const char* key, size_t key_len,
                                void** out_value) {
  rocksdb::Cache::Handle* h = c->cache->Lookup(rocksdb::Slice(key, key_len));
  if (h != nullptr) {
    *out_value = c->cache->Value(h);
  }
  return h;
}

// Releases a handle from lookup or insert.
void strata_rocks_cache_release(strata_rocks_cache* c, void* handle) {
  c->cache->Release(static_cast<rocksdb::Cache::Handle*>(handle));
}

void strata_rocks_cache_erase(strata_rocks_cache* c, const char* key, size_t key_len) {
  c->cache->Erase(rocksdb::Slice(key, key_len));
}

size_t strata_rocks_cache_usage(const strata_rocks_cache* c) { return c->cache->GetUsage(); }

size_t strata_rocks_cache_capacity(const strata_rocks_cache* c) {
  return c->cache->GetCapacity();
}

size_t strata_rocks_cache_occupancy(const strata_rocks_cache* c) {
  return c->cache->GetOccupancyCount();
}

size_t strata_rocks_cache_table_slots(const strata_rocks_cache* c) {
  return c->cache->GetTableAddressCount();
}

// Copies the cache's `GetPrintableOptions()` text (NUL-terminated, truncated to `cap`);
// returns its full length.
size_t strata_rocks_cache_options(const strata_rocks_cache* c, char* buf, size_t cap) {
  std::string s;
  try {
    s = c->cache->GetPrintableOptions();
  } catch (...) {
    s.clear();
  }
  if (cap > 0) {
    size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return s.size();
}

// The cache's `Name()` (static storage in RocksDB).
const char* strata_rocks_cache_name(const strata_rocks_cache* c) { return c->cache->Name(); }

// The RocksDB release the headers belong to.
void strata_rocks_cache_version(int* major, int* minor, int* patch) {
  *major = ROCKSDB_MAJOR;
  *minor = ROCKSDB_MINOR;
  *patch = ROCKSDB_PATCH;
}

}  // extern "C"
