#include "tools/soak/plan.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace lf::soak {

std::string_view to_string(sampling_mode m) noexcept {
  switch (m) {
    case sampling_mode::greedy: return "greedy";
    case sampling_mode::seeded: return "seeded";
    case sampling_mode::unseeded: return "unseeded";
  }
  return "greedy";
}

std::string_view to_string(cancel_mode m) noexcept {
  switch (m) {
    case cancel_mode::none: return "none";
    case cancel_mode::before_accept: return "before_accept";
    case cancel_mode::after_tokens: return "after_tokens";
    case cancel_mode::after_delay: return "after_delay";
    case cancel_mode::near_end: return "near_end";
    case cancel_mode::after_end: return "after_end";
  }
  return "none";
}

std::string_view to_string(invalid_kind k) noexcept {
  switch (k) {
    case invalid_kind::none: return "none";
    case invalid_kind::zero_max_tokens: return "zero_max_tokens";
    case invalid_kind::over_max_tokens: return "over_max_tokens";
    case invalid_kind::top_p_zero: return "top_p_zero";
    case invalid_kind::unknown_adapter: return "unknown_adapter";
    case invalid_kind::prompt_too_long: return "prompt_too_long";
    case invalid_kind::bad_field_type: return "bad_field_type";
  }
  return "none";
}

std::string_view to_string(fault_kind k) noexcept {
  switch (k) {
    case fault_kind::kill: return "kill";
    case fault_kind::stop: return "stop";
    case fault_kind::drain: return "drain";
    case fault_kind::kill_router: return "kill_router";
  }
  return "kill";
}

serve_errc expected_error(invalid_kind k) noexcept {
  switch (k) {
    case invalid_kind::none: return serve_errc::none;
    case invalid_kind::unknown_adapter: return serve_errc::unknown_adapter;
    case invalid_kind::prompt_too_long: return serve_errc::prompt_too_long;
    case invalid_kind::zero_max_tokens:
    case invalid_kind::over_max_tokens:
    case invalid_kind::top_p_zero:
    case invalid_kind::bad_field_type: return serve_errc::invalid_request;
  }
  return serve_errc::invalid_request;
}

