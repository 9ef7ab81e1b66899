#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/sampling_params.hpp"
#include "worker/engine/sampling/sampler.hpp"

using lf::engine::sampler;
using lf::sampling_params;
using lf::validate;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();
const std::vector<std::int32_t> no_context;

/// Draws `n` tokens, each from a fresh copy of `logits` (sample() modifies its input).
std::vector<std::int32_t> draw(sampler& s, const std::vector<float>& logits, int n,
                               const std::vector<std::int32_t>& context = no_context) {
  std::vector<std::int32_t> out;
  std::vector<float> row;
  for (int i = 0; i < n; ++i) {
    row = logits;
    out.push_back(s.sample(row.data(), row.size(), context));
  }
  return out;
}

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p)
    out.push_back(static_cast<float>(std::log(x)));
  return out;
}

/// Checks that validate() rejects `p` with a message mentioning each of `needles`.
void require_rejected(const sampling_params& p, std::vector<std::string> needles,
                      int limit = 1 << 20) {
  auto err = validate(p, limit);
  REQUIRE(err.has_value());
  INFO(*err);
  for (const auto& n : needles)
    CHECK(err->find(n) != std::string::npos);
}

} // namespace

TEST_CASE("validate accepts the defaults and boundary values", "[sampler]") {
  sampling_params p;
  CHECK_FALSE(validate(p));
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = 0;
  p.repetition_penalty = 1e-3f;
  p.max_tokens = 100;
  p.stop = {std::string(256, 'x'), "\xC3\xA9t\xC3\xA9", "\n\n"};
  CHECK_FALSE(validate(p, 100));
  p.top_p = 1e-6f;
  p.top_k = 50;
  p.max_tokens = 1;
  p.stop.assign(16, "s");
  CHECK_FALSE(validate(p));
}

TEST_CASE("validate rejects each bad value, naming the field", "[sampler]") {
  sampling_params p;
  SECTION("temperature") {
    p.temperature = nan_f;
    require_rejected(p, {"temperature", "got nan"});
    CHECK(*validate(p) == "temperature must be a finite number >= 0 (got nan)");
    p.temperature = inf_f;
    require_rejected(p, {"temperature", "got inf"});
    p.temperature = -inf_f;
    require_rejected(p, {"temperature", "got -inf"});
    p.temperature = -0.5f;
    require_rejected(p, {"temperature", "got -0.5"});
  }
  SECTION("top_k") {
    p.top_k = -1;
    require_rejected(p, {"top_k", "got -1"});
  }
  SECTION("top_p") {
    for (float v : {nan_f, 0.0f, -0.1f, 1.5f, inf_f, -inf_f}) {
      p.top_p = v;
      require_rejected(p, {"top_p"});
    }
    p.top_p = 0.0f;
    require_rejected(p, {"top_p", "got 0"});
    p.top_p = 1.01f;
    require_rejected(p, {"top_p", "got 1.01"});
  }
  SECTION("repetition_penalty") {
    p.repetition_penalty = 0.0f;
    require_rejected(p, {"repetition_penalty", "got 0"});
    p.repetition_penalty = -1.0f;
    require_rejected(p, {"repetition_penalty", "got -1"});
    p.repetition_penalty = nan_f;
    require_rejected(p, {"repetition_penalty", "got nan"});
    p.repetition_penalty = inf_f;
    require_rejected(p, {"repetition_penalty", "got inf"});
  }
  SECTION("max_tokens") {
    p.max_tokens = 0;
    require_rejected(p, {"max_tokens", "got 0"});
    p.max_tokens = -3;
    require_rejected(p, {"max_tokens", "got -3"});
    p.max_tokens = 101;
    require_rejected(p, {"max_tokens", "got 101", "100"}, 100);
  }
  SECTION("stop") {
    p.stop = {"ok", ""};
    require_rejected(p, {"stop[1]", "empty"});
    p.stop.assign(17, "x");
    require_rejected(p, {"stop", "17", "16"});
    p.stop = {std::string(257, 'x')};
    require_rejected(p, {"stop[0]", "257", "256"});
    p.stop = {"a", "\xFF"};
    require_rejected(p, {"stop[1]", "UTF-8"});
  }
}

