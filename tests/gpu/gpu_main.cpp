// The GPU tests' main: without a CUDA device it runs nothing and exits 77, which ctest reports as
// skipped (not passed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "worker/engine/cuda/cuda_engine.hpp"

int main(int argc, char** argv) {
  if (lf::engine::cuda_device_count() == 0) {
    std::cout << "no CUDA device: the GPU tests did not run\n";
    return 77;
  }
  const auto d = lf::engine::describe_cuda_device(0);
  std::cout << "GPU tests on cuda:0, " << d.name << "\n";
  return Catch::Session().run(argc, argv);
}
