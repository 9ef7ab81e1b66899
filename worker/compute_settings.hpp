#pragma once
/// Names and defaults shared by everything that configures workers: `lorafleet serve`'s flags,
/// cluster configs (workers.dtype, threads) and worker::check_settings. Dependency-free, so the
/// pure config library can use it.

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

namespace lf::worker {

/// The compute dtypes a worker accepts, as messages list them.
inline constexpr const char* compute_dtype_list = "f32, bf16 or int8";

/// Whether `s` names one of them (engine::parse_compute_dtype turns it into the enum).
inline bool is_compute_dtype(const std::string& s) { return s == "f32" || s == "bf16" || s == "int8"; }

/// Each of `workers` workers' share of this machine's cores, at least 1: the default ATen and
/// OpenBLAS thread counts of workers sharing one process.
inline int share_of_cores(std::uint32_t workers) {
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max(1u, cores / std::max(1u, workers)));
}

} // namespace lf::worker