TEST_CASE("sampler rejects invalid params and reports its seed", "[sampler]") {
  sampling_params p;
  p.temperature = -1.0f;
  CHECK_THROWS_AS(sampler(p, 1), std::invalid_argument);
  p = {};
  CHECK(sampler(p, 42).seed() == 42);
  p.seed = 7;
  CHECK(sampler(p, 42).seed() == 7);
}

TEST_CASE("greedy picks the argmax, lowest id on ties", "[sampler]") {
  sampling_params p;
  p.temperature = 0.0f;
  sampler s(p, 1);
  std::vector<float> l{0.1f, 3.0f, -2.0f, 2.9f, -inf_f};
  CHECK(s.sample(l.data(), l.size(), no_context) == 1);
  l = {1.0f, 5.0f, 5.0f, 5.0f};
  CHECK(s.sample(l.data(), l.size(), no_context) == 1);
  l = {-inf_f, -inf_f, -7.0f};
  CHECK(s.sample(l.data(), l.size(), no_context) == 2);
  // top_k / top_p do not matter for greedy, nor does the seed.
  p.top_k = 3;
  p.top_p = 0.1f;
  p.seed = 99;
  sampler g(p, 5);
  l = {0.0f, 0.5f, 0.25f};
  CHECK(draw(g, l, 50) == std::vector<std::int32_t>(50, 1));
}

TEST_CASE("top_k restricts the support to the k largest", "[sampler]") {
  sampling_params p;
  p.top_k = 2;
  p.seed = 1234;
  sampler s(p, 0);
  const std::vector<float> l{0.5f, 2.0f, 0.1f, 1.9f, 1.5f, -1.0f};
  std::map<std::int32_t, int> seen;
  for (auto id : draw(s, l, 10000))
    ++seen[id];
  REQUIRE(seen.size() == 2);
  CHECK(seen.count(1) == 1);
  CHECK(seen.count(3) == 1);
  // exp(0.1) : 1 => about 52.5 % / 47.5 %.
  CHECK(seen[1] / 10000.0 == Approx(std::exp(0.1) / (1 + std::exp(0.1))).margin(0.02));

  std::vector<float> row = l;
  s.sample(row.data(), row.size(), no_context);
  for (std::size_t i : {0, 2, 4, 5})
    CHECK(row[i] == -inf_f);
  CHECK(row[1] == 0.0f); // shifted so the maximum is 0
  CHECK(row[3] == Approx(-0.1f));
}

TEST_CASE("top_p keeps the smallest nucleus reaching top_p", "[sampler]") {
  sampling_params p;
  p.seed = 77;
  p.top_p = 0.5f;
  sampler s(p, 0);
  // Sorted: id1 0.4, id2 0.3, id3 0.2, id0 0.1 => 0.4 < 0.5 <= 0.7, so {1, 2}.
  const auto l = log_probs({0.1, 0.4, 0.3, 0.2});
  std::map<std::int32_t, int> seen;
  for (auto id : draw(s, l, 10000))
    ++seen[id];
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] / 10000.0 == Approx(4.0 / 7.0).margin(0.02));
  CHECK(seen[2] / 10000.0 == Approx(3.0 / 7.0).margin(0.02));

  // A single token already over top_p is kept alone.
  p.top_p = 0.3f;
  sampler one(p, 0);
  const auto seq = draw(one, l, 500);
  CHECK(std::all_of(seq.begin(), seq.end(), [](auto id) { return id == 1; }));
}

TEST_CASE("top_p past the first sorted batch and with ties", "[sampler]") {
  sampling_params p;
  p.top_p = 0.5f;
  sampler s(p, 3);
  std::vector<float> l(1000, 0.25f); // all tied: the 500 lowest ids form the nucleus
  s.sample(l.data(), l.size(), no_context);
  for (std::size_t i = 0; i < l.size(); ++i) {
    INFO(i);
    CHECK((l[i] == -inf_f) == (i >= 500));
  }
}

