// Layer norm, GELU and LoRA deltas against plain double references, in every kernel family.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/unit/kernels/kernel_reference.hpp"
#include "worker/engine/kernels/elementwise.hpp"

using namespace lf::kernels;
using lf::test::table_scope;

TEST_CASE("layer norm matches the reference for odd widths", "[kernels][elementwise]") {
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (int n : {1, 5, 16, 37, 768}) {
      auto x = lf::test::random_floats(static_cast<std::size_t>(n) * 3, static_cast<std::uint64_t>(n), 2.0f);
      auto g = lf::test::random_floats(static_cast<std::size_t>(n), 1);
      auto b = lf::test::random_floats(static_cast<std::size_t>(n), 2);
      std::vector<float> y(x.size());
      layer_norm_rows(x.data(), static_cast<std::size_t>(n), y.data(), static_cast<std::size_t>(n), 3, n, g.data(), b.data(), 1e-5f);
      for (int r = 0; r < 3; ++r) {
        double mean = 0, var = 0;
        for (int i = 0; i < n; ++i)
          mean += x[static_cast<std::size_t>(r * n + i)];
        mean /= n;
        for (int i = 0; i < n; ++i)
          var += std::pow(x[static_cast<std::size_t>(r * n + i)] - mean, 2);
        var /= n;
        for (int i = 0; i < n; ++i) {
          const double ref = (x[static_cast<std::size_t>(r * n + i)] - mean) / std::sqrt(var + 1e-5) * g[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)];
          INFO(table->name << " n " << n << " i " << i);
          CHECK(std::fabs(y[static_cast<std::size_t>(r * n + i)] - ref) < 1e-4 * (1 + std::fabs(ref)));
        }
      }
    }
  }
}

TEST_CASE("gelu (tanh approximation and erf) matches the reference", "[kernels][elementwise]") {
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (bool exact : {false, true}) {
      std::vector<float> x;
      for (int i = -200; i <= 200; ++i)
        x.push_back(static_cast<float>(i) * 0.05f);
      x.push_back(-100.0f);
      x.push_back(100.0f);
      auto y = x;
      gelu_rows(y.data(), y.size(), 1, static_cast<int>(y.size()), exact);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double v = x[i];
        const double ref = exact ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                                 : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        INFO(table->name << " exact " << exact << " x " << v);
        CHECK(std::fabs(y[i] - ref) < 2e-6 * (1 + std::fabs(ref)));
      }
    }
  }
}

TEST_CASE("a LoRA delta adds (x A^T) B to each row", "[kernels][elementwise]") {
  const int in = 45, rank = 3, out = 23, rows = 4;
  auto x = lf::test::random_floats(static_cast<std::size_t>(rows * in), 1);
  auto a = lf::test::random_floats(static_cast<std::size_t>(in * rank), 2);
  auto b = lf::test::random_floats(static_cast<std::size_t>(rank * out), 3);
  for (const auto* table : lf::test::runnable_tables()) {
  table_scope scope(*table);
  std::vector<float> y(static_cast<std::size_t>(rows * out), 1.0f), t(rank);
  lora_rows(x.data(), in, y.data(), out, rows, in, rank, out, a.data(), b.data(), t.data());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < out; ++c) {
      double ref = 1.0;
      for (int j = 0; j < rank; ++j) {
        double xa = 0;
        for (int k = 0; k < in; ++k)
          xa += static_cast<double>(x[static_cast<std::size_t>(r * in + k)]) * a[static_cast<std::size_t>(j * in + k)];
        ref += xa * b[static_cast<std::size_t>(j * out + c)];
      }
      CHECK(std::fabs(y[static_cast<std::size_t>(r * out + c)] - ref) < 1e-4);
    }
}
}

TEST_CASE("layer norm, GELU and LoRA rows give the same bits in every table", "[kernels][elementwise]") {
  // Widths around the 16-lane step (tails of every length) and GPT-2's; values over a wide range,
  // GELU's included (large |x| where tanh saturates, tiny where it is linear).
  for (int n : {1, 7, 15, 16, 17, 31, 33, 100, 768, 1600, 3072}) {
    auto x = lf::test::random_floats(static_cast<std::size_t>(n) * 2, static_cast<std::uint64_t>(n) + 11, 8.0f);
    x[0] = -0.0f;
    x[x.size() - 1] = 1e-30f;
    const auto g = lf::test::random_floats(static_cast<std::size_t>(n), 5);
    const auto b = lf::test::random_floats(static_cast<std::size_t>(n), 6);
    const int rank = 8, out = n % 50 + 3;
    const auto a = lf::test::random_floats(static_cast<std::size_t>(n) * rank, 7);
    const auto bb = lf::test::random_floats(static_cast<std::size_t>(rank) * out, 8);
    std::vector<float> first_ln, first_gelu, first_lora;
    for (const auto* table : lf::test::runnable_tables()) {
      table_scope scope(*table);
      std::vector<float> ln(x.size());
      layer_norm_rows(x.data(), static_cast<std::size_t>(n), ln.data(), static_cast<std::size_t>(n), 2, n, g.data(),
                      b.data(), 1e-5f);
      auto gelu = x;
      gelu_rows(gelu.data(), static_cast<std::size_t>(n), 2, n, false);
      std::vector<float> lora(static_cast<std::size_t>(2 * out), 0.5f), t(rank);
      lora_rows(x.data(), static_cast<std::size_t>(n), lora.data(), static_cast<std::size_t>(out), 2, n, rank, out,
                a.data(), bb.data(), t.data());
      if (first_ln.empty()) {
        first_ln = ln;
        first_gelu = gelu;
        first_lora = lora;
      }
      INFO(table->name << " n " << n);
      // Compared as bits: -0 and +0 differ, NaN would not equal itself.
      CHECK(std::memcmp(ln.data(), first_ln.data(), ln.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(gelu.data(), first_gelu.data(), gelu.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(lora.data(), first_lora.data(), lora.size() * sizeof(float)) == 0);
    }
  }
}
