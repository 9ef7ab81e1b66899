#pragma once
/// Turns one row of logits into a token id: repetition penalty, temperature, top-k, top-p, then a
/// draw from the sampler's own RNG. Pure C++17 so it is testable without torch; the generator
/// copies each row of logits to the host and calls sample() once per running sequence per step.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/sampling_params.hpp"

namespace lf::engine {

/// Per-sequence sampler. Owns its RNG, so sequences sampled from the same seed and the same logits
/// produce the same tokens regardless of how requests are batched together. One instance per
/// sequence; an instance must not be used by two threads at once, but different instances may.
/// Calls allocate only while a thread's scratch grows to the vocabulary size.
///
/// Cost per call for vocab V: O(V) in a few linear passes, never a full sort: top_k <= 1024 keeps
/// a bounded heap, top-p buckets tokens by log-probability and orders only the bucket where the
/// nucleus ends, and exp is a vectorized polynomial (relative error < 1e-7; weights below e^-87
/// of the best token count as 0). Build with -O3 (the Release default): GCC 12 at -O2 leaves the
/// exp loop scalar.
class sampler {
public:
  /// `fallback_seed` is used when `params.seed` is empty. Throws std::invalid_argument when
  /// validate(params) rejects the numeric settings (the stop/max_tokens fields are not used here).
  sampler(const sampling_params& params, std::uint64_t fallback_seed);

  /// Picks the next token from one row of `vocab` logits. `context` = prompt + generated token ids
  /// so far (for the repetition penalty); ids outside [0, vocab) throw std::out_of_range.
  ///
  /// `logits` is modified in place. Greedy (temperature 0): only the penalty is applied.
  /// Otherwise, on return it holds the penalized, temperature-scaled logits shifted so the
  /// largest is 0 (the shift cannot change the softmax but keeps tiny temperatures from
  /// overflowing), with every token removed by top-k / top-p set to -inf.
  ///
  /// Each non-greedy call takes exactly one 64-bit draw from the RNG, whatever the filters.
  ///
  /// -inf logits are fine (masked tokens). Throws std::runtime_error when a logit is NaN or +inf
  /// or every logit is -inf, since a token drawn from such a row would be garbage.
  std::int32_t sample(float* logits, std::size_t vocab, const std::vector<std::int32_t>& context);

  /// The seed actually in use (params.seed or the fallback), for logging and reproduction.
  std::uint64_t seed() const noexcept {
    return seed_;
  }

private:
  void apply_repetition_penalty(float* logits, std::size_t vocab,
                                const std::vector<std::int32_t>& context);
  /// Temperature-only draw over probs[0, vocab).
  static std::int32_t draw_unfiltered(const float* probs, std::size_t vocab, double u);
  /// Top-p without top-k over the scaled logits and their probabilities.
  std::int32_t draw_nucleus(float* logits, const float* probs, std::size_t vocab, double u);
  /// Uniform double in [0, 1) from the 53 high bits of one 64-bit draw, so the stream does not
  /// depend on the standard library's distribution implementation.
  double next_uniform();

  float temperature_;
  int top_k_;
  float top_p_;
  float repetition_penalty_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
  // Work buffers live in per-thread scratch (sampler.cpp), not here: one sampler per running
  // sequence would otherwise hold about 1 MB of buffers each.
};

/// The log-softmax of `logits` (as the model produced them) at `chosen`, and its `top_k` most
/// likely tokens; -inf logits count as probability 0. Deterministic: one pass in index order.
token_logprobs compute_logprobs(const float* logits, std::size_t vocab, std::int32_t chosen, int top_k);

} // namespace lf::engine
