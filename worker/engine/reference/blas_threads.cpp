#include "worker/engine/reference/blas_threads.hpp"

#include <dlfcn.h>

namespace lf::engine {

int set_blas_threads(int n) {
  // Looked up at run time: the BLAS is whichever libblas.so.3 the alternatives system points at,
  // and only OpenBLAS has these entry points.
  using set_fn = void (*)(int);
  using get_fn = int (*)();
  auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set != nullptr && n > 0)
    set(n);
  return get != nullptr ? get() : 0;
}

} // namespace lf::engine
