// compute_logprobs: the log-softmax of the model's logits at the chosen token, and the top-k.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "worker/engine/sampling/logprobs.hpp"

using lf::engine::compute_logprobs;

TEST_CASE("logprobs are the log-softmax of the raw logits, top-k most likely first", "[logprobs]") {
  const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f, -std::numeric_limits<float>::infinity()};
  const double lse = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
  auto lp = compute_logprobs(logits.data(), logits.size(), 2, 3);
  CHECK(lp.logprob == Approx(2.0 - lse));
  // Ties go to the lower id; -inf is never preferred over a finite logit.
  CHECK(lp.top_tokens == std::vector<std::int32_t>{1, 3, 2});
  REQUIRE(lp.top_logprobs.size() == 3);
  CHECK(lp.top_logprobs[0] == Approx(3.0 - lse));
  CHECK(lp.top_logprobs[2] == Approx(2.0 - lse));
  double mass = 0;
  for (std::size_t i = 0; i < 4; ++i)
    mass += std::exp(compute_logprobs(logits.data(), logits.size(), static_cast<std::int32_t>(i), 0).logprob);
  CHECK(mass == Approx(1.0));
  CHECK(compute_logprobs(logits.data(), logits.size(), 4, 0).logprob == -std::numeric_limits<float>::infinity());
  CHECK(compute_logprobs(logits.data(), logits.size(), 0, 0).top_tokens.empty());
  CHECK(compute_logprobs(logits.data(), logits.size(), 0, 99).top_tokens.size() == logits.size());
}

TEST_CASE("sampling params validate logprobs requests", "[logprobs]") {
  lf::sampling_params p;
  p.logprobs = true;
  p.top_logprobs = 20;
  CHECK_FALSE(lf::validate(p));
  p.top_logprobs = 21;
  CHECK(lf::validate(p));
  p.top_logprobs = 2;
  p.logprobs = false;
  CHECK(lf::validate(p));
}
