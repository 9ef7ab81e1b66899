#pragma once
/// Load tests with several tenants: how the load is split, and what each tenant received. Pure
/// C++ (no sockets, no clocks): the driver's samples in, figures out.
///
/// Service is counted the way the router's virtual token counters charge it: a request's prompt
/// tokens when its first token arrives (w_p each), then every output token as it arrives (w_o
/// each). Over a window in which every tenant has requests waiting (backlogged), VTC keeps the
/// service of any two tenants within a bound whatever their loads:
///
///   max_gap   the largest |(S_f(t2) - S_f(t1)) - (S_g(t2) - S_g(t1))| over tenants f, g and
///             times t1 < t2 in the window, S the cumulative service (the VTC paper's measure)
///   jain      Jain's fairness index of the tenants' service in the window,
///             (sum x)^2 / (n sum x^2): 1 when equal, 1/n when one tenant gets everything
///
/// The window runs from the moment every tenant has sent its first request, plus a warm-up of
/// `warmup` of the span, to the moment the first tenant sends its last (after that it may not be
/// backlogged).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/loadtest/stats.hpp"

namespace lf::loadtest {

/// One tenant of the load and its share of it.
struct tenant_share {
  std::string name;
  double share = 1;  ///< relative: a:10,b:1 sends ten of a's for one of b's
};

/// Parses "a:10,b:1,c:1" (a name alone means share 1); throws std::invalid_argument naming
/// `what` for an empty list, an empty or duplicate name, a name over 64 bytes or a share that is
/// not a number > 0.
std::vector<tenant_share> parse_tenants(const std::string& spec, const std::string& what);

/// `total` split by share: each tenant max(1, round(total * share / sum of shares)).
std::map<std::string, std::uint32_t> split_by_share(const std::vector<tenant_share>& tenants, double total);

/// VTC's token weights, as the router's defaults.
struct service_weights {
  double prompt = 1, output = 2;
};

/// One tenant over a run and in the fairness window.
struct tenant_summary {
  std::string name;
  std::size_t sent = 0, completed = 0, failed = 0;
  std::map<std::string, std::size_t> errors;  ///< failed requests by code
  std::uint64_t prompt_tokens = 0, output_tokens = 0;  ///< received in the window
  double service = 0;                                  ///< weighted, in the window
};

/// The fairness of a run.
struct fairness_summary {
  double window_start_s = 0, window_end_s = 0;  ///< seconds from the start of the run
  std::vector<tenant_summary> tenants;          ///< in the order given
  double max_gap = 0;                           ///< weighted tokens (see the file comment)
  double jain = 1;
};

/// Fairness of `samples` among `tenants` (see the file comment). `warmup`: share of the window's
/// span skipped at its start, in [0, 1).
fairness_summary fairness(const std::vector<request_sample>& samples, const std::vector<tenant_share>& tenants,
                          const service_weights& w, double warmup = 0.1);

/// Capacity spent on requests that timed out anyway: tokens computed for requests that ended with
/// `timeout` after their first token (their prompt, and the output they streamed), over the tokens
/// computed for all requests that produced one (completed or not). Requests that timed out before
/// their first token count nothing (their prefill may have run: a lower bound).
struct waste_summary {
  std::uint64_t wasted_tokens = 0, spent_tokens = 0;
  std::size_t timed_out = 0;          ///< requests that ended with timeout
  std::size_t timed_out_started = 0;  ///< of those, after their first token
  double share() const { return spent_tokens ? static_cast<double>(wasted_tokens) / spent_tokens : 0.0; }
};

waste_summary waste(const std::vector<request_sample>& samples);

/// SVG: each tenant's cumulative service over the run (the fairness window marked).
std::string tenant_service_svg(const std::vector<request_sample>& samples, const fairness_summary& f,
                               const service_weights& w, const std::string& title);

} // namespace lf::loadtest
