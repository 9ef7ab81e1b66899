#include "gateway/openai/rate_headers.hpp"

namespace lf::gateway {

std::vector<std::pair<std::string, std::string>> rate_limit_headers(const rate_verdict& v) {
  std::vector<std::pair<std::string, std::string>> h;
  if (v.limited_requests) {
    h.emplace_back("x-ratelimit-limit-requests", std::to_string(v.limit_requests));
    h.emplace_back("x-ratelimit-remaining-requests", std::to_string(v.remaining_requests));
    h.emplace_back("x-ratelimit-reset-requests", reset_text(v.reset_requests_ms));
  }
  if (v.limited_tokens) {
    h.emplace_back("x-ratelimit-limit-tokens", std::to_string(v.limit_tokens));
    h.emplace_back("x-ratelimit-remaining-tokens", std::to_string(v.remaining_tokens));
    h.emplace_back("x-ratelimit-reset-tokens", reset_text(v.reset_tokens_ms));
  }
  return h;
}

api_error rate_limited_error(const rate_verdict& v, const std::string& key_name) {
  if (v.never)
    return {400,
            "the request needs more tokens (prompt + max_tokens) than key \"" + key_name + "\" may use in a minute ("
              + std::to_string(v.limit_tokens) + " tokens per minute): lower max_tokens",
            "invalid_request_error", "max_tokens", "rate_limited"};
  // The limit that refused it: requests when none is left, else tokens.
  const bool requests = v.limited_requests && (v.remaining_requests == 0 || !v.limited_tokens);
  const auto which = requests ? "requests per minute (" + std::to_string(v.limit_requests) + ")"
                              : "tokens per minute (" + std::to_string(v.limit_tokens) + ", "
                                  + std::to_string(v.remaining_tokens) + " left)";
  return {429,
          "Rate limit reached for key \"" + key_name + "\" on " + which
            + ". Please try again in " + reset_text(v.retry_after_ms) + ".",
          "requests", "", "rate_limited"};
}

} // namespace lf::gateway
