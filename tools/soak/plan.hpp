#pragma once
/// The fault soak's plan (docs/benchmarks.md, "Fault soak"): which requests to send and which
/// faults to cause when. Pure C++ with a seeded generator: the same seed gives the same requests,
/// so a failing soak can be run again as it was.
///
/// Requests mix the base model and the config's adapters; greedy, seeded and unseeded sampling;
/// short and long prompts and outputs. About one in ten is cancelled (before it is accepted,
/// after some tokens, after a delay, one token before its end, or after its `done`), about one
/// in twenty is invalid in a way the server must refuse with a clear error.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/serve_errc.hpp"

namespace lf::soak {

/// How a request samples.
enum class sampling_mode {
  greedy,    ///< temperature 0
  seeded,    ///< temperature > 0 with the request's own seed
  unseeded,  ///< temperature > 0, the router picks the seed (done reports it)
};

/// When the client cancels a request (never for invalid ones).
enum class cancel_mode {
  none,
  before_accept,  ///< the cancel frame right after the submit: must end `cancelled`
  after_tokens,   ///< after `cancel_after_tokens` tokens arrived (mid-stream)
  after_delay,    ///< `cancel_after_ms` after the submit, wherever it is then
  near_end,       ///< when the second-to-last token arrives: `cancelled` or `done` may win
  after_end,      ///< right after its `done`: the server must send nothing back
};

/// How an invalid request is wrong.
enum class invalid_kind {
  none,
  zero_max_tokens,    ///< max_tokens 0: invalid_request
  over_max_tokens,    ///< max_tokens above the router's [limits] max_tokens: invalid_request
  top_p_zero,         ///< top_p 0: invalid_request
  unknown_adapter,    ///< an adapter that is not in the adapter directory: unknown_adapter
  prompt_too_long,    ///< more prompt tokens than the context window: prompt_too_long
  bad_field_type,     ///< temperature sent as a string: invalid_request
};

std::string_view to_string(sampling_mode m) noexcept;
std::string_view to_string(cancel_mode m) noexcept;
std::string_view to_string(invalid_kind k) noexcept;

/// The error an invalid request must get (serve_errc::none for valid ones).
serve_errc expected_error(invalid_kind k) noexcept;

/// One request of the soak.
struct planned_request {
  std::uint64_t id = 0;       ///< the wire id; unique over the run
  std::string prompt;
  std::string adapter;        ///< empty: the base model
  sampling_mode sampling = sampling_mode::greedy;
  std::optional<std::uint64_t> seed;  ///< set for seeded requests (and replays)
  float temperature = 0;
  float top_p = 1;
  int top_k = 0;
  int max_tokens = 16;
  bool ignore_eos = true;
  std::vector<std::string> stop;
  cancel_mode cancel = cancel_mode::none;
  std::uint32_t cancel_after_tokens = 0;  ///< after_tokens
  std::uint32_t cancel_after_ms = 0;      ///< after_delay
  invalid_kind invalid = invalid_kind::none;

  /// Invalid requests must end with this error; valid ones must not end with any.
  serve_errc expected() const noexcept { return expected_error(invalid); }
  /// Will the client send a cancel for it?
  bool cancels() const noexcept { return cancel != cancel_mode::none && cancel != cancel_mode::after_end; }
  /// Same input, same output: greedy, or sampled with a known seed.
  bool reproducible() const noexcept { return sampling != sampling_mode::unseeded || seed.has_value(); }
};

/// What to plan.
struct plan_settings {
  std::uint32_t requests = 2000;
  std::uint64_t seed = 1;
  std::vector<std::string> adapters;   ///< the config's adapters; the base model is always in the mix
  std::uint32_t context_window = 256;  ///< the model's; prompt + max_tokens stays within it
  std::uint32_t max_tokens_limit = 1024;  ///< the router's [limits] max_tokens
  std::uint32_t prompt_lo = 4, prompt_hi = 64;   ///< prompt tokens of valid requests
  std::uint32_t output_lo = 1, output_hi = 200;  ///< max_tokens of valid requests (capped by the window)
  double cancel_share = 0.10;
  double invalid_share = 0.05;
};

/// Text of about `tokens` tokens (the caller's tokenizer); `salt` varies the text.
using text_maker = std::function<std::string(std::uint32_t tokens, std::uint64_t salt)>;

/// The soak's requests, ids 1..n in order. Throws std::invalid_argument when the settings
/// cannot make a valid request (a window too small for the prompt range).
std::vector<planned_request> plan_requests(const plan_settings& s, const text_maker& make);

/// The same request with the seed it was served with, no cancel and a new id: what is sent
/// again on a calm cluster to compare its text with the first run's.
planned_request replay_of(const planned_request& r, std::uint64_t served_seed, std::uint64_t new_id);

/// A fault the soak causes.
enum class fault_kind {
  kill,   ///< SIGKILL the node's process (launch starts it again)
  stop,   ///< SIGSTOP it for `hold` (longer than the heartbeat timeout), then SIGCONT
  drain,  ///< `lorafleet drain NODE`: its requests move, nothing new is placed there
  /// SIGKILL a router replica of a split front (launch starts it again): the gateways continue
  /// its streams on the other replica. Recovered `hold` after it fired (the restart and the
  /// workers' re-registration), with every worker registered.
  kill_router,
};

std::string_view to_string(fault_kind k) noexcept;

/// One fault: what, where and when (a share of the run's requests ended).
struct fault {
  fault_kind kind = fault_kind::kill;
  std::string node;
  double at = 0;                       ///< fires once this share of requests has ended
  std::chrono::milliseconds hold{0};   ///< stop: how long the node stays stopped
};

/// Kill the first worker node at 15% of the run, stop the second at 35% for the heartbeat
/// timeout + 2 intervals + 1 s, kill the first router replica at 50% (with two or more
/// `router_nodes`), drain the first worker node at 60% (when `drain`): early enough that each
/// fault's recovery (a restart, a re-registration) ends while requests still run. Needs two
/// worker nodes (std::invalid_argument otherwise).
std::vector<fault> plan_faults(const std::vector<std::string>& worker_nodes,
                               std::chrono::milliseconds heartbeat_interval,
                               std::chrono::milliseconds heartbeat_timeout, bool drain,
                               const std::vector<std::string>& router_nodes = {});

} // namespace lf::soak