TEST_CASE("top_k and top_p match a full-sort reference", "[sampler]") {
  std::mt19937_64 gen(2024);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int round = 0; round < 40; ++round) {
    const std::size_t vocab = round < 20 ? 257 : 50257;
    std::vector<float> l(vocab);
    for (auto& x : l)
      x = normal(gen);
    for (std::size_t i = 0; i < vocab; i += 7)
      l[i] = -inf_f; // masked tokens are never candidates
    sampling_params p;
    p.temperature = 0.3f + 0.1f * static_cast<float>(round % 10);
    // Small k takes the heap path, large k nth_element.
    p.top_k = round % 3 == 0   ? 0
              : round % 3 == 1 ? static_cast<int>(gen() % 300) + 1
                               : static_cast<int>(gen() % (vocab + 100)) + 1;
    p.top_p = round % 4 == 0 ? 1.0f : 0.05f + 0.9f * static_cast<float>(gen() % 1000) / 1000.0f;
    sampler s(p, gen());

    // Reference: sort everything, cut at k, softmax, cut at top_p.
    std::vector<std::int32_t> ids;
    for (std::size_t i = 0; i < vocab; ++i)
      if (l[i] != -inf_f)
        ids.push_back(static_cast<std::int32_t>(i));
    std::sort(ids.begin(), ids.end(), [&](auto a, auto b) {
      return l[a] > l[b] || (l[a] == l[b] && a < b);
    });
    if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < ids.size())
      ids.resize(static_cast<std::size_t>(p.top_k));
    std::vector<double> w;
    for (auto id : ids)
      w.push_back(std::exp((static_cast<double>(l[id]) - l[ids[0]]) / p.temperature));
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    std::size_t keep = ids.size();
    if (p.top_p < 1.0f) {
      double cum = 0;
      for (std::size_t j = 0; j < ids.size(); ++j) {
        cum += w[j];
        if (cum >= p.top_p * total) {
          keep = j + 1;
          break;
        }
      }
    }
    const std::set<std::int32_t> expected(ids.begin(), ids.begin() + keep);

    std::vector<float> row = l;
    const auto tok = s.sample(row.data(), row.size(), no_context);
    INFO("round " << round << " top_k " << p.top_k << " top_p " << p.top_p);
    CHECK(expected.count(tok) == 1);
    std::set<std::int32_t> kept;
    for (std::size_t i = 0; i < vocab; ++i)
      if (row[i] != -inf_f)
        kept.insert(static_cast<std::int32_t>(i));
    // Rounding may move the cut by one token when the cumulative sum lands on top_p exactly.
    CHECK(std::max(kept.size(), expected.size()) - std::min(kept.size(), expected.size()) <= 1);
    std::set<std::int32_t> common;
    std::set_intersection(kept.begin(), kept.end(), expected.begin(), expected.end(),
                          std::inserter(common, common.begin()));
    CHECK(common.size() == std::min(kept.size(), expected.size()));
  }
}

TEST_CASE("empirical frequencies follow the tempered softmax", "[sampler]") {
  const std::vector<float> l{1.0f, 2.0f, 0.5f, -1.0f, 3.0f, -inf_f};
  for (float temperature : {1.0f, 0.7f, 2.5f}) {
    sampling_params p;
    p.temperature = temperature;
    p.seed = 31337;
    sampler s(p, 0);
    constexpr int n = 200000;
    std::vector<int> counts(l.size(), 0);
    for (auto id : draw(s, l, n))
      ++counts[static_cast<std::size_t>(id)];
    double z = 0;
    for (float x : l)
      z += std::exp(static_cast<double>(x) / temperature);
    for (std::size_t i = 0; i < l.size(); ++i) {
      const double expect = std::exp(static_cast<double>(l[i]) / temperature) / z;
      const double sigma = std::sqrt(expect * (1 - expect) / n);
      INFO("temperature " << temperature << " id " << i);
      CHECK(std::abs(counts[i] / double(n) - expect) <= 5 * sigma + 1e-9);
    }
    CHECK(counts.back() == 0);
  }
}

