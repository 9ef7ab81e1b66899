// Learning-rate schedule, progress lines and the fused softmax cross-entropy kernel.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "tools/train/schedule.hpp"
#include "tools/train/xent_kernel.hpp"

using namespace lf::train;

TEST_CASE("warmup rises linearly, then a cosine falls to min_ratio", "[train][schedule]") {
  lr_schedule s{1e-3, 0.1, 10, 110};
  CHECK(s.at(0) == Approx(1e-4));
  CHECK(s.at(4) == Approx(5e-4));
  CHECK(s.at(9) == Approx(1e-3));
  CHECK(s.at(10) == Approx(1e-3));
  CHECK(s.at(60) == Approx(0.55e-3)); // halfway down the cosine: (peak + floor) / 2
  CHECK(s.at(110) == Approx(1e-4));
  CHECK(s.at(500) == Approx(1e-4));
  for (int i = 11; i < 110; ++i)
    REQUIRE(s.at(i) < s.at(i - 1));
  lr_schedule none{1e-3, 0.0, 0, 100};
  CHECK(none.at(0) == Approx(1e-3));
}

TEST_CASE("durations print short", "[train][schedule]") {
  CHECK(format_duration(45.4) == "45s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3725) == "1h02m");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(std::nan("")) == "?");
}

TEST_CASE("the progress meter reports speed and time left from the steps of this run", "[train][schedule]") {
  progress_meter m(100, 200, 1000.0); // resumed at step 100 of 200
  CHECK(m.eta() < 0);
  m.record(100, 2048, 1002.0);
  m.record(101, 2048, 1004.0);
  CHECK(m.tokens_per_second() == Approx(1024.0));
  CHECK(m.eta() == Approx(98 * 2.0)); // 98 steps left at 2 s each
  auto line = m.line(4.25, 3e-4, 0.5);
  CHECK_THAT(line, Catch::StartsWith("step 102/200 | loss 4.2500 | lr 3.00e-04"));
  CHECK_THAT(line, Catch::Contains("1024 tok/s") && Catch::Contains("ETA 3m16s"));
  m.record(102, 1000, 1005.0);
  CHECK(m.recent_tokens_per_second() == Approx(1000.0)); // the window restarted at line()
}

namespace {

std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

float from_bf16(std::uint16_t h) {
  std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// log-sum-exp cross entropy and its gradient in double precision.
double reference(const std::vector<float>& row, std::int64_t target, std::vector<double>& grad) {
  double m = *std::max_element(row.begin(), row.end()), sum = 0;
  for (float v : row)
    sum += std::exp(v - m);
  grad.resize(row.size());
  for (std::size_t j = 0; j < row.size(); ++j)
    grad[j] = std::exp(row[j] - m) / sum - (static_cast<std::int64_t>(j) == target ? 1.0 : 0.0);
  return std::log(sum) + m - row[static_cast<std::size_t>(target)];
}

} // namespace

TEST_CASE("exp_nonpositive is exp to float precision", "[train][xent]") {
  for (float x = 0; x > -80; x -= 0.37f) {
    double want = std::exp(static_cast<double>(x));
    // The float rounding of x * log2(e) grows with |x|; softmax terms that small hardly count.
    REQUIRE(std::abs(exp_nonpositive(x) - want) <= (2e-7 + 1e-7 * std::abs(x)) * want);
  }
  CHECK(exp_nonpositive(0) == 1.0f);
  CHECK(exp_nonpositive(-1000) < 1e-37f); // clamped: nothing a softmax sum can see
  CHECK(exp_nonpositive(-1000) >= 0.0f);
}

TEST_CASE("the fused kernel gives the loss and gradient of softmax cross entropy", "[train][xent]") {
  const std::int64_t rows = 5, vocab = 1000 + 7; // a tail past the 16-wide vector loop
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> f32(rows * vocab);
  for (auto& v : f32)
    v = normal(gen);
  std::vector<std::int64_t> targets = {0, 17, 1006, 500, 3};
  std::vector<float> scratch(vocab);
  const float scale = 0.25f;

  SECTION("float32") {
    auto logits = f32;
    double loss = xent_rows_f32(logits.data(), vocab, targets.data(), 0, rows, scale, true,
                                scratch.data());
    double want = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<float> row(f32.begin() + r * vocab, f32.begin() + (r + 1) * vocab);
      std::vector<double> grad;
      want += reference(row, targets[r], grad);
      for (std::int64_t j = 0; j < vocab; ++j)
        REQUIRE(logits[r * vocab + j] == Approx(scale * grad[j]).margin(1e-7));
    }
    CHECK(loss == Approx(want).epsilon(1e-6));
  }

  SECTION("bfloat16, loss only and rows sub-range") {
    std::vector<std::uint16_t> logits(f32.size());
    std::vector<float> rounded(f32.size());
    for (std::size_t i = 0; i < f32.size(); ++i) {
      logits[i] = to_bf16(f32[i]);
      rounded[i] = from_bf16(logits[i]);
    }
    auto untouched = logits;
    double loss = xent_rows_bf16(logits.data(), vocab, targets.data(), 1, 3, scale, false,
                                 scratch.data());
    CHECK(logits == untouched);
    double want = 0;
    std::vector<double> grad;
    for (std::int64_t r = 1; r < 3; ++r)
      want += reference({rounded.begin() + r * vocab, rounded.begin() + (r + 1) * vocab},
                        targets[r], grad);
    CHECK(loss == Approx(want).epsilon(1e-6));

    xent_rows_bf16(logits.data(), vocab, targets.data(), 0, 1, scale, true, scratch.data());
    reference({rounded.begin(), rounded.begin() + vocab}, targets[0], grad);
    for (std::int64_t j = 0; j < vocab; ++j)
      REQUIRE(from_bf16(logits[j]) == Approx(scale * grad[j]).epsilon(1e-2).margin(1e-9));
  }
}
