#include "core/request.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/utf8.hpp"

namespace lf {

namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '_' || c == '.';
}

check_failure fail(serve_errc code, std::string message) { return {code, std::move(message)}; }

// The prompt's rules, shared by validate_request and check_prompt (one wording each).

std::optional<check_failure> limits_unknown(const request_limits& limits) {
  if (limits.context_window == 0 || limits.vocab_size == 0)
    return fail(serve_errc::overloaded, "no worker has registered yet: the model's context window is not known");
  return std::nullopt;
}

std::optional<check_failure> bad_prompt_ids(const std::vector<std::int32_t>& prompt, std::size_t vocab_size) {
  if (prompt.empty())
    return fail(serve_errc::invalid_request, "prompt is empty");
  for (auto t : prompt)
    if (t < 0 || static_cast<std::size_t>(t) >= vocab_size)
      return fail(serve_errc::invalid_request,
                  "prompt token id " + std::to_string(t) + " is outside the vocabulary [0, "
                    + std::to_string(vocab_size) + ")");
  return std::nullopt;
}

/// prompt + max_tokens beyond the window; a prompt generating nothing (max_tokens 0) is named alone.
std::optional<check_failure> beyond_window(std::size_t prompt, int max_tokens, std::uint32_t context_window) {
  if (prompt + static_cast<std::size_t>(std::max(0, max_tokens)) <= context_window)
    return std::nullopt;
  const auto tokens = "prompt (" + std::to_string(prompt) + " tokens)";
  const auto asked = max_tokens > 0 ? " + max_tokens (" + std::to_string(max_tokens) + ")" : std::string();
  return fail(serve_errc::prompt_too_long,
              tokens + asked + " exceeds the context window of " + std::to_string(context_window) + " tokens");
}

} // namespace

bool valid_adapter_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_adapter_name_length)
    return false;
  if (const auto at = name.rfind('@'); at != std::string_view::npos) {
    const auto version = name.substr(at + 1);
    if (version.empty() || version.size() > 9 || version[0] == '0')
      return false;
    for (char c : version)
      if (c < '0' || c > '9')
        return false;
    name = name.substr(0, at);
  }
  bool component_start = true;
  for (char c : name) {
    if (c == '/') {
      if (component_start)
        return false;  // leading '/' or "//"
      component_start = true;
      continue;
    }
    if (!name_char(c) || (component_start && c == '.'))
      return false;  // bad character, or ".", "..", hidden names
    component_start = false;
  }
  return !component_start;  // no trailing '/'
}

bool valid_tenant_name(std::string_view name) noexcept {
  if (name.size() > max_tenant_name_length || !is_valid_utf8(name))
    return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      return false;
  return true;
}

std::variant<validated_request, check_failure> validate_request(request_draft d,
                                                                const request_limits& limits) {
  if (auto unknown = limits_unknown(limits))
    return *unknown;
  if (auto bad = bad_prompt_ids(d.prompt, limits.vocab_size))
    return *bad;
  if (auto err = validate(d.params, limits.max_tokens_limit, limits.max_stop, limits.max_stop_len))
    return fail(serve_errc::invalid_request, *err);
  // validate() has refused negative ids; the largest id is the map's last.
  if (!d.params.logit_bias.empty() && static_cast<std::size_t>(d.params.logit_bias.rbegin()->first) >= limits.vocab_size)
    return fail(serve_errc::invalid_request,
                "logit_bias token id " + std::to_string(d.params.logit_bias.rbegin()->first)
                  + " is outside the vocabulary [0, " + std::to_string(limits.vocab_size) + ")");
  if (!d.adapter.empty() && !valid_adapter_name(d.adapter))
    return fail(serve_errc::invalid_request,
                "adapter name is not a valid relative path of [A-Za-z0-9._-] components");
  if (!valid_tenant_name(d.tenant))
    return fail(serve_errc::invalid_request,
                "tenant must be at most " + std::to_string(max_tenant_name_length)
                  + " bytes of UTF-8 without control characters (got " + std::to_string(d.tenant.size())
                  + " bytes)");
  if (!std::isfinite(d.tenant_weight) || !(d.tenant_weight > 0))
    return fail(serve_errc::invalid_request, "tenant weight must be finite and > 0");
  if (d.speculative < -2 || d.speculative > max_speculative)
    return fail(serve_errc::invalid_request,
                "speculative must be -1 (the worker's policy), -2 (on), 0 (off) or 1 to "
                  + std::to_string(max_speculative) + " (got " + std::to_string(d.speculative) + ")");
  // validate() has refused max_tokens < 1, so the message names max_tokens.
  if (auto beyond = beyond_window(d.prompt.size(), d.params.max_tokens, limits.context_window))
    return *beyond;
  validated_request v;
  v.d_ = std::move(d);
  return v;
}

std::optional<check_failure> check_prompt(const std::vector<std::int32_t>& prompt, const request_limits& limits,
                                         int max_tokens) {
  if (auto unknown = limits_unknown(limits))
    return unknown;
  if (auto bad = bad_prompt_ids(prompt, limits.vocab_size))
    return bad;
  return beyond_window(prompt.size(), max_tokens, limits.context_window);
}

validated_request validate_or_throw(request_draft d, const request_limits& limits) {
  auto r = validate_request(std::move(d), limits);
  if (auto* bad = std::get_if<check_failure>(&r))
    throw std::invalid_argument(bad->message);
  return std::get<validated_request>(std::move(r));
}

} // namespace lf
