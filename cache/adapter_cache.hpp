#pragma once
/// The LoRA adapter cache's bookkeeping: which adapter names are known (name -> adapter_id), which
/// are resident, loading, waiting for room or failed, who holds them, and what to evict. Pure:
/// standard library only, no threads (the owner serialises calls), no clock (time is passed in),
/// no weights (the owner keeps them; this class tells it when to load and what to drop).
///
/// Life of an adapter:
///
///          acquire (no room)          room freed by release
///   absent ───────────────> queued ────────────────────────┐
///     │ ^  acquire (room)                                   v
///     │ └──── evicted ──── ready <──── loaded() ──── loading
///     │                      ^                          │ load_failed(), or loaded() with more
///     │                      │                          v bytes than the whole budget
///     └──── acquire after retry_after ────────────── failed
///
/// References: a request takes one with acquire() when it arrives and gives it back with release()
/// when it ends, so an adapter stays resident while any queued or running request needs it (the
/// serving loop never finds the weights of an admitted sequence gone). Only adapters without
/// references are evicted, least recently acquired first. Limits:
/// - max_adapters counts resident and loading adapters; a load starts only if one more fits
///   (after evicting unreferenced ones), else the adapter is queued until a release makes room.
/// - budget_bytes is checked when a load finishes (only then is the size known): unreferenced
///   adapters are evicted until the resident bytes fit. If referenced adapters alone exceed it the
///   cache stays over budget, starts no new load, and evicts as soon as releases allow.
/// Failures are remembered for retry_after: acquires in that window fail at once with the stored
/// error (no reload storm for a broken file); the first acquire after it tries a new load.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/serve_errc.hpp"
#include "cache/ids.hpp"

namespace lf::cache {

/// The adapter cache's clock; the caller passes the current time in.
using adapter_clock = std::chrono::steady_clock;

/// Where an adapter is. Ids stay registered in every state.
enum class adapter_state : std::uint8_t {
  absent,   ///< known name, not resident (never loaded, or evicted)
  queued,   ///< needed, waiting for room to start loading
  loading,  ///< the owner is loading it
  ready,    ///< resident, usable
  failed,   ///< the last load failed; see adapter_info::error/message
};

/// "absent", "queued", "loading", "ready", "failed".
std::string_view to_string(adapter_state s) noexcept;

/// `bytes` as mebibytes with one decimal, rounded ("9.2 MiB"), for messages about sizes.
std::string format_mib(std::size_t bytes);

/// Limits of an adapter cache.
struct adapter_cache_config {
  /// Resident adapter weights at most, in bytes (> 0). Soft: see the file comment.
  std::size_t budget_bytes = std::size_t{256} << 20;
  /// Resident plus loading adapters at most (> 0).
  std::uint32_t max_adapters = 64;
  /// How long a failure is remembered before an acquire retries the load.
  std::chrono::milliseconds retry_after{5000};
  /// Registered names at most (> 0); when full, names of unreferenced adapters that are absent or
  /// failed are forgotten (their ids are never reused).
  std::uint32_t max_names = 65536;
};

/// Counters of an adapter cache.
struct adapter_cache_stats {
  std::uint32_t loaded = 0;       ///< resident adapters now
  std::size_t bytes = 0;          ///< their bytes
  std::uint32_t loading = 0;      ///< loads in progress
  std::uint32_t queued = 0;       ///< adapters waiting for room
  std::uint64_t hits = 0;         ///< acquires that found the adapter resident
  std::uint64_t misses = 0;       ///< acquires that did not (loading, queued, absent, failed)
  std::uint64_t loads = 0;        ///< loads that succeeded
  std::uint64_t evictions = 0;
  std::uint64_t failures = 0;     ///< loads that failed (also too large for the budget)
};

/// One adapter's entry.
struct adapter_info {
  std::string name;
  adapter_state state = adapter_state::absent;
  std::uint32_t refs = 0;          ///< requests holding it
  std::size_t bytes = 0;           ///< when ready
  serve_errc error = serve_errc::none;  ///< when failed
  std::string message;             ///< when failed: why, for the client
};

/// What the owner must do after a call: start these loads (each reported back exactly once with
/// loaded() or load_failed()) and drop the weights of these evicted adapters.
struct adapter_actions {
  std::vector<adapter_id> start_loads;
  std::vector<adapter_id> evict;
  /// Adapters that became ready or failed in this call (the owner may wake whoever waits).
  std::vector<adapter_id> settled;
};

/// Result of acquire().
struct adapter_acquire {
  adapter_id id;                   ///< base_model when the name was refused
  adapter_state state = adapter_state::absent;  ///< after the call; failed = no reference taken
  serve_errc error = serve_errc::none;
  std::string message;
  adapter_actions actions;
};

/// See the file comment. Not thread-safe.
class adapter_cache {
public:
  /// Throws std::invalid_argument for a zero budget, max_adapters or max_names.
  explicit adapter_cache(adapter_cache_config cfg);

