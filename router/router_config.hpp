#pragma once
/// Settings of a router: the one struct behind a cluster config's [router] and [limits] tables
/// and `lorafleet serve`'s router flags, and its keys (router_keys: name, range, doc), which both
/// readers use. Adding a setting: a field here, a row in router_keys (router_config.cpp), and its
/// line in docs/cluster.md (a unit test compares them). Pure C++ (no CAF), so the config loader
/// can use it.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/request.hpp"
#include "core/setting_key.hpp"
#include "router/completion_estimate.hpp"
#include "router/placement.hpp"
#include "router/tenancy.hpp"

namespace lf::router {

/// Settings of a router.
struct router_config {
  placement_options placement;
  std::size_t max_queue = 256;                   ///< admission queue bound
  std::uint32_t max_inflight_per_worker = 64;    ///< placed-not-ended requests per worker
  std::uint32_t retry_after_ms = 200;            ///< hint sent with `overloaded`
  /// Mid-stream moves (lost or drained workers) one request may take; the next loss ends it
  /// with worker_lost.
  std::uint32_t max_resumptions = 3;
  /// How long a request moved off a lost or drained worker waits for another one (its deadline
  /// may end it sooner); then it ends with worker_lost rather than wait for a worker that may
  /// never come.
  std::chrono::milliseconds move_wait{30000};
  /// While no worker takes requests (every one drained or lost), new requests are refused at
  /// once with no_workers and queued ones wait at most this long for one to come back (or be
  /// undrained), then end with no_workers: long enough for a worker to restart.
  std::chrono::milliseconds max_queue_wait{30000};
  /// Drains move a request with its computed K/V (the drained worker exports its whole blocks,
  /// the next one imports them) instead of recomputing them there: measured ~10x shorter pauses
  /// (docs/benchmarks.md, "Resumption"). A lost worker's requests are always recomputed.
  bool ship_kv = true;
  /// What requests are validated against (core/request.hpp). context_window and vocab_size 0 =>
  /// those of the registered workers (the smallest); set from the model, they also refuse the
  /// registration of a worker whose model is smaller, so a validated request fits every worker.
  request_limits limits;
  /// Tenants: scheduling policy across them, per-tenant limits and weights.
  tenancy_options tenants;
  /// Refuse at once (deadline_unmeetable) a request with deadline_ms or ttft_ms that the router
  /// predicts will miss it (router/completion_estimate.hpp); off: such requests queue and time
  /// out.
  bool deadline_admission = true;
  /// Admission refuses a request predicted to need more than (1 - margin) of its deadline (or
  /// ttft target): the prediction is an estimate, and one admitted at the edge that misses
  /// wastes the capacity it used. In [0, 1).
  double deadline_margin = 0.1;
  /// How the router measures its workers for those predictions.
  rate_meter_options meter;
  /// The adapter registry's log file (router/adapter_log.hpp), replayed at start; "" keeps the
  /// registry in memory only (lost when the router stops).
  std::string adapter_log;
  /// Directories `adapters add` / `update` may take adapters from (paths are resolved, symlinks
  /// included, and must lie inside one); empty: every add is refused.
  std::vector<std::string> adapter_roots;
  /// Largest LoRA rank an add accepts.
  std::uint32_t max_adapter_rank = 64;
  /// Workers an added or updated adapter is loaded on at once, in the background (0: none; the
  /// first request loads it).
  std::uint32_t prefetch_copies = 1;
  /// A worker's registration must carry this token ([security.nodes] join_token_file, compared
  /// in constant time); empty: no token is asked (the node's CAF port is then on loopback only,
  /// or behind mutual TLS: cluster/config_check.cpp refuses anything else).
  std::string join_token;
};

/// The settings a config file and `serve` start from: router_config's, with placement
/// cache_aware (measured against the others: docs/benchmarks.md, "Cache-aware routing"; the
/// struct's own least_loaded is for code that builds one by hand).
router_config configured_defaults();

/// The router keys: a cluster config's [router] keys and `serve`'s router flags (each named after
/// its key, but placement's `--policy`), in --help's order. Every key's range and doc is written
/// here once; defaults are configured_defaults()'. No rule ties two of them together (the worker
/// keys' rules are worker::check_settings).
const std::vector<settings::setting_key<router_config>>& router_keys();

} // namespace lf::router
