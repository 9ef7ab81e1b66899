#pragma once
/// This machine's roofline, measured: memory read bandwidth and the peak rate of the active kernel
/// table's inner instruction sequence for each type (f32 FMA, bf16 pair products, int8 u8 x s8
/// products as that table computes them), with every thread of a pool busy. For benchmarks: figures are reported against these.

#include "worker/engine/kernels/thread_pool.hpp"

namespace lf::kernels {

/// Measured rates.
struct peak_rates {
  double read_gbs = 0;     ///< streaming read of 1 GiB
  double f32_gflops = 0;   ///< 2 x multiply-adds per second
  double bf16_gflops = 0;
  double int8_gops = 0;
};

/// Runs the probes on every thread of `pool` (about a second).
peak_rates measure_peaks(thread_pool& pool);

} // namespace lf::kernels
