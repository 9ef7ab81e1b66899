// Devices, and the engine's factory, in a build with CUDA.
#include <string>

#include "worker/engine/cuda/cuda_engine_impl.hpp"

namespace lf::engine {

bool cuda_built() noexcept { return true; }

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not sticky, clear it
    return 0;
  }
  return n;
}

cuda_device_info describe_cuda_device(int index) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n)
    throw std::runtime_error("cuda:" + std::to_string(index) + ": no such GPU (the driver sees " + std::to_string(n)
                             + ")");
  cudaDeviceProp p{};
  cuda::check(cudaGetDeviceProperties(&p, index), "device properties");
  cuda_device_info d;
  d.index = index;
  d.name = p.name;
  d.memory_bytes = p.totalGlobalMem;
  d.multiprocessors = p.multiProcessorCount;
  d.major = p.major;
  d.minor = p.minor;
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess
      && cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, index) == cudaSuccess)
    d.memory_bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // double data rate
  return d;
}

std::unique_ptr<cuda_engine> make_cuda_engine(const std::string& model_dir, const cuda_options& o,
                                              cache::adapter_lookup_fn adapters) {
  return std::make_unique<cuda::engine_impl>(model_dir, o, std::move(adapters));
}

} // namespace lf::engine
