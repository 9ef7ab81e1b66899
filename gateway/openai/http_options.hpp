#pragma once
/// The HTTP gateway's settings (http_gateway.hpp), apart so that its shared state (http_impl.hpp)
/// needs nothing of the gateway class.

#include <cstddef>
#include <memory>
#include <string>

#include "core/api_keys.hpp"
#include "core/request.hpp"
#include "gateway/openai/tls_context.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::gateway {

/// Settings of the HTTP gateway.
struct http_options {
  std::string listen;  ///< host:port (port 0 picks a free one), e.g. "127.0.0.1:8000"
  std::shared_ptr<const text::tokenizer> tokenizer;  ///< required
  std::string model_name = "gpt2";        ///< `model` naming the base model; other names are adapters
  /// The router's: every request is checked against them where it comes in (openai_intake.hpp).
  /// context_window 0: not known (chat's default max_tokens 16, echo refused as overloaded).
  request_limits limits;
  std::size_t max_body_bytes = std::size_t{1} << 20;   ///< larger bodies: 413
  std::size_t max_prompt_bytes = std::size_t{1} << 20; ///< rendered prompt larger: prompt_too_long
  std::size_t max_live = 4096;            ///< HTTP requests in flight at most; more: 429
  std::size_t max_buffered_bytes = std::size_t{8} << 20;  ///< per connection, unsent reply bytes
  int max_n = 16;                         ///< choices per prompt
  std::shared_ptr<const auth::key_table> keys;  ///< API keys; nullptr or no secrets: none
  /// Rate-limit buckets per key (rpm= / tpm=), shared with the process's ZeroMQ gateway; nullptr:
  /// the gateway makes its own.
  std::shared_ptr<shared_rate_limiter> limiter;
  bool metrics_need_key = false;          ///< /metrics, /api/stats and the dashboard need a key
  tls_files tls;                          ///< both set: HTTPS (checked at start); neither: HTTP
};

} // namespace lf::gateway
