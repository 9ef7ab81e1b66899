#pragma once
/// What a request with `logprobs` reports per token (core/sampling_params.hpp's token_logprobs):
/// the log-probability of the sampled token and the most likely alternatives, from the logits as
/// the model produced them (before logit bias, penalty, temperature or filters). Pure C++17.

#include <cstddef>
#include <cstdint>

#include "core/sampling_params.hpp"

namespace lf::engine {

/// The log-softmax of `logits` (as the model produced them) at `chosen`, and its `top_k` most
/// likely tokens; -inf logits count as probability 0. Deterministic: one pass in index order.
token_logprobs compute_logprobs(const float* logits, std::size_t vocab, std::int32_t chosen, int top_k);

} // namespace lf::engine
