#pragma once
/// The stats conversation, each message with its inspect(): what a worker reports of its load
/// and what the router answers to `get` (status, tests, readiness checks, metrics export).
///
///   worker ──worker_load (periodically)──> router
///   anyone ──get / (wait_for, n)──> router ──router_stats──> (with every worker's last load and
///                                                             the router's metrics per worker)
///
/// Type ids: actors/messages.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actors/core_inspect.hpp"
#include "actors/ids.hpp"
#include "core/metrics.hpp"
#include "core/worker_state.hpp"
#include "worker/load_counts.hpp"

namespace lf::actors {

/// What one adapter's loads cost a worker (cache::adapter_load_record on the wire).
struct adapter_load_cost {
  std::string name;
  std::uint64_t loads = 0;
  double last_load_ms = 0;
  std::uint64_t bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_load_cost& x) {
  return f(caf::meta::type_name("lf.adapter_load_cost"), x.name, x.loads, x.last_load_ms, x.bytes);
}

/// Worker -> router, periodically and on request: a snapshot of the worker's load. The loop's
/// numbers (worker::load_counts) as the loop counted them, and what the worker knows besides.
struct worker_load : worker::load_counts {
  worker_id wid;
  std::vector<std::string> adapters;  ///< adapters it holds right now
  std::uint64_t adapter_loads = 0;
  std::vector<std::string> servable;  ///< adapters it can load (its adapter directory)
  std::string name;                   ///< filled by the router from register_worker
  std::vector<adapter_load_cost> loads_by_adapter;  ///< every adapter it loaded, with what loading cost
  std::uint32_t adapter_slots_free = 0;  ///< adapter slots neither resident nor loading (prefetch goes there)
  /// Speculative decoding: tokens proposed, accepted, verifications and the tokens they emitted.
  std::uint64_t spec_proposed = 0, spec_accepted = 0, spec_rows = 0, spec_emitted = 0;
  /// Of the proposals, the tokens a draft model made, and the time it took (ms, cumulative).
  std::uint64_t spec_draft_tokens = 0;
  double spec_draft_ms = 0;
  std::uint32_t max_adapters = 0;  ///< how many adapters it may hold at once (vLLM's lora_requests_info)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_load& x) {
  return f(caf::meta::type_name("lf.worker_load"), static_cast<worker::load_counts&>(x), x.wid, x.adapters,
           x.adapter_loads, x.servable, x.name, x.loads_by_adapter, x.adapter_slots_free, x.spec_proposed,
           x.spec_accepted, x.spec_rows, x.spec_emitted, x.spec_draft_tokens, x.spec_draft_ms, x.max_adapters);
}

/// The router's measurements of the requests one worker served; worker 0 (an invalid id):
/// requests that ended before reaching a worker. Kept after the worker is gone.
struct worker_metrics {
  worker_id wid;
  std::string name;
  bool live = true;
  serve_metrics m;
  worker_state state = worker_state::serving;  ///< serving, draining, drained or lost (!live)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_metrics& x) {
  return f(caf::meta::type_name("lf.worker_metrics"), x.wid, x.name, x.live, x.m, x.state);
}

/// What the router has seen, for `status`, tests and readiness checks.
struct router_stats {
  std::uint32_t workers = 0;
  std::uint32_t queued = 0;    ///< accepted, waiting for a worker
  std::uint32_t inflight = 0;  ///< placed on a worker, not ended
  std::uint64_t accepted = 0, overloaded = 0, rejected = 0;  ///< rejected: invalid requests
  std::uint64_t completed = 0, failed = 0, cancelled = 0, timed_out = 0;
  std::uint64_t replaced = 0;     ///< placed again after their worker died, before streaming
  std::uint64_t worker_lost = 0;  ///< ended with worker_lost
  std::uint64_t resumed = 0;      ///< resumptions: mid-stream moves to another worker (lost or drained)
  std::uint32_t draining = 0;     ///< live workers that take no new requests (drained)
  /// Live workers that take new requests (not drained): 0 means new requests get no_workers
  /// (once a worker has registered) and /ready says false.
  std::uint32_t accepting = 0;
  std::uint64_t kv_shipped = 0;   ///< drain moves that brought their K/V along (not recomputed)
  std::uint64_t kv_shipped_tokens = 0;  ///< the tokens' K/V those moves carried
  std::uint64_t adapter_prefetches = 0; ///< background adapter loads asked of workers (adds, updates, demand)
  std::vector<worker_load> loads; ///< last report of each live worker
  std::vector<worker_metrics> metrics;  ///< per worker ever registered, then worker 0
  std::uint64_t prefix_blocks = 0;   ///< the prefix index's entries (block hashes x workers holding them)
  std::uint64_t prefix_resyncs = 0;  ///< snapshots asked of workers after a gap in their events
  /// Continuations accepted: requests a gateway moved here mid-stream from a lost router.
  std::uint64_t continued = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_stats& x) {
  return f(caf::meta::type_name("lf.router_stats"), x.workers, x.queued, x.inflight, x.accepted,
           x.overloaded, x.rejected, x.completed, x.failed, x.cancelled, x.timed_out, x.replaced,
           x.worker_lost, x.resumed, x.draining, x.accepting, x.kv_shipped, x.kv_shipped_tokens, x.loads, x.metrics,
           x.adapter_prefetches, x.prefix_blocks, x.prefix_resyncs, x.continued);
}

/// One number of router_stats as every report shows it: the stats reply ("router.NAME"), the
/// HTTP gateway's /api/stats ("router": {"NAME": ...}) and /metrics ("lorafleet:METRIC"), and
/// the router link's sum over router replicas. router_fields lists them all: a new counter is a
/// member above and a row below, and every report has it.
struct router_field {
  const char* name;                                 ///< in the stats reply and /api/stats
  std::uint64_t router_stats::*u64 = nullptr;  ///< the member, when 64 bits wide, or
  std::uint32_t router_stats::*u32 = nullptr;  ///< when 32 bits wide
  /// Prometheus name after "lorafleet:", a counter when it ends in "_total", else a gauge;
  /// nullptr: not on /metrics.
  const char* metric = nullptr;
  const char* help = "";         ///< Prometheus HELP
  bool summed = true;            ///< summed over router replicas (else the fullest replica's view)

