#include "proto/protocol.hpp"

#include "constrain/constraint.hpp"

#include <algorithm>
#include <tuple>
#include <type_traits>

#include "core/request.hpp"
#include "core/utf8.hpp"

namespace lf::proto {

namespace {

std::string too_long(const char* field, std::size_t got, std::size_t limit) {
  return std::string(field) + " is " + std::to_string(got) + " bytes; the limit is "
         + std::to_string(limit);
}

} // namespace

// --- submit helpers ---

std::optional<std::string> validate(const submit_msg& m) {
  if (!m.prompt.empty() && !m.messages.empty())
    return std::string("give either prompt or messages, not both");
  if (m.prompt.empty() && m.messages.empty())
    return std::string("prompt must not be empty (or give a non-empty messages list instead)");
  if (m.prompt.size() > max_prompt_bytes)
    return too_long("prompt", m.prompt.size(), max_prompt_bytes);
  if (!lf::is_valid_utf8(m.prompt))
    return std::string("prompt must be valid UTF-8");
  if (m.messages.size() > max_messages)
    return "messages must have at most " + std::to_string(max_messages) + " entries (got "
           + std::to_string(m.messages.size()) + ")";
  std::size_t content_bytes = 0;
  for (std::size_t i = 0; i < m.messages.size(); ++i) {
    const auto& content = m.messages[i].content;
    content_bytes += content.size();
    if (!lf::is_valid_utf8(content))
      return "messages[" + std::to_string(i) + "].content must be valid UTF-8";
  }
  if (content_bytes > max_prompt_bytes)
    return too_long("the messages' content together", content_bytes, max_prompt_bytes);
  if (m.adapter.size() > max_adapter_bytes)
    return too_long("adapter", m.adapter.size(), max_adapter_bytes);
  if (!lf::is_valid_utf8(m.adapter))
    return std::string("adapter must be valid UTF-8");
  if (m.deadline_ms && (*m.deadline_ms < 1 || *m.deadline_ms > max_deadline_ms))
    return "deadline_ms must be in [1, " + std::to_string(max_deadline_ms) + "] (got "
           + std::to_string(*m.deadline_ms) + ")";
  if (m.ttft_ms && (*m.ttft_ms < 1 || *m.ttft_ms > max_deadline_ms))
    return "ttft_ms must be in [1, " + std::to_string(max_deadline_ms) + "] (got " + std::to_string(*m.ttft_ms)
           + ")";
  // -1 is the draft's "absent" (the worker's policy): on the wire the field is left out instead.
  if (m.speculative && *m.speculative == -1)
    return std::string("speculative must be left out for the worker's policy, not -1 (-2: on, 0: off, "
                       "1 or more: that many drafted tokens)");
  if (m.tenant.size() > max_tenant_bytes)
    return too_long("tenant", m.tenant.size(), max_tenant_bytes);
  if (m.window && (*m.window < 1 || *m.window > max_window))
    return "window must be in [1, " + std::to_string(max_window) + "] (got " + std::to_string(*m.window) + ")";
  if (m.continued.size() > static_cast<std::size_t>(std::max(0, m.max_tokens)))
    return "continued must have at most max_tokens (" + std::to_string(m.max_tokens) + ") tokens (got "
           + std::to_string(m.continued.size()) + ")";
  if (!m.continued.empty() && m.temperature > 0 && !m.seed)
    return std::string("a sampled continuation needs the seed its tokens were drawn with");
  // Sizes only: a request's rules (ranges of temperature, top_p, max_tokens, speculative, the stop
  // strings' contents, the tenant's characters, logit_bias' count) are lf::validate_request's.
  const auto params = to_sampling_params(m);
  if (m.is_chat() && m.stop.size() <= max_stop_strings && params.stop.size() > max_stop_strings) {
    const auto added = params.stop.size() - m.stop.size();
    return "stop must have at most " + std::to_string(max_stop_strings - added)
           + " entries in a chat request, which adds " + std::to_string(added)
           + " default chat stop strings (got " + std::to_string(m.stop.size()) + ")";
  }
  if (!m.constraint_kind.empty() || !m.constraint.empty()) {
    // The constraint compiles here, at the edge, so one that cannot is refused with its reason
    // (never a worker failure); the worker compiles it again from its text (and caches it).
    if (m.constraint_kind.empty())
      return std::string("constraint given without constraint_kind");
    if (auto why = lf::constrain::check_constraint(params.constraint))
      return "constraint: " + *why;
  }
  if (params.stop.size() > max_stop_strings)
    return "stop must have at most " + std::to_string(max_stop_strings) + " entries (got "
           + std::to_string(params.stop.size()) + ")";
  for (std::size_t i = 0; i < m.stop.size(); ++i)
    if (m.stop[i].size() > max_stop_bytes)
      return "stop[" + std::to_string(i) + "] must be at most " + std::to_string(max_stop_bytes)
             + " bytes (got " + std::to_string(m.stop[i].size()) + " bytes)";
  return std::nullopt;
}

lf::sampling_params to_sampling_params(const submit_msg& m) {
  lf::sampling_params p;
  p.temperature = m.temperature;
  p.top_k = m.top_k;
  p.top_p = m.top_p;
  p.repetition_penalty = m.repetition_penalty;
  p.seed = m.seed;
  p.max_tokens = m.max_tokens;
  p.stop = m.stop;
  p.ignore_eos = m.ignore_eos;
  p.logit_bias = m.logit_bias;
  p.logprobs = m.logprobs;
  p.top_logprobs = m.top_logprobs;
  p.constraint = lf::output_constraint{m.constraint_kind, m.constraint};
  if (m.is_chat())
    for (const auto& s : chat_stop_sequences())
      if (std::find(p.stop.begin(), p.stop.end(), s) == p.stop.end())
        p.stop.push_back(s);
  return p;
}

std::string prompt_text(const submit_msg& m) {
  return m.is_chat() ? render_chat_prompt(m.messages) : m.prompt;
}

error_msg to_error_msg(const decode_error& e) {
  error_msg out;
  out.id = e.id;
  out.code = e.code;
  out.message = e.message;
  return out;
}

bool is_terminal(const server_message& m) noexcept {
  return std::holds_alternative<done_msg>(m) || std::holds_alternative<error_msg>(m)
         || std::holds_alternative<cancelled_msg>(m);
}

std::optional<client_request_id> request_of(const server_message& m) noexcept {
  return std::visit(
    [](const auto& x) -> std::optional<client_request_id> {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, stats_reply> || std::is_same_v<T, pong_msg>
                    || std::is_same_v<T, drained_msg> || std::is_same_v<T, adapters_result>
                    || std::is_same_v<T, undrained_msg>)
        return std::nullopt;
      else
        return x.id;
    },
    m);
}

