#pragma once
/// This machine's roofline, measured: memory read bandwidth and the peak rate of the kernels'
/// inner instruction for each type (f32 FMA, bf16 pair dot products, int8 u8 x s8 dot products),
/// with every thread of a pool busy. For benchmarks: figures are reported against these.

#include "worker/engine/kernels/thread_pool.hpp"

namespace lf::kernels {

/// Measured rates (0 where the CPU lacks the instruction).
struct peak_rates {
  double read_gbs = 0;     ///< streaming read of 1 GiB
  double f32_gflops = 0;   ///< 2 x multiply-adds per second
  double bf16_gflops = 0;
  double int8_gops = 0;
};

/// Runs the probes on every thread of `pool` (about a second).
peak_rates measure_peaks(thread_pool& pool);

namespace detail {
/// Multiply-adds per second of one thread: f32, bf16, int8.
void peak_avx512(double& f32, double& bf16, double& int8, bool has_bf16, bool has_vnni);
} // namespace detail

} // namespace lf::kernels