TEST_CASE("frequencies follow the renormalized kept distribution", "[sampler]") {
  // Vocab 300 spans several of the unfiltered draw's blocks; each filter mode uses its own path.
  std::mt19937_64 gen(99);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> l(300);
  for (auto& x : l)
    x = uniform(gen);
  for (std::size_t i = 5; i < l.size(); i += 37)
    l[i] = -inf_f;
  struct config {
    int top_k;
    float top_p;
  };
  for (auto cfg : {config{0, 1.0f}, config{20, 1.0f}, config{0, 0.3f}, config{60, 0.5f}}) {
    sampling_params p;
    p.temperature = 0.8f;
    p.top_k = cfg.top_k;
    p.top_p = cfg.top_p;
    p.seed = 4242;
    sampler s(p, 0);
    // Reference distribution: sort, cut at k, cut at top_p, renormalize.
    std::vector<std::int32_t> ids;
    for (std::size_t i = 0; i < l.size(); ++i)
      if (l[i] != -inf_f)
        ids.push_back(static_cast<std::int32_t>(i));
    std::sort(ids.begin(), ids.end(), [&](auto a, auto b) { return l[a] > l[b]; });
    if (cfg.top_k > 0)
      ids.resize(static_cast<std::size_t>(cfg.top_k));
    std::vector<double> w;
    for (auto id : ids)
      w.push_back(std::exp((static_cast<double>(l[id]) - l[ids[0]]) / p.temperature));
    double total = std::accumulate(w.begin(), w.end(), 0.0);
    if (cfg.top_p < 1.0f) {
      double cum = 0;
      std::size_t keep = 0;
      while (cum < cfg.top_p * total)
        cum += w[keep++];
      ids.resize(keep);
      w.resize(keep);
      total = cum;
    }
    constexpr int n = 100000;
    std::vector<int> counts(l.size(), 0);
    for (auto id : draw(s, l, n))
      ++counts[static_cast<std::size_t>(id)];
    int inside = 0;
    for (std::size_t j = 0; j < ids.size(); ++j) {
      const double expect = w[j] / total;
      const double sigma = std::sqrt(expect * (1 - expect) / n);
      const int got = counts[static_cast<std::size_t>(ids[j])];
      inside += got;
      INFO("top_k " << cfg.top_k << " top_p " << cfg.top_p << " id " << ids[j]);
      CHECK(std::abs(got / double(n) - expect) <= 5 * sigma + 1e-9);
    }
    CHECK(inside == n);
  }
}

TEST_CASE("a low temperature concentrates on the argmax", "[sampler]") {
  sampling_params p;
  p.temperature = 1e-4f;
  sampler s(p, 11);
  const std::vector<float> l{1.0f, 1.5f, 1.49f, -3.0f};
  const auto seq = draw(s, l, 1000);
  CHECK(std::all_of(seq.begin(), seq.end(), [](auto id) { return id == 1; }));
  // Extreme temperatures on extreme logits must not overflow into NaN.
  p.temperature = 1e-30f;
  sampler tiny(p, 11);
  const std::vector<float> big{3e38f, -3e38f, 1e38f};
  CHECK(draw(tiny, big, 10) == std::vector<std::int32_t>(10, 0));
}

TEST_CASE("repetition penalty changes the argmax as expected", "[sampler]") {
  sampling_params p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  sampler s(p, 0);
  // Positive logits are divided: 2.0 / 1.5 = 1.33 < 1.8.
  std::vector<float> l{2.0f, 1.8f, -1.0f};
  CHECK(s.sample(l.data(), l.size(), {0}) == 1);
  // Negative logits are multiplied: -0.5 * 1.5 = -0.75 < -0.6.
  l = {-0.5f, -0.6f};
  CHECK(s.sample(l.data(), l.size(), {0}) == 1);
  l = {-0.5f, -0.6f};
  CHECK(s.sample(l.data(), l.size(), no_context) == 0);
  // A token repeated in the context is penalized once: 3.0 / 1.5 = 2.0 > 1.8.
  l = {3.0f, 1.8f};
  CHECK(s.sample(l.data(), l.size(), {0, 0, 0}) == 0);
  CHECK(l[0] == 2.0f);
  // ... and again on the next call (the per-call bookkeeping is reset).
  l = {3.0f, 1.8f};
  CHECK(s.sample(l.data(), l.size(), {0, 0}) == 0);
  CHECK(l[0] == 2.0f);
  // A penalty below 1 favours repetition.
  p.repetition_penalty = 0.5f;
  sampler fav(p, 0);
  l = {1.0f, 1.8f};
  CHECK(fav.sample(l.data(), l.size(), {0}) == 0);
  // Ids outside the vocabulary are a caller bug.
  l = {1.0f, 2.0f};
  CHECK_THROWS_AS(s.sample(l.data(), l.size(), {2}), std::out_of_range);
  CHECK_THROWS_AS(s.sample(l.data(), l.size(), {-1}), std::out_of_range);
  l = {3.0f, 1.8f};
  CHECK(s.sample(l.data(), l.size(), {0}) == 0);
}

