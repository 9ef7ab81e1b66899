#pragma once
/// What a request would wait for on each worker: the `priced` placement's estimate. Pure C++ (no
/// CAF, no clock): the router passes `now` in and feeds what it sees.
///
///     delay(w) = (prompt_ahead(w) + prompt - cached) * prefill(w)   the prefills before its first token
///              + rows(w) * decode(w)                               one step of everyone's decoding
///              + share * output_ahead(w) * decode(w)               (share 0 by default, below)
///              + load price * age weight          when the adapter is neither resident nor loading
///              + output_ahead(w) * decode(w)      ...and every adapter slot there is taken
///
///   prompt_ahead   prompt tokens of the requests placed on w that have no first token yet
///   rows           requests placed on w (each is a row of its steps by the time this one starts)
///   output_ahead   output tokens those placed requests may still produce (max_tokens - sent)
///   prefill/decode milliseconds of that worker's time per prompt / output token, measured by
///                  worker_speed_meter from the tokens the router streams (priors until then)
///   load price     load_price_book: the last loads' times per adapter size class (EWMA), from
///                  the workers' load reports
///   cached         prefix-cache credit: the request's leading prompt tokens that worker's prefix
///                  cache holds, by the router's prefix index (router/prefix_index.hpp; 0 when
///                  it holds none or sent no events yet)
///   age weight     1 / (1 + waited / aging): a request that has waited long cares less what its
///                  adapter costs to load
///   slots taken    the adapters with requests placed there fill the worker's adapter slots (as
///                  many as it has been seen to hold): the load waits until one adapter's
///                  requests all end, about as long as an average request there still runs:
///                  output_ahead / rows steps of rows * decode each
///
/// It predicts the first token's delay on a continuous-batching worker: a new request joins the
/// running batch at once (the router's in-flight bound keeps the batch from overflowing much), so
/// it waits for the prompts ahead of it and for steps that also decode every running row, not for
/// the running requests to finish. (A first version charged all of output_ahead as work ahead:
/// hundreds of milliseconds that drowned a load's tens, and it placed as least_loaded did.)

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/ids.hpp"
#include "router/meter_window.hpp"

namespace lf::router {

/// The clock of the meters (steady_clock; callers pass now in).
using cost_clock = std::chrono::steady_clock;

/// Milliseconds of one worker's time per token.
struct service_speed {
  double prefill_ms_per_token = 0.5;  ///< per prompt token computed
  double decode_ms_per_token = 5.0;   ///< per output token, the batch's steps shared among its rows
};

/// Settings of a worker_speed_meter.
struct speed_meter_options {
  std::chrono::milliseconds window{250};  ///< one measurement
  double forget = 0.9;                    ///< weight of the past per new window, in (0, 1)
  /// The prior counts as this many windows of `prior_tokens` prompt and as many output tokens:
  /// enough to keep the fit defined before both kinds of token were seen, little against the
  /// ~10 windows (1 / (1 - forget)) of a measured busy worker.
  double prior_weight = 0.5;
  double prior_tokens = 20;
  service_speed prior;  ///< the rates before anything is measured
};

/// One worker's prefill and decode rates, measured while it has requests placed on it: each
/// window of `window` busy time gives (prompt tokens P, output tokens D, elapsed T), and the rates
/// are the least-squares fit of T = P * prefill + D * decode over the windows, older ones fading
/// by `forget`, with the prior as pseudo-windows (so one window cannot swing them, and a worker
/// that only decodes keeps the prior's prefill rate). When the fit's prefill:decode ratio strays
/// more than max_ratio_drift from the prior's (windows too alike to tell the rates apart), the
/// prior's ratio is kept and only the worker's speed is fitted. Not thread-safe.
class worker_speed_meter {
public:
  explicit worker_speed_meter(speed_meter_options o = {});

  /// Whether the worker has requests placed on it from `now` on; a window counts only when the
  /// worker was busy all through it.
  void busy(cost_clock::time_point now, bool yes);

  /// At `now` the worker finished the prefill of `prompt_tokens` and produced `output_tokens`.
  void served(cost_clock::time_point now, std::uint64_t prompt_tokens, std::uint64_t output_tokens);

  /// The current fit (the prior before any window).
  service_speed speed() const;

