#pragma once
/// --kv-dtype, shared by serve, generate and the benchmark programs.

#include <stdexcept>
#include <string>

#include "tools/common/args.hpp"
#include "worker/engine/kernels/kv_cache.hpp"
#include "worker/worker_settings.hpp"

namespace lf::tools {

/// The K/V cache type --kv-dtype names (default `fallback`); std::invalid_argument naming the
/// flag, the choices and the value otherwise.
inline kernels::kv_type kv_dtype_flag(args& a, const std::string& fallback) {
  const auto name = a.str("kv-dtype", fallback);
  if (auto t = kernels::parse_kv_type(name))
    return *t;
  throw std::invalid_argument(std::string("--kv-dtype must be ") + worker::kv_dtype_list + " (got '" + name + "')");
}

} // namespace lf::tools
