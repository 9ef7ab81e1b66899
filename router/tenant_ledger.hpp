#pragma once
/// The router's tenant bookkeeping, apart from the actor: per-tenant books (live and in-flight
/// requests, expected work not yet started), the virtual-token charges, the rate meter of the
/// cluster's speed and the deadline-aware admission built on it. Pure C++ (no CAF); time is
/// passed in. The decisions are the pure cores' (admission_queue, completion_estimate): this
/// keeps their inputs up to date and words their refusals.
///
/// One request's life in the ledger (its tenant_ticket travels with it):
///
///   accepted ──placed──> (in flight) ──token──> started ... ──finished──> forgotten
///                 └──unplaced (moved, lost)──> placed again ...
///
/// A tenant is forgotten with its last live request; `unstarted` (all tenants) returns to 0 then.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/vtc.hpp"
#include "router/completion_estimate.hpp"
#include "router/tenancy.hpp"

namespace lf::router {

/// One accepted request as its tenant's books see it.
struct tenant_ticket {
  std::string tenant;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens = 0;
  double expect = 0;            ///< expected tokens (prompt + expected output), set when accepted
  bool started = false;         ///< its first token has arrived
  bool prompt_charged = false;  ///< its tenant's counter has been charged its prompt
};

/// One tenant with live requests.
struct tenant_book {
  std::uint32_t live = 0;      ///< accepted, not ended
  std::uint32_t inflight = 0;  ///< placed on workers
  double unstarted = 0;        ///< expected tokens of its live requests without a first token
};

/// Deadline-aware admission settings (router_config's deadline_admission, deadline_margin).
struct deadline_options {
  bool admission = true;  ///< refuse requests predicted to miss their deadline or ttft target
  double margin = 0.1;    ///< refuse when predicted to need more than (1 - margin) of it
};

/// A request asking to be admitted, as deadline_refusal reads it.
struct deadline_ask {
  std::string tenant;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens = 0;
  std::uint32_t timeout_ms = 0;  ///< 0: none
  std::uint32_t ttft_ms = 0;     ///< 0: none
};

/// See the file comment. Not thread-safe.
class tenant_ledger {
public:
  using clock = meter_clock;

  explicit tenant_ledger(tenancy_options tenants = {}, deadline_options deadlines = {},
                         rate_meter_options meter = {});

  /// Whether `tenant` is below its in-flight limit.
  bool has_room(const std::string& tenant) const;

  /// `t` was accepted: its tenant has one more live request and `t.expect` more unstarted work.
  void accepted(tenant_ticket& t);
  /// `t` was placed on a worker; its prompt is charged to its tenant's counter (once).
  void placed(tenant_ticket& t, vtc& counters);
  /// `t` left its worker (moved, lost or ended).
  void unplaced(const tenant_ticket& t);
  /// A token of `t` reached the router at `now`: its tenant is charged; its first token starts it.
  void token(tenant_ticket& t, vtc& counters, clock::time_point now);
  /// A request finished normally; its worker's timings teach the meter unless it was `resumed`
  /// (then they span two workers).
  void finished(const finished_request& f, bool resumed);
  /// `t` ended: its tenant has one request fewer (and is forgotten with its last).
  void forgotten(const tenant_ticket& t);
  /// Whether the cluster is saturated from `now` on (the caller says so whenever it may change).
  void load(clock::time_point now, bool saturated);

  /// Why `r` cannot meet its deadline or ttft target (the message), or nullopt; `saturated`:
  /// every worker's batch is full or requests wait.
  std::optional<std::string> deadline_refusal(const deadline_ask& r, bool saturated) const;
  /// Why `t`, accepted at `accepted` with `deadline`, whose turn came at `now`, can no longer
  /// finish in time (the message), or nullopt.
  std::optional<std::string> too_late(const tenant_ticket& t, clock::time_point deadline,
                                      clock::time_point accepted, clock::time_point now) const;

  /// `tenant`'s book, or null when it has no live request.
  const tenant_book* book(const std::string& tenant) const;
  /// Tenants with live requests.
  std::size_t tenants() const noexcept { return tenants_.size(); }
  /// Expected tokens of all live requests without a first token.
  double unstarted() const noexcept { return unstarted_; }
  const rate_meter& meter() const noexcept { return meter_; }

private:
  tenancy_options opts_;
  deadline_options deadlines_;
  rate_meter meter_;
  std::unordered_map<std::string, tenant_book> tenants_;
  double unstarted_ = 0;
};

} // namespace lf::router
