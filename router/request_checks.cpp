#include "router/request_checks.hpp"

namespace lf::router {

namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
         || c == '_' || c == '.';
}

check_failure fail(serve_errc code, std::string message) { return {code, std::move(message)}; }

} // namespace

bool valid_adapter_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_adapter_name_length)
    return false;
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

std::optional<check_failure> check_request(const std::vector<std::int32_t>& tokens,
                                           std::string_view text,
                                           const lf::sampling_params& params,
                                           std::string_view adapter, const request_limits& limits) {
  if (tokens.empty() && text.empty())
    return fail(serve_errc::invalid_request, "prompt is empty");
  if (tokens.empty() && limits.max_prompt_bytes > 0 && text.size() > limits.max_prompt_bytes)
    return fail(serve_errc::prompt_too_long, "prompt is " + std::to_string(text.size())
                                               + " bytes; the limit is "
                                               + std::to_string(limits.max_prompt_bytes));
  if (limits.vocab_size > 0)
    for (auto t : tokens)
      if (t < 0 || static_cast<std::size_t>(t) >= limits.vocab_size)
        return fail(serve_errc::invalid_request,
                    "prompt token id " + std::to_string(t) + " is outside the vocabulary [0, "
                      + std::to_string(limits.vocab_size) + ")");
  if (auto err = lf::validate(params, limits.max_tokens_limit, limits.max_stop, limits.max_stop_len))
    return fail(serve_errc::invalid_request, *err);
  if (!adapter.empty() && !valid_adapter_name(adapter))
    return fail(serve_errc::invalid_request,
                "adapter name is not a valid relative path of [A-Za-z0-9._-] components");
  if (limits.context_window > 0) {
    // A text prompt is at least one token; its exact count is the worker's business.
    std::size_t prompt = tokens.empty() ? 1 : tokens.size();
    if (prompt + static_cast<std::size_t>(params.max_tokens) > limits.context_window)
      return fail(serve_errc::prompt_too_long,
                  "prompt (" + std::to_string(prompt) + (tokens.empty() ? "+" : "")
                    + " tokens) + max_tokens (" + std::to_string(params.max_tokens)
                    + ") exceeds the context window of " + std::to_string(limits.context_window)
                    + " tokens");
  }
  return std::nullopt;
}

} // namespace lf::router
