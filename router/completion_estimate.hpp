#pragma once
/// Deadline-aware admission: when will a new request finish? Pure C++; time is passed in.
///
/// The router measures its workers as it streams their tokens (rate_meter) and, for a request
/// with a deadline (or a first-token target), predicts (estimate_completion):
///
///     start        = work ahead / throughput                 0 while a worker has a free batch slot
///     first token  = start + max(one step, prompt * prefill time per prompt token)
///     finish       = first token + (expected output - 1) * time per output token
///
///   work ahead     tokens (prompt + expected output) of the accepted requests that have not
///                  started (no first token yet) and would start before this one: all of them
///                  under fcfs; under vtc its own tenant's, divided by the tenant's share of the
///                  backlogged tenants' weights (work_ahead)
///   throughput     tokens (prompt + output) per second the cluster served while saturated
///                  (every worker's batch full, or requests queued at the router): EWMA of
///                  windows of `window`, only windows saturated from start to end
///   per request    EWMAs over finished requests of the time per output token, the prefill time
///                  per uncached prompt token, and completion tokens / max_tokens (requests that
///                  stop early on EOS or a stop string are expected to stop as early)
///
/// Until `min_windows` throughput windows and `min_finished` requests have been measured there is
/// no estimate, and the router refuses nothing. The model leaves out what it cannot see (a slot
/// to free before the first queued request starts, preemptions), so it errs towards admitting.

#include <chrono>
#include <cstdint>
#include <optional>

#include "router/meter_window.hpp"
#include "router/tenancy.hpp"

namespace lf::router {

/// The meter's clock (steady_clock; the caller passes now in).
using meter_clock = std::chrono::steady_clock;

/// What has been measured, for estimate_completion.
struct service_rates {
  double tokens_per_s = 0;          ///< cluster throughput while saturated, prompt + output tokens
  double tpot_ms = 0;               ///< one request's time per output token under that load
  double prefill_ms_per_token = 0;  ///< one request's prefill time per uncached prompt token
  double output_ratio = 1;          ///< completion tokens / max_tokens, in (0, 1]
};

/// Settings of a rate_meter.
struct rate_meter_options {
  std::chrono::milliseconds window{250};  ///< throughput window
  double alpha = 0.3;                     ///< EWMA weight of the newest sample, in (0, 1]
  std::uint32_t min_windows = 2;          ///< saturated windows before an estimate
  std::uint32_t min_finished = 4;         ///< finished requests before an estimate
};

/// A finished request as its worker timed it (milliseconds from its arrival at the worker).
struct finished_request {
  std::uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0, max_tokens = 0;
  double queue_ms = 0, ttft_ms = 0, total_ms = 0;
};

/// Measures throughput and per-request speeds (see the file comment). Not thread-safe.
class rate_meter {
public:
  explicit rate_meter(rate_meter_options o = {});

  /// Whether the cluster is saturated from `now` on (the caller says so whenever it may have
  /// changed; repeating the same value is cheap).
  void saturated(meter_clock::time_point now, bool yes);

  /// `tokens` were served at `now` (a request's prompt with its first token, then each token).
  void served(meter_clock::time_point now, std::uint64_t tokens);

  /// A request finished normally.
  void finished(const finished_request& r);

  /// The rates, once enough has been measured.
  std::optional<service_rates> rates() const;

  /// Saturated windows measured so far.
  std::uint32_t windows() const noexcept { return windows_; }

private:
  void close_window(meter_clock::time_point now);

  rate_meter_options o_;
  meter_window window_;  ///< saturated all through
  std::uint64_t window_tokens_ = 0;
  std::uint32_t windows_ = 0, finished_ = 0, decodes_ = 0;
  service_rates r_;
};

/// A new request, for estimate_completion.
struct estimate_input {
  double ahead_tokens = 0;  ///< work ahead (work_ahead); 0 while a worker has a free slot
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens = 0;
};

/// When the request is predicted to start, produce its first token and finish: milliseconds from
/// now.
struct completion_estimate {
  double start_ms = 0, first_token_ms = 0, finish_ms = 0;
};

/// See the file comment.
completion_estimate estimate_completion(const service_rates& r, const estimate_input& in);

/// Tokens that start before a new request of a tenant whose own unstarted work is `own` (of
/// `total` unstarted in all), whose weight is `weight`, while the other tenants with unstarted
/// work weigh `others_weight` together: fcfs: `total`; vtc: own / share, at most `total`, where
/// share = weight / (weight + others_weight).
double work_ahead(scheduling_policy p, double total, double own, double weight, double others_weight);

} // namespace lf::router
