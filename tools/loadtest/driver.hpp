#pragma once
/// Runs a planned workload against a cluster through the C++ client and measures every request:
/// time to first token, inter-token gaps, end-to-end latency, tokens, terminal status. Requests
/// without a terminal reply by the end are counted as lost.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/client.hpp"
#include "tools/loadtest/stats.hpp"
#include "tools/loadtest/workload.hpp"

namespace lf::loadtest {

/// Milliseconds from `a` to `b` on the steady clock (the drivers' latency unit).
inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// How to send.
struct driver_options {
  arrival_mode mode = arrival_mode::closed;
  std::uint32_t concurrency = 8;             ///< closed loop
  double duration_s = 0;                     ///< > 0: stop sending after this long
  std::chrono::milliseconds drain{120000};   ///< wait this long for the last replies
  bool chat = false;
  bool ignore_eos = true;
  double temperature = 0;                    ///< 0: greedy
  /// Closed loop with tenants: requests in flight per tenant (tenants not listed: `concurrency`).
  std::map<std::string, std::uint32_t> tenant_concurrency;
  std::optional<std::uint64_t> deadline_ms, ttft_ms;  ///< on every request
  /// Called about twice a second with (ended, sent, output tokens so far, elapsed seconds).
  std::function<void(std::size_t, std::size_t, std::uint64_t, double)> progress;
};

/// The measured run.
struct driver_result {
  std::vector<request_sample> samples;  ///< requests that ended (any status)
  std::size_t lost = 0;                 ///< sent, never ended
  double duration_s = 0;                ///< first send to last terminal reply
};

/// Sends one request; its callbacks run on the sender's I/O thread. The ZeroMQ client's
/// submit, or the HTTP client's (http_client.hpp).
using submit_fn = std::function<void(const proto::submit_msg&, client::stream_callbacks)>;

/// Sends `plan` through `submit` as `opts` says and waits for the replies.
driver_result run_workload(const submit_fn& submit, const std::vector<planned_request>& plan,
                           const driver_options& opts);

/// The same through the ZeroMQ client `c`.
driver_result run_workload(client::client& c, const std::vector<planned_request>& plan,
                           const driver_options& opts);

} // namespace lf::loadtest
