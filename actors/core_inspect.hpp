#pragma once
/// inspect() for the core and worker types that actor messages carry (sampling parameters, the
/// request draft and its validated form, histograms, usage, timings, shipped K/V): the fields
/// these types cross nodes with. Included by the message headers that carry them.

#include <cstdint>
#include <optional>
#include <vector>

#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "core/metrics.hpp"
#include "core/request.hpp"
#include "core/sampling_params.hpp"
#include "worker/request.hpp"

namespace lf {

/// sampling_params on the wire: the optional seed as (has_seed, seed), logit_bias as two
/// parallel lists (ids, biases), so a request resumed on another worker keeps its bias.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  bool has_seed = x.seed.has_value();
  std::uint64_t seed = x.seed.value_or(0);
  std::vector<std::int32_t> bias_ids;
  std::vector<float> bias_values;
  for (const auto& [id, b] : x.logit_bias) {
    bias_ids.push_back(id);
    bias_values.push_back(b);
  }
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.seed = has_seed ? std::optional<std::uint64_t>(seed) : std::nullopt;
    if (bias_ids.size() != bias_values.size())
      return caf::sec::invalid_argument;
    x.logit_bias.clear();
    for (std::size_t i = 0; i < bias_ids.size(); ++i)
      x.logit_bias.emplace(bias_ids[i], bias_values[i]);
    return caf::none;
  });
  return f(caf::meta::type_name("lf.sampling"), x.temperature, x.top_k, x.top_p,
           x.repetition_penalty, has_seed, seed, x.max_tokens, x.stop, x.ignore_eos, x.logprobs, x.top_logprobs,
           bias_ids, bias_values, x.constraint.kind, x.constraint.text, load);
}

/// A token's log-probability and its alternatives.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_logprobs& x) {
  return f(caf::meta::type_name("lf.token_logprobs"), x.logprob, x.top_tokens, x.top_logprobs);
}

/// A request as the gateway drafted it.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_draft& x) {
  return f(caf::meta::type_name("lf.request_draft"), x.prompt, x.params, x.adapter, x.timeout_ms, x.ttft_ms,
           x.tenant, x.tenant_weight, x.speculative);
}

/// The one way to read and write a validated_request's fields: CAF's (de)serialization between
/// the nodes of one cluster, which trust each other's validation.
struct validated_request_access {
  /// The draft inside `r`.
  static request_draft& fields(validated_request& r) { return r.d_; }
};

/// A validated request: its draft's fields.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, validated_request& x) {
  return f(caf::meta::type_name("lf.validated_request"), validated_request_access::fields(x));
}

/// A histogram: bounds, bucket counts, sum and count.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, histogram& x) {
  return f(caf::meta::type_name("lf.histogram"), x.bounds, x.counts, x.sum, x.count);
}

/// A worker's (or the router's) counts of the requests it served.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, serve_metrics& x) {
  return f(caf::meta::type_name("lf.serve_metrics"), x.finished, x.errors, x.prompt_tokens, x.generation_tokens,
           x.cached_tokens, x.queue_seconds, x.ttft_seconds, x.tpot_seconds, x.e2e_seconds);
}

} // namespace lf

namespace lf::worker {

/// A request's token counts.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_counts& x) {
  return f(caf::meta::type_name("lf.usage"), x.prompt_tokens, x.completion_tokens, x.cached_tokens);
}

/// K/V shipped from a drained worker.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_blob& x) {
  return f(caf::meta::type_name("lf.kv_blob"), x.format, x.tokens, x.bytes);
}

/// A request's times as its worker measured them.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_timings& x) {
  return f(caf::meta::type_name("lf.timings"), x.queue_ms, x.ttft_ms, x.total_ms);
}

} // namespace lf::worker