// --- equality ---

bool operator==(const submit_msg& a, const submit_msg& b) {
  return std::tie(a.id, a.prompt, a.messages, a.adapter, a.temperature, a.top_k, a.top_p,
                  a.repetition_penalty, a.seed, a.max_tokens, a.stop, a.ignore_eos, a.stream,
                  a.deadline_ms, a.window, a.ttft_ms, a.tenant, a.logit_bias, a.logprobs, a.top_logprobs,
                  a.constraint_kind, a.constraint, a.speculative, a.continued)
         == std::tie(b.id, b.prompt, b.messages, b.adapter, b.temperature, b.top_k, b.top_p,
                     b.repetition_penalty, b.seed, b.max_tokens, b.stop, b.ignore_eos, b.stream,
                     b.deadline_ms, b.window, b.ttft_ms, b.tenant, b.logit_bias, b.logprobs, b.top_logprobs,
                     b.constraint_kind, b.constraint, b.speculative, b.continued);
}
bool operator==(const cancel_msg& a, const cancel_msg& b) { return a.id == b.id; }
bool operator==(const credit_msg& a, const credit_msg& b) { return a.id == b.id && a.tokens == b.tokens; }
bool operator==(const stats_msg&, const stats_msg&) { return true; }
bool operator==(const ping_msg&, const ping_msg&) { return true; }
bool operator==(const accepted_msg& a, const accepted_msg& b) { return a.id == b.id; }
namespace {
bool same(const lf::token_logprobs& a, const lf::token_logprobs& b) {
  return a.logprob == b.logprob && a.top_tokens == b.top_tokens && a.top_logprobs == b.top_logprobs;
}
bool same(const std::vector<lf::token_logprobs>& a, const std::vector<lf::token_logprobs>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return same(x, y); });
}
} // namespace

