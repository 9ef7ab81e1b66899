#include "worker/engine/kernels/peak_probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "worker/engine/kernels/kernel_table.hpp"
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
  const auto probe = active_table().peak;
  std::vector<thread_peaks> per(static_cast<std::size_t>(n));
  pool.run([&](int t) { per[static_cast<std::size_t>(t)] = probe(); });
  for (const auto& p : per) {
    out.f32_gflops += 2 * p.f32 / 1e9;
    out.bf16_gflops += 2 * p.bf16 / 1e9;
    out.int8_gops += 2 * p.int8 / 1e9;
  }
  return out;
}

} // namespace lf::kernels
