// The CUDA backend's entry points in a build without CUDA: no device, and a clear error for
// anyone who asks for one.
#include <stdexcept>

#include "worker/engine/cuda/cuda_engine.hpp"

namespace lf::engine {

bool cuda_built() noexcept { return false; }

int cuda_device_count() noexcept { return 0; }

cuda_device_info describe_cuda_device(int index) {
  throw std::runtime_error("cuda:" + std::to_string(index)
                           + ": this build has no CUDA backend (configure where nvcc and cuBLAS are found)");
}

std::unique_ptr<cuda_engine> make_cuda_engine(const std::string&, const cuda_options& o, cache::adapter_lookup_fn) {
  describe_cuda_device(o.device);  // throws
  return nullptr;
}

} // namespace lf::engine
