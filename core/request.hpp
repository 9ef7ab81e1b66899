#pragma once
/// The one request type every hop after the edge takes. A client's request arrives as a
/// request_draft (the gateway has rendered a chat and tokenized the prompt); validate_request()
/// checks it once against the model's limits and returns a validated_request, or a check_failure
/// naming the field. The router, the worker actor, the serving loop, the scheduler and the
/// static-batching generator take validated_request and check nothing again. Standard library only.
///
///   gateway: decode frame -> render chat -> tokenize -> request_draft
///   router:  validate_request(draft, limits) -> validated_request | check_failure (error reply)
///   worker:  validated_request -> serving loop -> scheduler / engine (no further checks)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/sampling_params.hpp"
#include "core/serve_errc.hpp"

namespace lf {

/// What validate_request checks against. The context window and the vocabulary are the model's
/// (the router learns them from its config or from its workers); the rest are policy.
struct request_limits {
  std::uint32_t context_window = 0;  ///< prompt tokens + max_tokens at most; 0: not known yet
  std::size_t vocab_size = 0;        ///< prompt token ids below this; 0: not known yet
  int max_tokens_limit = 1 << 16;
  std::size_t max_stop = 16;         ///< stop strings at most
  std::size_t max_stop_len = 256;    ///< bytes per stop string at most
};

/// Why a request is refused: the code the client sees and a message naming the field.
struct check_failure {
  serve_errc code = serve_errc::invalid_request;
  std::string message;
};

/// A request as it reaches the router: the prompt already tokenized.
struct request_draft {
  std::vector<std::int32_t> prompt;  ///< token ids
  sampling_params params;
  std::string adapter;               ///< LoRA adapter name; empty = the base model
  std::uint32_t timeout_ms = 0;      ///< not finished this long after reaching the router => timeout
  /// Target for the first token, from arrival (0: none). Only admission looks at it: a request
  /// predicted to miss it is refused (deadline_unmeetable); one admitted is not ended for it.
  std::uint32_t ttft_ms = 0;
  /// Who the request is for (scheduling share and limits, docs/protocol.md); empty = the
  /// unnamed default tenant. See valid_tenant_name.
  std::string tenant{};
  /// The tenant's scheduling weight, set by the router from its config (never by a client);
  /// > 0 and finite. Workers' schedulers divide the tenant's virtual token counts by it.
  double tenant_weight = 1.0;
  /// Speculative decoding: -1 = the worker's policy, -2 = on (the worker's proposal length),
  /// 0 = off, n in [1, max_speculative] = on, proposing up to n tokens per step. Never changes
  /// the output (worker/speculation.hpp).
  std::int32_t speculative = -1;
};

/// The most tokens a request may ask to have proposed per step (request_draft::speculative).
inline constexpr std::int32_t max_speculative = 16;

/// A request that passed validate_request: a non-empty prompt of ids inside the vocabulary,
/// prompt + max_tokens within the context window, sampling parameters valid, the adapter name
/// well-formed. Immutable. Default construction exists only as a deserialization target for the
/// messages between nodes of one cluster.
class validated_request {
public:
  validated_request() = default;

  const std::vector<std::int32_t>& prompt() const noexcept { return d_.prompt; }
  const sampling_params& params() const noexcept { return d_.params; }
  const std::string& adapter() const noexcept { return d_.adapter; }
  std::uint32_t timeout_ms() const noexcept { return d_.timeout_ms; }
  std::uint32_t ttft_ms() const noexcept { return d_.ttft_ms; }
  const std::string& tenant() const noexcept { return d_.tenant; }
  double tenant_weight() const noexcept { return d_.tenant_weight; }
  std::int32_t speculative() const noexcept { return d_.speculative; }
  /// prompt + max_tokens: the most tokens this request can occupy.
  std::uint64_t max_length() const noexcept {
    return d_.prompt.size() + static_cast<std::uint64_t>(d_.params.max_tokens);
  }

private:
  friend std::variant<validated_request, check_failure> validate_request(request_draft,
                                                                         const request_limits&);
  /// CAF's inspect (actors/messages.hpp) reads and writes the fields through this.
  friend struct validated_request_access;

  request_draft d_;
};

/// Checks `d` against `limits` and returns the validated request, or the first problem:
/// empty prompt (invalid_request), token id outside the vocabulary (invalid_request), sampling
/// parameters (invalid_request, naming the field), adapter name (invalid_request), tenant name or
/// weight (invalid_request), prompt +
/// max_tokens beyond the context window (prompt_too_long). A limit of 0 for the context window or
/// the vocabulary means "not known": the request is refused with `overloaded` (nothing can serve
/// it yet), never accepted unchecked.
std::variant<validated_request, check_failure> validate_request(request_draft d,
                                                                const request_limits& limits);

/// validate_request's rules for the prompt alone (the model's limits known, the prompt not empty,
/// its ids inside the vocabulary, the prompt plus `max_tokens` within the context window), with
/// the same codes and messages; std::nullopt when they hold. For an edge that must look at a
/// prompt before any router does: OpenAI's `echo` decodes a token prompt, and with max_tokens 0
/// (the prompt alone, nothing generated) the request never reaches a router. With max_tokens 0
/// the window message names the prompt alone ("prompt (N tokens) exceeds the context window of
/// W tokens").
std::optional<check_failure> check_prompt(const std::vector<std::int32_t>& prompt, const request_limits& limits,
                                         int max_tokens);

/// validate_request for in-process edges (the `generate` command, benchmarks, tests): returns the
/// validated request or throws std::invalid_argument with the failure's message.
validated_request validate_or_throw(request_draft d, const request_limits& limits);

/// Longest adapter name accepted.
inline constexpr std::size_t max_adapter_name_length = 128;

/// Adapter names are relative paths under the adapter root: letters, digits, '-', '_' and '.',
/// with single '/' between components, no component starting with '.', at most
/// max_adapter_name_length bytes ("shakespeare", "styles/kjv"), optionally followed by "@V", a
/// registered version (V decimal, 1 to 9 digits, no leading zero: "styles/kjv@3"). The empty
/// name (base model) is not a valid adapter name.
bool valid_adapter_name(std::string_view name) noexcept;

/// Longest tenant name accepted, in bytes.
inline constexpr std::size_t max_tenant_name_length = 64;

/// Tenant names: at most max_tenant_name_length bytes of UTF-8 without control characters
/// (they appear in logs and stats names). The empty name is the default tenant and is valid.
bool valid_tenant_name(std::string_view name) noexcept;

} // namespace lf
