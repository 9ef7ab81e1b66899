#pragma once
/// Plain references for the kernel tests: seeded random matrices and a double-precision product.

#include <cstdint>
#include <random>
#include <vector>

#include "worker/engine/kernels/kernel_table.hpp"

namespace lf::test {

/// `n` floats, normal(0, sd), from `seed`; every 97th one 8x larger (activation outliers).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float sd = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = d(rng) * (i % 97 == 13 ? 8.0f : 1.0f);
  return v;
}

/// y[m][n] = sum_k x[m][k] w[k][n] + bias[n], in double.
inline std::vector<double> reference_product(const std::vector<float>& x, const std::vector<float>& w,
                                             const std::vector<float>& bias, int M, int K, int N) {
  std::vector<double> y(static_cast<std::size_t>(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = bias.empty() ? 0.0 : bias[n];
      for (int k = 0; k < K; ++k)
        acc += static_cast<double>(x[static_cast<std::size_t>(m) * K + k]) * w[static_cast<std::size_t>(k) * N + n];
      y[static_cast<std::size_t>(m) * N + n] = acc;
    }
  return y;
}

/// Every kernel table this machine runs, the portable one first.
inline std::vector<const kernels::kernel_table*> runnable_tables() {
  return kernels::runnable_tables(kernels::host_features());
}

/// Sets the kernel table for a scope, and back to the best afterwards.
struct table_scope {
  explicit table_scope(const kernels::kernel_table& t) { kernels::set_active_table(t); }
  ~table_scope() { kernels::set_active_table(kernels::best_table(kernels::host_features())); }
  table_scope(const table_scope&) = delete;
  table_scope& operator=(const table_scope&) = delete;
};

} // namespace lf::test