  /// Windows measured so far.
  std::uint32_t windows() const noexcept { return windows_; }

  /// How far (a factor) the fitted prefill:decode ratio may stray from the prior's.
  static constexpr double max_ratio_drift = 4;

private:
  void close_window(cost_clock::time_point now);

  speed_meter_options o_;
  meter_window window_;  ///< busy all through
  double window_prompt_ = 0, window_output_ = 0;
  std::uint32_t windows_ = 0;
  /// Faded sums of the measured windows: P*P, P*D, D*D, P*T, D*T (T in ms).
  double pp_ = 0, pd_ = 0, dd_ = 0, pt_ = 0, dt_ = 0;
};

/// One adapter's loads on one worker, as its load report gives them.
struct load_observation {
  std::string adapter;
  std::uint64_t loads = 0;   ///< loads so far on that worker
  double last_load_ms = 0;   ///< the latest one's time
  std::uint64_t bytes = 0;   ///< the adapter's resident size
};

/// Settings of a load_price_book.
struct load_price_options {
  double alpha = 0.3;         ///< EWMA weight of the newest load of a size class
  double prior_ms = 5;        ///< an adapter of unknown size, before any load was seen
  double prior_ms_per_mb = 2; ///< an adapter of known size in a class without loads yet
};

/// What loading an adapter costs, learned per size class (power-of-two byte sizes) from the loads
/// the workers report. Not thread-safe.
class load_price_book {
public:
  explicit load_price_book(load_price_options o = {}) : o_(o) {}

  /// A worker's report: each adapter whose load count rose since that worker's previous report
  /// updates its size class with its latest load time.
  void observe(actors::worker_id w, const std::vector<load_observation>& records);

  /// The worker is gone: its counts are forgotten (the learned prices stay).
  void forget(actors::worker_id w);

  /// Milliseconds to load `adapter` where it is not resident: its size class's EWMA; else, for a
  /// known size, the nearest measured class scaled by size (or prior_ms_per_mb); else the mean of
  /// all classes (or prior_ms).
  double price_ms(const std::string& adapter) const;

  /// The size class of `bytes`: floor(log2(bytes)), 0 for 0.
  static int size_class(std::uint64_t bytes) noexcept;

  /// Loads measured so far (all classes).
  std::uint64_t loads_seen() const noexcept { return seen_; }

private:
  load_price_options o_;
  std::map<int, double> class_ms_;                         ///< size class -> EWMA load ms
  std::map<std::string, std::uint64_t> bytes_;             ///< adapter -> bytes, once reported
  std::map<std::pair<actors::worker_id, std::string>, std::uint64_t> counts_;  ///< last load counts
  std::uint64_t seen_ = 0;
};

/// A request to place, as the priced placement sees it.
struct placement_request {
  bool needs_adapter = false;       ///< names an adapter
  std::uint32_t prompt_tokens = 0;  ///< tokens to prefill (prompt + tokens already streamed)
  double load_ms = 0;               ///< its adapter's load price (load_price_book::price_ms)
  double waited_ms = 0;             ///< since the router accepted it
};

/// What one worker looks like to the estimate (a slice of worker_view).
struct worker_cost_input {
  /// Prompt tokens placed there without a first token; output tokens still to come there.
  std::uint64_t prompt_ahead = 0, output_ahead = 0;
  std::uint32_t rows = 0;                  ///< requests placed there
  std::uint64_t cached_prefix_tokens = 0;  ///< prefix-cache credit (the router's prefix index)
  bool has_adapter = false;                ///< resident or loading there
  bool slots_full = false;                 ///< adapters in use there fill its adapter slots
  service_speed speed;                     ///< its measured rates
};

/// 1 / (1 + waited / aging); 1 when aging_ms is 0.
double age_weight(double waited_ms, double aging_ms) noexcept;

/// The predicted delay in milliseconds (the file comment's formula). `decode_share`: how much of
/// the decoding still to come on w counts too (0: a first token waits for one step of it; more
/// spreads the work to come, as least_loaded does, at some cost to the typical first token).
double predicted_delay_ms(const worker_cost_input& w, const placement_request& r, double aging_ms,
                          double decode_share = 0);

} // namespace lf::router
