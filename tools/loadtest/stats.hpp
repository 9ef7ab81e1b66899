#pragma once
/// Load-test statistics: per-request samples in, throughput, latency percentiles, error counts and
/// goodput out. Pure C++ (no sockets, no clocks): the driver passes measured times in.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lf::loadtest {

/// What one request measured, times in milliseconds from its send.
struct request_sample {
  double sent_s = 0;               ///< send time, seconds from the start of the run
  double ttft_ms = 0;              ///< first token (0 when none came)
  std::vector<double> itl_ms;      ///< gaps between consecutive tokens
  double e2e_ms = 0;               ///< terminal reply
  std::uint32_t tokens_in = 0;
  std::uint32_t tokens_out = 0;
  std::uint32_t tokens_cached = 0; ///< prompt tokens the server took from its prefix cache
  std::string status = "done";     ///< "done", or the error code ("overloaded", "timeout", ...)
  std::string tenant;              ///< empty: the default tenant
  bool ok() const { return status == "done"; }
  /// Time per output token after the first: (e2e - ttft) / (tokens_out - 1); 0 with < 2 tokens.
  double tpot_ms() const;
};

/// Limits a request must meet to count towards goodput (unset: no limit).
struct goodput_limits {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
};

/// Distribution of one latency.
struct latency_summary {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

/// Summarizes `v` (nearest-rank percentiles); all zero when empty.
latency_summary summarize_latency(std::vector<double> v);

/// The result of one load-test run.
struct run_summary {
  std::size_t sent = 0, completed = 0, failed = 0, lost = 0;
  double duration_s = 0;
  double request_throughput = 0;   ///< completed requests / s
  double input_tokens_per_s = 0;   ///< prompt tokens of completed requests / s
  double output_tokens_per_s = 0;  ///< generated tokens of all requests / s
  std::uint64_t input_tokens = 0;  ///< prompt tokens of completed requests
  std::uint64_t cached_tokens = 0; ///< of those, served from the server's prefix cache
  latency_summary ttft, tpot, itl, e2e;   ///< over completed requests
  std::map<std::string, std::size_t> errors;  ///< failed requests by code
  std::size_t good = 0;            ///< completed requests meeting every goodput limit
  double goodput = 0;              ///< good requests / s
  /// Requests the HTTP client sent again on a new connection because the kept-alive one they went
  /// out on was closed by the server before any byte of the reply (tools/loadtest/http_reuse.hpp).
  /// Not errors: each such request is counted once, by how it ended. Set by the caller (the
  /// samples do not carry it); 0 over ZeroMQ.
  std::size_t stale_retries = 0;
};

/// `lost`: requests sent that never got a terminal reply (not in `samples`).
run_summary summarize(const std::vector<request_sample>& samples, double duration_s,
                      const goodput_limits& limits, std::size_t lost = 0);

} // namespace lf::loadtest