namespace {

/// Prompt + max_tokens stays this far inside the window: the text maker's token count is close,
/// not exact (a decoded slice may tokenize a little differently).
constexpr std::uint32_t window_margin = 8;

std::uint32_t uniform(std::mt19937_64& rng, std::uint32_t lo, std::uint32_t hi) {
  return std::uniform_int_distribution<std::uint32_t>(lo, std::max(lo, hi))(rng);
}

bool chance(std::mt19937_64& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

void make_invalid(planned_request& r, std::mt19937_64& rng, const plan_settings& s, const text_maker& make) {
  constexpr invalid_kind kinds[] = {invalid_kind::zero_max_tokens, invalid_kind::over_max_tokens,
                                    invalid_kind::top_p_zero,      invalid_kind::unknown_adapter,
                                    invalid_kind::prompt_too_long, invalid_kind::bad_field_type};
  r.invalid = kinds[uniform(rng, 0, std::size(kinds) - 1)];
  r.max_tokens = 8;
  switch (r.invalid) {
    case invalid_kind::zero_max_tokens: r.max_tokens = 0; break;
    case invalid_kind::over_max_tokens: r.max_tokens = static_cast<int>(s.max_tokens_limit) + 1; break;
    case invalid_kind::top_p_zero: r.top_p = 0; r.temperature = 1; break;
    case invalid_kind::unknown_adapter: r.adapter = "no-such-adapter"; break;
    case invalid_kind::prompt_too_long: r.prompt = make(s.context_window + 16, r.id); break;
    default: break;
  }
}

void make_cancel(planned_request& r, std::mt19937_64& rng) {
  constexpr cancel_mode modes[] = {cancel_mode::before_accept, cancel_mode::after_tokens, cancel_mode::after_delay,
                                   cancel_mode::near_end, cancel_mode::after_end};
  r.cancel = modes[uniform(rng, 0, std::size(modes) - 1)];
  r.ignore_eos = true;  // so "after k tokens" and "near the end" are reached
  r.stop.clear();
  r.cancel_after_tokens = uniform(rng, 1, static_cast<std::uint32_t>(std::max(1, r.max_tokens / 2)));
  r.cancel_after_ms = uniform(rng, 0, 500);
}

} // namespace

std::vector<planned_request> plan_requests(const plan_settings& s, const text_maker& make) {
  if (s.prompt_lo < 1 || s.prompt_lo > s.prompt_hi || s.output_lo < 1 || s.output_lo > s.output_hi)
    throw std::invalid_argument("soak plan: empty prompt or output range");
  if (s.prompt_hi + window_margin + 8 > s.context_window)
    throw std::invalid_argument("soak plan: prompts of up to " + std::to_string(s.prompt_hi)
                                + " tokens leave no room for 8 output tokens in a context window of "
                                + std::to_string(s.context_window));
  std::mt19937_64 rng(s.seed);
  std::vector<planned_request> out;
  out.reserve(s.requests);
  for (std::uint32_t i = 0; i < s.requests; ++i) {
    planned_request r;
    r.id = i + 1;
    const auto prompt_tokens = uniform(rng, s.prompt_lo, s.prompt_hi);
    r.prompt = make(prompt_tokens, (rng() << 20) ^ r.id);
    if (!s.adapters.empty() && chance(rng, 0.6))
      r.adapter = s.adapters[uniform(rng, 0, static_cast<std::uint32_t>(s.adapters.size() - 1))];
    const auto pick = uniform(rng, 0, 9);
    r.sampling = pick < 4 ? sampling_mode::greedy : pick < 7 ? sampling_mode::seeded : sampling_mode::unseeded;
    if (r.sampling != sampling_mode::greedy) {
      r.temperature = std::uniform_real_distribution<float>(0.7f, 1.2f)(rng);
      r.top_p = chance(rng, 0.5) ? 1.0f : 0.9f;
      r.top_k = chance(rng, 0.5) ? 0 : 40;
      if (r.sampling == sampling_mode::seeded)
        r.seed = rng();
    }
    // Half short answers, half long ones (those are the ones a fault finds mid-stream).
    const auto room = s.context_window - prompt_tokens - window_margin;
    const auto short_hi = std::min<std::uint32_t>(s.output_hi, 32);
    const auto n = chance(rng, 0.5) || short_hi >= s.output_hi ? uniform(rng, s.output_lo, short_hi)
                                                              : uniform(rng, short_hi + 1, s.output_hi);
    r.max_tokens = static_cast<int>(std::min(n, room));
    r.ignore_eos = chance(rng, 0.75);
    if (chance(rng, 0.1))
      r.stop = {" the"};
    if (chance(rng, s.invalid_share)) {
      make_invalid(r, rng, s, make);
    } else if (chance(rng, s.cancel_share / (1 - s.invalid_share))) {
      r.max_tokens = std::max(r.max_tokens, static_cast<int>(std::min<std::uint32_t>(room, 8)));
      make_cancel(r, rng);
    }
    out.push_back(std::move(r));
  }
  return out;
}

planned_request replay_of(const planned_request& r, std::uint64_t served_seed, std::uint64_t new_id) {
  auto p = r;
  p.id = new_id;
  p.cancel = cancel_mode::none;
  if (p.sampling != sampling_mode::greedy)
    p.seed = served_seed;
  return p;
}

std::vector<fault> plan_faults(const std::vector<std::string>& worker_nodes,
                               std::chrono::milliseconds heartbeat_interval,
                               std::chrono::milliseconds heartbeat_timeout, bool drain,
                               const std::vector<std::string>& router_nodes) {
  if (worker_nodes.size() < 2)
    throw std::invalid_argument("the soak needs two worker nodes (one is killed while the other serves)");
  using namespace std::chrono_literals;
  std::vector<fault> f;
  f.push_back({fault_kind::kill, worker_nodes[0], 0.15, 0ms});
  f.push_back({fault_kind::stop, worker_nodes[1], 0.35, heartbeat_timeout + 2 * heartbeat_interval + 1000ms});
  if (router_nodes.size() >= 2)
    f.push_back({fault_kind::kill_router, router_nodes[0], 0.50, heartbeat_timeout + 2 * heartbeat_interval + 2000ms});
  if (drain)
    f.push_back({fault_kind::drain, worker_nodes[0], 0.60, 0ms});
  return f;
}

} // namespace lf::soak
