#pragma once
/// The router's validation of a request before it costs a queue slot. Pure C++ (no CAF): the
/// same sampling checks the worker runs (engine::validate), plus size limits and the adapter
/// name's syntax. What needs the tokenizer (a text prompt's exact token count) is left to the
/// worker, which answers prompt_too_long itself.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/serve_errc.hpp"
#include "core/sampling_params.hpp"

namespace lf::router {

/// Limits the router enforces; 0 disables a size check.
struct request_limits {
  std::uint32_t context_window = 0;    ///< prompt tokens + max_tokens at most (0: unknown yet)
  std::size_t vocab_size = 0;          ///< token ids of a pre-tokenized prompt below this
  std::size_t max_prompt_bytes = 1 << 20;  ///< text prompts at most this long
  int max_tokens_limit = 1 << 16;
  std::size_t max_stop = 16;           ///< stop strings at most
  std::size_t max_stop_len = 256;      ///< bytes per stop string at most
};

/// Why a request is refused.
struct check_failure {
  serve_errc code = serve_errc::invalid_request;
  std::string message;
};

/// Longest adapter name accepted (same bound as engine::resolve_adapter_path).
inline constexpr std::size_t max_adapter_name_length = 128;

/// Adapter names are relative paths under the adapter root: letters, digits, '-', '_' and '.',
/// with single '/' between components, no component starting with '.', at most
/// max_adapter_name_length bytes ("shakespeare", "styles/kjv"). The empty name (base model)
/// is not a valid adapter name.
bool valid_adapter_name(std::string_view name) noexcept;

/// Checks a request: a prompt is given (`tokens` or `text`), within the limits, token ids in the
/// vocabulary, sampling parameters valid, adapter name well-formed (when not empty), and
/// prompt + max_tokens within the context window when that can be known without tokenizing.
std::optional<check_failure> check_request(const std::vector<std::int32_t>& tokens,
                                           std::string_view text,
                                           const lf::sampling_params& params,
                                           std::string_view adapter, const request_limits& limits);

} // namespace lf::router
