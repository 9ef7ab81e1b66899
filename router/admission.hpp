#pragma once
/// The router's admission decision for one validated request: a pure function of what the
/// request asks, the router's books and the time, in the shape of TGI's queue (the decision lives
/// in a plain object, the actor only acts on it), so every rule is tested without actors.
///
///   refuse   no worker takes requests (an outage)              -> no_workers, retry hint >= 1 s
///            predicted to miss its deadline or ttft target      -> deadline_unmeetable
///            cannot go to a worker at once and its tenant has
///            max_queued waiting, or the queue is full           -> overloaded, retry hint
///   place    the tenant is under max_inflight, nobody who may go waits, and the placement
///            policy picks a worker with room
///   enqueue  otherwise (the queue hands it to a worker when its turn comes)
///
///   auto d = admit(ask, view, [&] { return placement.choose(...); }, now);
///   if (auto* r = std::get_if<admit_refuse>(&d)) reject(r->code, r->message, r->retry_after_ms);

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "actors/ids.hpp"
#include "core/serve_errc.hpp"
#include "router/availability.hpp"
#include "router/tenancy.hpp"
#include "router/tenant_ledger.hpp"

namespace lf::router {

/// What one validated request asks of admission.
struct admission_ask {
  std::string tenant;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens = 0;
  std::uint32_t timeout_ms = 0;  ///< 0: no deadline
  std::uint32_t ttft_ms = 0;     ///< 0: no first-token target
};

/// What admission reads of the router's books (all of it as it is at `now`).
struct admission_view {
  const availability* avail = nullptr;        ///< which workers take requests
  const tenant_ledger* tenancy = nullptr;     ///< tenants' live work, deadline predictions
  const tenancy_options* tenants = nullptr;   ///< per-tenant limits
  std::size_t live_workers = 0;               ///< registered, drained or not (for the message)
  std::size_t queued_of_tenant = 0;           ///< the request's tenant's requests in the queue
  bool queue_full = false;
  std::size_t queue_capacity = 0;
  bool someone_eligible_waits = false;        ///< a queued request may go before it
  bool saturated = false;                     ///< every worker's batch full or requests wait
  std::uint32_t retry_after_ms = 200;         ///< the overloaded hint
  std::uint32_t no_workers_retry_ms = 1000;   ///< the no_workers hint
};

/// Straight to this worker.
struct admit_place {
  actors::worker_id worker;
};
/// Into the admission queue.
struct admit_enqueue {};
/// Refused at once with this error; the request is never accepted.
struct admit_refuse {
  serve_errc code = serve_errc::overloaded;
  std::string message;
  std::uint32_t retry_after_ms = 0;
};
/// One of the three.
using admission = std::variant<admit_place, admit_enqueue, admit_refuse>;

/// The placement policy's pick among workers with room, or nullopt; asked only when the request
/// may go straight to a worker.
using choose_fn = std::function<std::optional<actors::worker_id>()>;

/// The outage rule alone (the first of admit's): the router asks it before it validates a
/// request, since without workers it knows no model to validate against (`live_workers`: the
/// registered ones, drained or not, for the message).
std::optional<admit_refuse> refuse_in_outage(const availability& avail, std::size_t live_workers,
                                             std::uint32_t no_workers_retry_ms,
                                             std::chrono::steady_clock::time_point now);

/// See the file comment.
admission admit(const admission_ask& ask, const admission_view& view, const choose_fn& choose,
                std::chrono::steady_clock::time_point now);

/// "place", "enqueue" or "refuse".
const char* to_string(const admission& d) noexcept;

} // namespace lf::router