TEST_CASE("same seed gives the same sequence, different seeds differ", "[sampler]") {
  std::vector<float> l(4096);
  std::mt19937_64 gen(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (auto& x : l)
    x = normal(gen);
  for (int mode = 0; mode < 4; ++mode) {
    sampling_params p;
    p.temperature = 0.9f;
    p.top_k = mode == 1 ? 40 : mode == 3 ? 2000 : 0;
    p.top_p = mode >= 2 ? 0.9f : 1.0f;
    p.seed = 123;
    sampler a(p, 0), b(p, 999);
    const auto sa = draw(a, l, 1000);
    CHECK(sa == draw(b, l, 1000));
    p.seed = 124;
    sampler c(p, 0);
    CHECK(sa != draw(c, l, 1000));
    p.seed.reset();
    sampler d(p, 123), e(p, 7);
    CHECK(sa == draw(d, l, 1000)); // fallback seed 123 == explicit seed 123
    CHECK(sa != draw(e, l, 1000));
  }
}

TEST_CASE("the sampler's stream is pinned", "[sampler]") {
  // The draws are SplitMix64 (state mix(seed), one gamma step per index) and the uniform
  // conversion is ours, so they must not change across compilers or standard libraries; a change
  // here breaks seeded reproducibility for clients. Values from an independent Python
  // implementation of the same formula.
  CHECK(sampler::draw(42, 0) == 10996452266160306281ULL);
  CHECK(sampler::draw(42, 1) == 2958219263312191191ULL);
  CHECK(sampler::draw(42, 2) == 3069497704473277141ULL);
  CHECK(sampler::draw(42, 1000000000000ULL) == 7406622554204047885ULL);
  sampling_params p;
  p.seed = 42;
  sampler s(p, 0);
  const std::vector<float> l(8, 0.0f);
  for (std::uint64_t i = 0; i < 100; ++i) {
    const double u = static_cast<double>(sampler::draw(42, i) >> 11) * 0x1.0p-53;
    std::vector<float> row = l;
    CHECK(s.sample(row.data(), row.size(), no_context) == static_cast<std::int32_t>(u * 8));
  }
}

TEST_CASE("a draw depends on (seed, index) only: sampling resumes at any index", "[sampler]") {
  // What exact resumption on another worker needs: a fresh sampler asked for index i draws what
  // the sampler that produced tokens 0..i-1 draws at i, whatever happened before.
  sampling_params p;
  p.seed = 7;
  p.temperature = 0.9f;
  p.top_p = 0.9f;
  std::vector<float> l(64);
  for (std::size_t i = 0; i < l.size(); ++i)
    l[i] = static_cast<float>((i * 37) % 11) * 0.3f;
  sampler first(p, 0);
  std::vector<std::int32_t> straight;
  for (int i = 0; i < 50; ++i) {
    auto row = l;
    straight.push_back(first.sample(row.data(), row.size(), no_context));
  }
  for (std::uint64_t at : {0ULL, 1ULL, 17ULL, 49ULL}) {
    sampler resumed(p, 0);
    for (std::uint64_t i = at; i < 50; ++i) {
      auto row = l;
      CHECK(resumed.sample(row.data(), row.size(), no_context, i) == straight[i]);
    }
  }
  // Out of order, repeated: still the same draw for the same index.
  sampler any(p, 0);
  for (std::uint64_t i : {30ULL, 3ULL, 30ULL, 0ULL}) {
    auto row = l;
    CHECK(any.sample(row.data(), row.size(), no_context, i) == straight[i]);
  }
}

TEST_CASE("negligible tokens never enter the nucleus", "[sampler]") {
  sampling_params p;
  p.top_p = 0.999f;
  sampler s(p, 8);
  std::vector<float> l{-100.0f, 0.0f, -200.0f, -1e30f};
  CHECK(s.sample(l.data(), l.size(), no_context) == 1);
  CHECK(l[0] == -inf_f);
  CHECK(l[2] == -inf_f);
  CHECK(l[3] == -inf_f);
  // A subnormal temperature behaves like greedy instead of producing NaN.
  p = {};
  p.temperature = 1e-45f;
  sampler t(p, 8);
  l = {1.0f, 1.0f + 1e-6f, 0.5f};
  CHECK(draw(t, l, 20) == std::vector<std::int32_t>(20, 1));
}

TEST_CASE("rows from a blown-up model throw", "[sampler]") {
  for (float t : {0.0f, 1.0f}) {
    sampling_params p;
    p.temperature = t;
    p.top_k = t == 0.0f ? 0 : 5;
    sampler s(p, 1);
    std::vector<float> l(10, -inf_f);
    CHECK_THROWS_AS(s.sample(l.data(), l.size(), no_context), std::runtime_error);
    l = {1.0f, nan_f, 2.0f};
    CHECK_THROWS_WITH(s.sample(l.data(), l.size(), no_context), Catch::Contains("nan"));
    l = {1.0f, inf_f, 2.0f};
    CHECK_THROWS_AS(s.sample(l.data(), l.size(), no_context), std::runtime_error);
    CHECK_THROWS_AS(s.sample(l.data(), 0, no_context), std::invalid_argument);
    // Some -inf is fine and never drawn.
    l = {-inf_f, 0.0f, -inf_f, 0.0f};
    for (auto id : draw(s, l, 200))
      CHECK((id == 1 || id == 3));
  }
}

TEST_CASE("logit_bias is added before everything: +100 forces a token, -100 bans the greedy one", "[sampler]") {
  const std::vector<float> logits{1.0f, 5.0f, 3.0f, -2.0f};
  sampling_params p;
  p.temperature = 0.0f;
  {
    sampler s(p, 1);
    CHECK(draw(s, logits, 1)[0] == 1);
  }
  p.logit_bias = {{1, -100.0f}};
  {
    sampler s(p, 1);
    CHECK(draw(s, logits, 1)[0] == 2);  // the greedy token is banned: the next best wins
  }
  p.logit_bias = {{3, 100.0f}};
  {
    sampler s(p, 1);
    CHECK(draw(s, logits, 1)[0] == 3);
  }
  // Sampled, with top-k and top-p: the forced token is the only one with any mass.
  p.temperature = 1.0f;
  p.top_k = 2;
  p.top_p = 0.9f;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    sampler s(p, seed);
    auto toks = draw(s, logits, 10);
    CHECK(std::all_of(toks.begin(), toks.end(), [](auto t) { return t == 3; }));
  }
  // -100 on every token but one: sampling never picks the others.
  p.top_k = 0;
  p.top_p = 1.0f;
  p.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}};
  sampler s(p, 7);
  auto toks = draw(s, logits, 50);
  CHECK(std::all_of(toks.begin(), toks.end(), [](auto t) { return t == 3; }));
  // apply_logit_bias adds exactly the bias, and skips ids beyond the row.
  p.logit_bias = {{0, 2.5f}, {9, 1.0f}};
  sampler b(p, 1);
  auto row = logits;
  b.apply_logit_bias(row.data(), row.size());
  CHECK(row[0] == 3.5f);
  CHECK(row[1] == 5.0f);
  // The constructor refuses what validate refuses.
  p.logit_bias = {{0, 101.0f}};
  CHECK_THROWS_AS(sampler(p, 1), std::invalid_argument);
}
