#pragma once
/// Load-test workloads: which requests to send and when. Pure C++ with a seeded generator, so a
/// workload is reproducible and testable without a cluster.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tools/loadtest/tenants.hpp"

namespace lf::loadtest {

/// A length: fixed (lo == hi) or uniform in [lo, hi].
struct length_range {
  std::uint32_t lo = 128, hi = 128;
  std::uint32_t sample(std::mt19937_64& rng) const;
};

/// Parses "128" or "32-512"; throws std::invalid_argument naming `what`.
length_range parse_length_range(const std::string& s, const std::string& what);

/// How requests arrive.
enum class arrival_mode { closed, poisson };

/// What to send.
struct workload_config {
  arrival_mode mode = arrival_mode::closed;
  std::uint32_t concurrency = 8;    ///< closed loop: requests in flight
  double rate = 4;                  ///< poisson: requests per second
  double burstiness = 1;            ///< poisson: gamma shape; 1 = Poisson, < 1 burstier
  std::uint32_t num_requests = 100;
  length_range input{128, 128}, output{128, 128};
  bool ignore_eos = true;
  std::vector<std::string> adapters;  ///< empty: base model only
  double skew = 0;                    ///< share of requests on adapters[0]; the rest uniform
  /// > 0: Zipf popularity instead of `skew`: adapters[k] is drawn with weight 1 / (k + 1)^zipf.
  double zipf = 0;
  bool chat = false;
  std::vector<std::string> prompts;   ///< from a file; empty: synthetic text of `input` tokens
  std::uint64_t seed = 1;
  /// > 0: every long_every-th request (the 1st, the (1+k)-th, ...) asks for long_output tokens
  /// instead (the course's mix: 1 in 8 wants 100, the rest 10).
  std::uint32_t long_every = 0, long_output = 0;
  /// Tenants and their shares of the load (tenants.hpp): num_requests is split by share, and in
  /// Poisson mode so is the rate (one arrival stream per tenant). Empty: the default tenant only.
  std::vector<tenant_share> tenants;
};

/// One request to send.
struct planned_request {
  double at_s = 0;        ///< poisson: send time from the start; closed: 0 (send when a slot frees)
  std::string prompt;     ///< plain prompt, or the user message when chat
  std::uint32_t target_input_tokens = 0;
  std::uint32_t max_tokens = 0;
  std::string adapter;    ///< empty: base model
  std::string tenant;     ///< empty: the default tenant
};

/// `--adapters`: "N" (a number: N generated names, `prefix` + index zero-padded to the width of
/// N - 1, e.g. a00..a63) or a comma-separated list of names. Throws std::invalid_argument.
std::vector<std::string> parse_adapter_list(const std::string& s, const std::string& prefix);

/// `--skew`: "SHARE" (in (0, 1]: that share on the first adapter, the rest uniform) sets
/// cfg.skew; "zipf:S" (S > 0) sets cfg.zipf. Throws std::invalid_argument.
void parse_skew(const std::string& s, workload_config& cfg);

/// Gaps between arrivals: gamma(shape = burstiness, mean = 1 / rate), as vLLM's benchmark does.
std::vector<double> arrival_times(double rate, double burstiness, std::size_t n,
                                  std::mt19937_64& rng);

/// Turns `n_tokens` of a fixed English passage into text (the tokenizer is the caller's: `make`
/// receives a token count and returns text of about that many tokens).
using text_maker = std::string (*)(std::uint32_t n_tokens, std::uint64_t salt);

/// The requests of a run. Prompts come from cfg.prompts (cycled) or from `make`.
std::vector<planned_request> plan(const workload_config& cfg, text_maker make);

} // namespace lf::loadtest
