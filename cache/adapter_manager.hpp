#pragma once
/// The adapter cache as a worker uses it: adapter_cache's bookkeeping plus the loaded weights and
/// background loader threads, behind one mutex. Requests acquire an adapter by name when they
/// arrive and release it when they end; a cold adapter loads on a loader thread while the serving
/// loop keeps stepping everyone else, and every request for it proceeds after that one load.
/// Standard library only: the weights are an opaque adapter_payload (the engine's lora_weights),
/// so this is tested with fake payloads and no torch.
///
///   serving loop ──acquire(name)──> [adapter_cache] ──start_loads──> loader thread: load_fn(name)
///        ^                                                                   │
///        └──── listener (wake up) <── loaded() / load_failed() <─────────────┘

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/adapter_cache.hpp"

namespace lf::cache {

/// The weights of one loaded adapter, opaque to the cache.
class adapter_payload {
public:
  virtual ~adapter_payload() = default;
  /// Bytes the cache budgets for it.
  virtual std::size_t bytes() const noexcept = 0;
};

/// Thrown by a load function to choose the error requests get (any other exception means
/// serve_errc::unknown_adapter with its what()).
class adapter_load_error : public std::runtime_error {
public:
  adapter_load_error(serve_errc code, const std::string& message)
    : std::runtime_error(message), code_(code) {}
  /// The serve_errc requests for the adapter end with.
  serve_errc code() const noexcept { return code_; }

private:
  serve_errc code_;
};

/// Loads adapter `name` (runs on a loader thread; must be thread-safe). Throws on failure.
using adapter_load_fn = std::function<std::shared_ptr<const adapter_payload>(const std::string&)>;

/// Checks a name before it is registered: an error message, or "" if the name is acceptable.
/// Refused names end their requests with serve_errc::invalid_request and are never registered.
using adapter_name_check = std::function<std::string(const std::string&)>;

/// What one adapter's loads have cost on this worker (residency reports, `status`).
struct adapter_load_record {
  std::string name;
  std::uint64_t loads = 0;     ///< successful loads (a reload after an eviction counts again)
  std::uint64_t failures = 0;  ///< failed loads
  double last_load_ms = 0;     ///< how long the last successful load took
  std::size_t bytes = 0;       ///< its weights, at the last successful load
};

/// The weights of a ready adapter, or nullptr. What engines are given to find adapters.
using adapter_lookup_fn = std::function<std::shared_ptr<const adapter_payload>(adapter_id)>;

/// See the file comment. Thread-safe.
class adapter_manager {
public:
  /// Starts `loader_threads` (>= 1) loader threads. Throws std::invalid_argument for an invalid
  /// config, a missing load function or zero threads.
  adapter_manager(adapter_cache_config cfg, adapter_load_fn load, adapter_name_check check = {},
                  unsigned loader_threads = 1);

  /// Stops the loaders (a load in progress finishes first; queued jobs are dropped).
  ~adapter_manager();

  adapter_manager(const adapter_manager&) = delete;
  adapter_manager& operator=(const adapter_manager&) = delete;

  /// Called on a loader thread after each load settles (ready or failed), without the manager's
  /// state lock held (it may call back in); the serving loop uses it to wake up. Replacing it
  /// waits for a call in progress, so an owner clears it before it dies.
  void set_listener(std::function<void()> on_settled);

  /// adapter_cache::acquire, after the name check (a refused name: state failed, error
  /// invalid_request, id base_model). Starts loads and drops evicted weights as needed.
  adapter_acquire acquire(const std::string& name);

  /// adapter_cache::release.
  void release(adapter_id id);

  /// adapter_cache::retire: `name` is evicted once no request holds it.
  void retire(const std::string& name);

  /// Starts loading `name` in the background if a slot is free (acquire, then release at once:
  /// the adapter stays resident, least recently used first, until evicted). Never evicts: a
  /// speculative load must not push out an adapter someone uses. False if no slot is free, the
  /// name was refused or its last load failed recently; true if it is resident or loading now.
  bool prefetch(const std::string& name);

  /// Adapter slots neither resident nor loading (max_adapters - loaded - loading).
  std::uint32_t free_slots() const;

  /// `id`'s state.
  adapter_state state(adapter_id id) const;

  /// state(id) == ready.
  bool ready(adapter_id id) const { return state(id) == adapter_state::ready; }

  /// A copy of `id`'s entry (name, state, refs, bytes, error); throws std::out_of_range if
  /// unknown.
  adapter_info info(adapter_id id) const;

  /// The name registered for `id`, or "" if unknown.
  std::string name(adapter_id id) const;

  /// The weights of a ready adapter, or nullptr. The caller's copy stays valid after an eviction.
  std::shared_ptr<const adapter_payload> get(adapter_id id) const;

  /// get() as a function object (capturing this manager, which must outlive it).
  adapter_lookup_fn lookup() const;

  /// Counters.
  adapter_cache_stats stats() const;

  /// Names of the resident adapters, most recently acquired first (for placement by affinity).
  std::vector<std::string> resident_names() const;

  /// Every adapter this manager tried to load, by name, with what its loads cost.
  std::vector<adapter_load_record> load_records() const;
  /// Loads settled (ready or failed) since construction; a waiter compares it with what it saw.
  std::uint64_t settled_count() const;

  /// Blocks until `id` is neither queued nor loading, or `limit` passes; returns its state.
  adapter_state wait_settled(adapter_id id, std::chrono::milliseconds limit) const;

private:
  struct job {
    adapter_id id;
    std::string name;
  };

  /// free_slots(), lock held.
  std::uint32_t free_slots_locked() const;
  /// Applies a cache decision: drops evicted weights, queues new loads. Lock held.
  void apply(const adapter_actions& a);
  void loader_main();

  adapter_load_fn load_;
  adapter_name_check check_;
  mutable std::mutex mtx_;
  mutable std::condition_variable jobs_cv_, settled_cv_;
  adapter_cache cache_;
  std::unordered_map<adapter_id, std::shared_ptr<const adapter_payload>> weights_;
  std::deque<job> jobs_;
  std::mutex listener_mtx_;
  std::function<void()> listener_;  ///< guarded by listener_mtx_
  std::uint64_t settled_ = 0;
  std::map<std::string, adapter_load_record> records_;  ///< guarded by mtx_
  bool stopping_ = false;
  std::vector<std::thread> loaders_;
};

} // namespace lf::cache
