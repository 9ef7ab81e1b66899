// compute_logprobs: what a request with `logprobs` reports per token.
#include "worker/engine/sampling/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "worker/engine/kernels/canonical_math.hpp"

namespace lf::engine {

token_logprobs compute_logprobs(const float* logits, std::size_t vocab, std::int32_t chosen, int top_k) {
  // log-sum-exp in double, in index order: the same row gives the same numbers on any thread, and
  // through canonical_math's exp and log (not libm's) on any machine.
  float best = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < vocab; ++i)
    best = std::max(best, logits[i]);
  double sum = 0;
  if (std::isfinite(best))
    for (std::size_t i = 0; i < vocab; ++i)
      if (logits[i] != -std::numeric_limits<float>::infinity())
        sum += kernels::exp_nonpositive_canonical(static_cast<double>(logits[i]) - best);
  const double lse = std::isfinite(best) ? best + kernels::log_canonical(sum) : 0.0;
  auto lp = [&](std::int32_t id) { return static_cast<float>(static_cast<double>(logits[id]) - lse); };
  token_logprobs out;
  out.logprob = chosen >= 0 && static_cast<std::size_t>(chosen) < vocab ? lp(chosen)
                                                                        : -std::numeric_limits<float>::infinity();
  const auto k = std::min<std::size_t>(static_cast<std::size_t>(std::max(top_k, 0)), vocab);
  if (k == 0)
    return out;
  // A bounded heap ordered by `better` (higher logit, then lower id): the worst kept one on top.
  auto better = [&](std::int32_t a, std::int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::vector<std::int32_t> heap;
  heap.reserve(k + 1);
  for (std::size_t i = 0; i < vocab; ++i) {
    const auto id = static_cast<std::int32_t>(i);
    if (heap.size() < k) {
      heap.push_back(id);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(id, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = id;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  out.top_tokens = heap;
  for (auto id : heap)
    out.top_logprobs.push_back(lp(id));
  return out;
}

} // namespace lf::engine
