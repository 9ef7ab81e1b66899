// erf, exp and log written out in plain double arithmetic (canonical_math.hpp): within an ulp or
// two of libm here; their bits on other machines are held by kernel_digest (x86 and aarch64).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "worker/engine/kernels/canonical_math.hpp"

using namespace lf::kernels;

namespace {

/// How many floats lie between a and b (0 when equal).
std::int64_t ulps_apart(float a, float b) {
  auto key = [](float f) {
    std::int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::min()) - i : static_cast<std::int64_t>(i);
  };
  const auto d = key(a) - key(b);
  return d < 0 ? -d : d;
}

} // namespace

TEST_CASE("erf_canonical is within one float ulp of erf, odd, and exact at its edges", "[kernels][canonical_math]") {
  std::int64_t worst = 0;
  // Every 997th float in (0, 5] (about a million) and its negative, then the table's interval edges.
  for (std::uint32_t bits = 1; bits <= 0x40a00000u; bits += 997) {
    float x;
    std::memcpy(&x, &bits, 4);
    const float got = erf_canonical(x);
    worst = std::max(worst, ulps_apart(got, static_cast<float>(std::erf(static_cast<double>(x)))));
    REQUIRE(erf_canonical(-x) == -got);
  }
  for (int i = 0; i <= 16; ++i) {
    const float edge = static_cast<float>(i) * 0.25f;
    for (float x : {std::nextafter(edge, 0.0f), edge, std::nextafter(edge, 5.0f)})
      worst = std::max(worst, ulps_apart(erf_canonical(x), static_cast<float>(std::erf(static_cast<double>(x)))));
  }
  CHECK(worst <= 1);
  CHECK(erf_canonical(0.0f) == 0.0f);
  CHECK(std::signbit(erf_canonical(-0.0f)));
  CHECK(erf_canonical(1e-30f) == static_cast<float>(std::erf(1e-30)));
  CHECK(erf_canonical(std::numeric_limits<float>::infinity()) == 1.0f);
  CHECK(erf_canonical(-std::numeric_limits<float>::infinity()) == -1.0f);
  CHECK(erf_canonical(4.0f) == 1.0f);
  CHECK(std::isnan(erf_canonical(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("exp_nonpositive_canonical is within two double ulps of exp down to -708, then 0", "[kernels][canonical_math]") {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double z = -708.0 * static_cast<double>(i) / 200000.0;
    const double want = std::exp(z);
    worst = std::max(worst, std::abs(exp_nonpositive_canonical(z) - want) / want);
  }
  for (double z : {-1e-300, -1e-17, -0.3465735902799726, -0.3465735902799727, -1.0, -87.0, -707.99})
    worst = std::max(worst, std::abs(exp_nonpositive_canonical(z) - std::exp(z)) / std::exp(z));
  CHECK(worst <= 2 * std::numeric_limits<double>::epsilon());
  CHECK(exp_nonpositive_canonical(0.0) == 1.0);
  CHECK(exp_nonpositive_canonical(-0.0) == 1.0);
  CHECK(exp_nonpositive_canonical(-709.0) == 0.0);
  CHECK(exp_nonpositive_canonical(-std::numeric_limits<double>::infinity()) == 0.0);
  CHECK(std::isnan(exp_nonpositive_canonical(std::numeric_limits<double>::quiet_NaN())));
}

TEST_CASE("log_canonical is within two double ulps of log, and exact or special at its edges", "[kernels][canonical_math]") {
  double worst = 0;
  for (int i = -3000; i <= 3000; ++i) {
    const double x = std::pow(10.0, static_cast<double>(i) / 10.0) * 1.0000001;
    const double want = std::log(x);
    const double err = std::abs(log_canonical(x) - want);
    worst = std::max(worst, want == 0 ? err : err / std::abs(want));
  }
  for (int i = 1; i <= 100000; ++i) {  // near 1, where log's relative error is hardest
    const double x = 0.7 + 0.7 * static_cast<double>(i) / 100000.0;
    const double want = std::log(x);
    if (want != 0)
      worst = std::max(worst, std::abs(log_canonical(x) - want) / std::abs(want));
  }
  CHECK(worst <= 2 * std::numeric_limits<double>::epsilon());
  CHECK(log_canonical(1.0) == 0.0);
  CHECK(log_canonical(2.0) == std::log(2.0));
  const double tiny = std::numeric_limits<double>::denorm_min() * 12345;
  CHECK(std::abs(log_canonical(tiny) - std::log(tiny)) <= 2 * std::numeric_limits<double>::epsilon() * std::abs(std::log(tiny)));
  CHECK(log_canonical(0.0) == -std::numeric_limits<double>::infinity());
  CHECK(log_canonical(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(log_canonical(-1.0)));
  CHECK(std::isnan(log_canonical(std::numeric_limits<double>::quiet_NaN())));
}