bool operator==(const token_msg& a, const token_msg& b) {
  return std::tie(a.id, a.text, a.token, a.index) == std::tie(b.id, b.text, b.token, b.index)
         && a.logprobs.has_value() == b.logprobs.has_value() && (!a.logprobs || same(*a.logprobs, *b.logprobs));
}
bool operator==(const usage_info& a, const usage_info& b) {
  return std::tie(a.prompt_tokens, a.completion_tokens, a.cached_tokens, a.resumed)
         == std::tie(b.prompt_tokens, b.completion_tokens, b.cached_tokens, b.resumed);
}
bool operator==(const timing_info& a, const timing_info& b) {
  return std::tie(a.queue_ms, a.ttft_ms, a.total_ms) == std::tie(b.queue_ms, b.ttft_ms, b.total_ms);
}
bool operator==(const done_msg& a, const done_msg& b) {
  return std::tie(a.id, a.finish_reason, a.usage, a.timings, a.text, a.seed, a.tokens)
           == std::tie(b.id, b.finish_reason, b.usage, b.timings, b.text, b.seed, b.tokens)
         && same(a.logprobs, b.logprobs);
}
bool operator==(const error_msg& a, const error_msg& b) {
  return std::tie(a.id, a.code, a.message, a.retry_after_ms)
         == std::tie(b.id, b.code, b.message, b.retry_after_ms);
}
bool operator==(const cancelled_msg& a, const cancelled_msg& b) { return a.id == b.id; }
bool operator==(const stats_reply& a, const stats_reply& b) { return a.values == b.values; }
bool operator==(const pong_msg&, const pong_msg&) { return true; }
bool operator==(const drain_msg& a, const drain_msg& b) { return a.node == b.node; }
bool operator==(const drained_msg& a, const drained_msg& b) {
  return std::tie(a.node, a.workers, a.moved) == std::tie(b.node, b.workers, b.moved);
}
bool operator==(const decode_error& a, const decode_error& b) {
  return std::tie(a.code, a.message, a.id) == std::tie(b.code, b.message, b.id);
}

bool operator!=(const submit_msg& a, const submit_msg& b) { return !(a == b); }
bool operator!=(const cancel_msg& a, const cancel_msg& b) { return !(a == b); }
bool operator!=(const credit_msg& a, const credit_msg& b) { return !(a == b); }
bool operator!=(const stats_msg& a, const stats_msg& b) { return !(a == b); }
bool operator!=(const ping_msg& a, const ping_msg& b) { return !(a == b); }
bool operator!=(const accepted_msg& a, const accepted_msg& b) { return !(a == b); }
bool operator!=(const token_msg& a, const token_msg& b) { return !(a == b); }
bool operator!=(const usage_info& a, const usage_info& b) { return !(a == b); }
bool operator!=(const timing_info& a, const timing_info& b) { return !(a == b); }
bool operator!=(const done_msg& a, const done_msg& b) { return !(a == b); }
bool operator!=(const error_msg& a, const error_msg& b) { return !(a == b); }
bool operator!=(const cancelled_msg& a, const cancelled_msg& b) { return !(a == b); }
bool operator!=(const stats_reply& a, const stats_reply& b) { return !(a == b); }
bool operator!=(const pong_msg& a, const pong_msg& b) { return !(a == b); }
bool operator==(const adapters_msg& a, const adapters_msg& b) {
  return std::tie(a.op, a.name, a.path) == std::tie(b.op, b.name, b.path);
}
bool operator==(const adapters_result& a, const adapters_result& b) {
  auto row = [](const adapter_row& r) {
    return std::tie(r.name, r.version, r.removed, r.path, r.hash, r.rank, r.targets, r.bytes, r.updated_ms, r.resident);
  };
  if (std::tie(a.error, a.message, a.seq) != std::tie(b.error, b.message, b.seq) || a.adapters.size() != b.adapters.size())
    return false;
  for (std::size_t i = 0; i < a.adapters.size(); ++i)
    if (row(a.adapters[i]) != row(b.adapters[i]))
      return false;
  return true;
}
bool operator!=(const adapters_msg& a, const adapters_msg& b) { return !(a == b); }
bool operator!=(const adapters_result& a, const adapters_result& b) { return !(a == b); }
bool operator!=(const drain_msg& a, const drain_msg& b) { return !(a == b); }
bool operator==(const undrain_msg& a, const undrain_msg& b) { return a.node == b.node; }
bool operator==(const undrained_msg& a, const undrained_msg& b) { return a.node == b.node && a.workers == b.workers; }
bool operator!=(const undrain_msg& a, const undrain_msg& b) { return !(a == b); }
bool operator!=(const undrained_msg& a, const undrained_msg& b) { return !(a == b); }
bool operator!=(const drained_msg& a, const drained_msg& b) { return !(a == b); }
bool operator!=(const decode_error& a, const decode_error& b) { return !(a == b); }

} // namespace lf::proto