  /// The number in `rs`.
  double of(const router_stats& rs) const noexcept {
    return u64 != nullptr ? static_cast<double>(rs.*u64) : static_cast<double>(rs.*u32);
  }
};

/// Every router_stats number but the per-worker lists, in the order reports show them.
inline const router_field router_fields[] = {
  {"workers", nullptr, &router_stats::workers, "workers", "Workers registered with the router.", false},
  {"queued", nullptr, &router_stats::queued, "num_requests_queued", "Requests waiting at the router for a worker."},
  {"inflight", nullptr, &router_stats::inflight, "num_requests_inflight", "Requests placed on a worker and not ended."},
  {"draining", nullptr, &router_stats::draining, nullptr, "", false},
  {"accepting", nullptr, &router_stats::accepting, "workers_accepting",
   "Workers that take new requests (0: new requests get no_workers).", false},
  {"accepted", &router_stats::accepted, nullptr, "requests_accepted_total", "Requests the router accepted."},
  {"completed", &router_stats::completed, nullptr},
  {"failed", &router_stats::failed, nullptr, "requests_failed_total", "Accepted requests that ended with an error."},
  {"cancelled", &router_stats::cancelled, nullptr, "requests_cancelled_total",
   "Requests cancelled by their client or its disconnect."},
  {"timed_out", &router_stats::timed_out, nullptr, "requests_timed_out_total", "Requests whose deadline passed."},
  {"overloaded", &router_stats::overloaded, nullptr, "requests_overloaded_total",
   "Requests refused because every worker and the queue were full."},
  {"rejected", &router_stats::rejected, nullptr, "requests_rejected_total", "Invalid requests refused by the router."},
  {"replaced", &router_stats::replaced, nullptr, "requests_replaced_total",
   "Requests placed again after their worker was lost."},
  {"worker_lost", &router_stats::worker_lost, nullptr},
  {"resumed", &router_stats::resumed, nullptr, "requests_resumed_total",
   "Resumptions: requests moved mid-stream to another worker (lost or drained), continuing exactly."},
  {"continued", &router_stats::continued, nullptr, "requests_continued_total",
   "Continuations: requests a gateway moved to this router mid-stream after another router was lost."},
  {"kv_shipped", &router_stats::kv_shipped, nullptr, "kv_shipped_total",
   "Drain moves whose K/V went along to the next worker instead of being recomputed."},
  {"kv_shipped_tokens", &router_stats::kv_shipped_tokens, nullptr, "kv_shipped_tokens_total",
   "Tokens whose K/V drain moves carried."},
  {"adapter_prefetches", &router_stats::adapter_prefetches, nullptr, "adapter_prefetches_total",
   "Background adapter loads the router asked of workers."},
  // Each replica indexes the same workers' blocks: not summed.
  {"prefix_blocks", &router_stats::prefix_blocks, nullptr, nullptr, "", false},
  {"prefix_resyncs", &router_stats::prefix_resyncs, nullptr},
};

} // namespace lf::actors