  /// A request arriving at `now` needs adapter `name` (already checked by the owner: this class
  /// does not look at the file system). Registers the name if new; takes a reference unless the
  /// result is failed (then error/message say why: the stored load failure, or a full registry);
  /// starts a load when the adapter is absent (or failed longer ago than retry_after) and fits.
  adapter_acquire acquire(const std::string& name, adapter_clock::time_point now);

  /// Gives back a reference taken by acquire(). Evicts what the limits now require and starts
  /// queued loads that fit. Throws std::logic_error if `id` holds no reference.
  adapter_actions release(adapter_id id);

  /// A load started by start_loads finished with `bytes` of weights. Becomes ready (evicting
  /// unreferenced adapters to fit the budget), or failed if `bytes` alone exceed the budget.
  /// Throws std::logic_error if `id` is not loading.
  adapter_actions loaded(adapter_id id, std::size_t bytes, adapter_clock::time_point now);

  /// Adapter `name` is withdrawn (removed from the cluster's registry, or superseded by a newer
  /// version): evicted now if nobody holds it, else as soon as its last reference is released
  /// (a load in progress finishes first). A later acquire still works (a request placed before
  /// the withdrawal) and the adapter is evicted again when that one ends. Unknown names: no-op.
  adapter_actions retire(const std::string& name);

  /// A load started by start_loads failed. Throws std::logic_error if `id` is not loading.
  adapter_actions load_failed(adapter_id id, serve_errc error, std::string message,
                              adapter_clock::time_point now);

  /// `id`'s state (absent for an unknown or forgotten id).
  adapter_state state(adapter_id id) const;

  /// `id`'s entry; throws std::out_of_range for an unknown or forgotten id.
  const adapter_info& info(adapter_id id) const;

  /// The id registered for `name`, or base_model if none.
  adapter_id find(const std::string& name) const;

  /// Resident adapters, most recently acquired first.
  std::vector<adapter_id> resident() const;

  /// Counters.
  adapter_cache_stats stats() const;

  /// The limits in force.
  const adapter_cache_config& config() const noexcept { return cfg_; }

private:
  struct entry {
    adapter_info info;
    std::uint64_t last_use = 0;   ///< acquire stamp, for LRU
    adapter_clock::time_point failed_at{};
    std::uint64_t queued_at = 0;  ///< FIFO order of queued loads
    bool retired = false;         ///< evicted whenever it has no reference (retire())
  };

  entry& at(adapter_id id);
  /// Starts the load of `id` now if it fits (evicting as needed), else queues it.
  void want_load(adapter_id id, entry& e, adapter_actions& out);
  /// True if one more adapter may start loading, evicting unreferenced ones if that helps.
  bool make_room(adapter_actions& out);
  /// Evicts unreferenced LRU adapters while the bytes are over budget.
  void fit_budget(adapter_actions& out);
  /// Starts queued loads, oldest first, while they fit.
  void start_queued(adapter_actions& out);
  /// Evicts the least recently used unreferenced ready adapter; false if there is none.
  bool evict_one(adapter_actions& out);
  /// Evicts ready adapter `id` (unreferenced).
  void evict(adapter_id id, entry& e, adapter_actions& out);
  /// Evicts `id` if it is retired, ready and unreferenced.
  void drop_if_retired(adapter_id id, entry& e, adapter_actions& out);
  /// Forgets unreferenced absent/failed names when the registry is full.
  void collect_names();
  std::uint32_t occupied() const noexcept { return resident_count_ + loading_count_; }

  adapter_cache_config cfg_;
  std::unordered_map<adapter_id, entry> entries_;
  std::unordered_map<std::string, adapter_id> by_name_;
  std::uint32_t next_id_ = 1;
  std::uint64_t clock_ = 0;  ///< stamps for last_use and queued_at
  std::uint32_t resident_count_ = 0, loading_count_ = 0, queued_count_ = 0;
  std::size_t bytes_ = 0;
  adapter_cache_stats counters_;
};

} // namespace lf::cache
