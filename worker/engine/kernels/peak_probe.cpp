#include "worker/engine/kernels/peak_probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "worker/engine/kernels/cpu_features.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"

namespace lf::kernels {

peak_rates measure_peaks(thread_pool& pool) {
  peak_rates out;
  const int n = pool.size();
  const std::size_t floats = (std::size_t{1} << 30) / sizeof(float);
  aligned_buffer buf(floats * sizeof(float));
  auto* p = reinterpret_cast<float*>(buf.data());
  pool.parallel_for(floats, [&](std::size_t b, std::size_t e) { std::fill(p + b, p + e, 1.0f); });
  std::atomic<double> sink{0};
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(floats, [&](std::size_t b, std::size_t e) {
      float acc[16] = {};
      for (auto i = b; i + 16 <= e; i += 16)
        for (int k = 0; k < 16; ++k)
          acc[k] += p[i + k];
      double s = 0;
      for (float v : acc)
        s += v;
      sink.store(s, std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.read_gbs = std::max(out.read_gbs, static_cast<double>(floats * sizeof(float)) / s / 1e9);
  }
  if (active_isa() == isa::avx512) {
    std::vector<double> f(static_cast<std::size_t>(n)), b(f), q(f);
    const auto& hf = host_features();
    pool.run([&](int t) {
      detail::peak_avx512(f[static_cast<std::size_t>(t)], b[static_cast<std::size_t>(t)],
                          q[static_cast<std::size_t>(t)], hf.avx512_bf16, hf.avx512_vnni);
    });
    for (int t = 0; t < n; ++t) {
      out.f32_gflops += 2 * f[static_cast<std::size_t>(t)] / 1e9;
      out.bf16_gflops += 2 * b[static_cast<std::size_t>(t)] / 1e9;
      out.int8_gops += 2 * q[static_cast<std::size_t>(t)] / 1e9;
    }
  }
  return out;
}

} // namespace lf::kernels
