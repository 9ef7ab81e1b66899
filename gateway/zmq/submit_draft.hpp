#pragma once
/// The edge, shared by the ZeroMQ and HTTP gateways: a client's submit becomes the request_draft
/// the router validates. The chat is rendered and the prompt tokenized here, once. Pure C++.

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "core/request.hpp"
#include "proto/protocol.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::gateway {

/// `m` as a draft: prompt_text(m) tokenized (or `given_tokens`, when the client sent ids),
/// to_sampling_params(m), the adapter, the tenant, deadline_ms as the timeout, ttft_ms.
/// prompt_too_long when the rendered prompt exceeds `max_prompt_bytes` (checked before
/// tokenizing).
std::variant<request_draft, check_failure> draft_of(const proto::submit_msg& m, const text::tokenizer& tok,
                                                   std::size_t max_prompt_bytes,
                                                   const std::vector<std::int32_t>* given_tokens = nullptr);

} // namespace lf::gateway
