#include "gateway/openai/api_error.hpp"

#include <set>

namespace lf::gateway {

api_error to_api_error(serve_errc code, std::string message) {
  api_error e;
  // The router's messages start with the field they are about ("temperature must be ...").
  if (code == serve_errc::invalid_request) {
    static const std::set<std::string> fields{"temperature", "top_p", "top_k", "repetition_penalty", "max_tokens",
                                              "stop", "seed", "top_logprobs", "prompt", "adapter",
                                              "logit_bias", "tenant", "ignore_eos", "speculative"};
    const auto end = message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_");
    const auto first = message.substr(0, end);
    if (fields.count(first))
      e.param = first == "adapter" ? "model" : first;
  }
  e.message = std::move(message);
  e.code = std::string(to_string(code));
  switch (code) {
    case serve_errc::invalid_request:
    case serve_errc::prompt_too_long: e.status = 400; break;
    case serve_errc::unknown_adapter: e.status = 404; e.type = "not_found_error"; break;
    case serve_errc::overloaded: e.status = 429; e.type = "rate_limit_error"; break;
    case serve_errc::timeout: e.status = 504; e.type = "timeout_error"; break;
    case serve_errc::shutting_down: e.status = 503; e.type = "service_unavailable_error"; break;
    // Not the client's rate (429) but the server's load against the request's own deadline.
    case serve_errc::deadline_unmeetable: e.status = 503; e.type = "service_unavailable_error"; break;
    // No worker takes requests (drained or lost): the server's state, sent with Retry-After.
    case serve_errc::no_workers: e.status = 503; e.type = "service_unavailable_error"; break;
    case serve_errc::cancelled: e.status = 499; e.type = "cancelled"; break;
    case serve_errc::unauthenticated: e.status = 401; e.type = "authentication_error"; break;
    case serve_errc::forbidden: e.status = 403; e.type = "permission_error"; break;
    case serve_errc::rate_limited: e.status = 429; e.type = "requests"; break;
    default: e.status = 500; e.type = "server_error"; break;
  }
  return e;
}

} // namespace lf::gateway
