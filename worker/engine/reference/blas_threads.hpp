#pragma once
/// The thread pool of the BLAS library that ATen's float matrix products call. Debian's libtorch
/// calls the system BLAS (libopenblas0-pthread here), whose pthread pool is sized to the machine
/// and is not touched by at::set_num_threads. It is one pool per process: several workers in one
/// process that each ask it for every core wait on each other (measured in docs/benchmarks.md:
/// two workers ran at 0.6x of one until each had a single BLAS thread).

namespace lf::engine {

/// Sets OpenBLAS's thread count when n > 0 and returns the count in effect; 0 when the BLAS in
/// this process is not OpenBLAS (nothing to set). Process-wide.
int set_blas_threads(int n);

} // namespace lf::engine
