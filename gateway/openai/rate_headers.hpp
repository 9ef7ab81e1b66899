#pragma once
/// What a rate-limit verdict (core/rate_limit.hpp) looks like over HTTP, as OpenAI sends it:
/// x-ratelimit-limit-requests / -tokens, x-ratelimit-remaining-*, x-ratelimit-reset-* ("1s",
/// "6m0s"), and for a refusal the 429 error object with Retry-After. Pure C++.

#include <string>
#include <utility>
#include <vector>

#include "core/rate_limit.hpp"
#include "gateway/openai/openai_request.hpp"

namespace lf::gateway {

/// The x-ratelimit-* headers of the limits the key has (none for a key without limits).
std::vector<std::pair<std::string, std::string>> rate_limit_headers(const rate_verdict& v);

/// The refusal: 429 rate_limit_exceeded naming which limit and when to retry (400 when the
/// request asks more tokens than the key may use in a minute: no retry would help).
api_error rate_limited_error(const rate_verdict& v, const std::string& key_name);

} // namespace lf::gateway
