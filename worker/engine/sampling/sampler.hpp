#pragma once
/// Turns one row of logits into a token id: logit bias, repetition penalty, temperature, top-k, top-p, then a
/// draw from the sampler's own RNG. Pure C++17 so it is testable without torch; the generator
/// copies each row of logits to the host and calls sample() once per running sequence per step.
///
/// Randomness is counter-based: the draw for a sequence's token `index` is SplitMix64's
/// index-th output from the seed, a pure function of (seed, index). A sequence's whole sampler
/// state is therefore its seed, the index of its next token and its tokens (for the repetition
/// penalty), which is what lets another worker resume it exactly.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/sampling_params.hpp"

namespace lf::engine {

/// Per-sequence sampler. Its draws depend on (seed, index) only, so sequences sampled from the
/// same seed and the same logits produce the same tokens regardless of how requests are batched
/// together, and a sequence resumed at index i elsewhere draws what it would have drawn. One instance per
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
  /// `logits` is modified in place. The request's logit_bias is added first, before everything
  /// else. Greedy (temperature 0): only the bias and the penalty are applied.
  /// Otherwise, on return it holds the penalized, temperature-scaled logits shifted so the
  /// largest is 0 (the shift cannot change the softmax but keeps tiny temperatures from
  /// overflowing), with every token removed by top-k / top-p set to -inf.
  ///
  /// `index`: the position of the token being sampled among the sequence's generated tokens (0
  /// for the first). A non-greedy call uses the one 64-bit value draw(seed(), index), whatever the
  /// filters; calls with the same index draw the same value.
  ///
  /// -inf logits are fine (masked tokens). Throws std::runtime_error when a logit is NaN or +inf
  /// or every logit is -inf, since a token drawn from such a row would be garbage.
  std::int32_t sample(float* logits, std::size_t vocab, const std::vector<std::int32_t>& context,
                      std::uint64_t index);

  /// sample() at the index after the previous call of this overload (0 first): for callers that
  /// sample a sequence's tokens one after another from its start (the static baselines, tests).
  std::int32_t sample(float* logits, std::size_t vocab, const std::vector<std::int32_t>& context) {
    return sample(logits, vocab, context, next_index_++);
  }

  /// The 64-bit value a non-greedy sample() at `index` uses: SplitMix64's output number `index`
  /// from state mix(seed). Pure.
  static std::uint64_t draw(std::uint64_t seed, std::uint64_t index) noexcept;

  /// Adds the request's logit_bias to `logits` (ids at or beyond `vocab` are skipped: the router
  /// has refused them already). sample() does this first; reported log-probabilities are of the
  /// row before it (logprobs.hpp).
  void apply_logit_bias(float* logits, std::size_t vocab) const noexcept;

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
  /// Uniform double in [0, 1) from the 53 high bits of draw(seed, index), so the stream does not
  /// depend on the standard library's distribution implementation.
  double uniform_at(std::uint64_t index) const noexcept;

  float temperature_;
  int top_k_;
  float top_p_;
  float repetition_penalty_;
  std::uint64_t seed_;
  std::vector<std::pair<std::int32_t, float>> logit_bias_;  ///< (id, bias), ids ascending
  std::uint64_t next_index_ = 0;  ///< the three-argument sample()'s counter
  // Work buffers live in per-thread scratch (sampler.cpp), not here: one sampler per running
  // sequence would otherwise hold about 1 MB of buffers each.
};

} // namespace lf::engine
