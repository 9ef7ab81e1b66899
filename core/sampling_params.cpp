#include "core/sampling_params.hpp"

#include <charconv>
#include <cmath>

#include "core/utf8.hpp"

namespace lf {

namespace {

/// Shortest text that round-trips, so messages show what the client sent ("0.1", not
/// "0.100000001"), and "nan" / "inf" / "-inf" for the non-finite values.
std::string show(float v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string fail(const char* field, const char* rule, const std::string& got) {
  return std::string(field) + " must be " + rule + " (got " + got + ")";
}

} // namespace

std::optional<std::string> validate(const sampling_params& p, int max_tokens_limit,
                                    std::size_t max_stop, std::size_t max_stop_len) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
    return fail("temperature", "a finite number >= 0", show(p.temperature));
  if (p.top_k < 0)
    return fail("top_k", ">= 0 (0 disables it)", std::to_string(p.top_k));
  // Written so NaN fails too: every comparison with NaN is false.
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return fail("top_p", "a finite number in (0, 1]", show(p.top_p));
  if (!std::isfinite(p.repetition_penalty) || !(p.repetition_penalty > 0.0f))
    return fail("repetition_penalty", "a finite number > 0 (1 disables it)",
                show(p.repetition_penalty));
  if (p.max_tokens < 1 || p.max_tokens > max_tokens_limit)
    return fail("max_tokens", ("in [1, " + std::to_string(max_tokens_limit) + "]").c_str(),
                std::to_string(p.max_tokens));
  if (p.top_logprobs < 0 || p.top_logprobs > max_top_logprobs)
    return fail("top_logprobs", ("in [0, " + std::to_string(max_top_logprobs) + "]").c_str(),
                std::to_string(p.top_logprobs));
  if (p.top_logprobs > 0 && !p.logprobs)
    return std::string("top_logprobs needs logprobs (got top_logprobs ") + std::to_string(p.top_logprobs)
           + " without logprobs)";
  if (p.logit_bias.size() > max_logit_bias_entries)
    return "logit_bias must have at most " + std::to_string(max_logit_bias_entries) + " entries (got "
           + std::to_string(p.logit_bias.size()) + ")";
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0)
      return "logit_bias keys must be token ids >= 0 (got " + std::to_string(id) + ")";
    if (!(bias >= -max_logit_bias && bias <= max_logit_bias))
      return "logit_bias[" + std::to_string(id) + "] must be in [-100, 100] (got " + show(bias) + ")";
  }
  if (p.stop.size() > max_stop)
    return "stop must have at most " + std::to_string(max_stop) + " entries (got "
           + std::to_string(p.stop.size()) + ")";
  for (std::size_t i = 0; i < p.stop.size(); ++i) {
    const auto& s = p.stop[i];
    const auto field = "stop[" + std::to_string(i) + "]";
    if (s.empty())
      return field + " must not be empty";
    if (s.size() > max_stop_len)
      return field + " must be at most " + std::to_string(max_stop_len) + " bytes (got "
             + std::to_string(s.size()) + " bytes)";
    if (!is_valid_utf8(s))
      return field + " must be valid UTF-8";
  }
  const auto& c = p.constraint;
  if (!c.kind.empty()) {
    if (c.kind != "json_object" && c.kind != "json_schema" && c.kind != "regex" && c.kind != "choice" &&
        c.kind != "grammar")
      return "constraint kind must be json_object, json_schema, regex, choice or grammar (got \"" + c.kind +
             "\")";
    if (c.text.size() > max_constraint_text)
      return "constraint must be at most " + std::to_string(max_constraint_text) + " bytes (got " +
             std::to_string(c.text.size()) + " bytes)";
    if (c.kind != "json_object" && c.text.empty())
      return "a " + c.kind + " constraint must not be empty";
    if (p.ignore_eos)
      return std::string("ignore_eos cannot be combined with a constraint (the output ends where it is complete)");
  } else if (!c.text.empty()) {
    return std::string("constraint text given without a kind");
  }
  return std::nullopt;
}

} // namespace lf
