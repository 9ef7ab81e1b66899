// Row operations through the active kernel table (the erf GELU stays scalar: no table vectorizes
// it, and GPT-2 uses the tanh form; its erf is canonical_math's, the same bits on every machine).
#include "worker/engine/kernels/elementwise.hpp"

#include "worker/engine/kernels/canonical_math.hpp"
#include "worker/engine/kernels/kernel_table.hpp"

namespace lf::kernels {

void layer_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int n,
                     const float* gain, const float* bias, float eps) {
  const auto fn = active_table().layer_norm;
  for (int r = 0; r < rows; ++r)
    fn(x + static_cast<std::size_t>(r) * ldx, y + static_cast<std::size_t>(r) * ldy, n, gain, bias, eps);
}

void gelu_rows(float* x, std::size_t ldx, int rows, int n, bool exact) {
  const auto fn = active_table().gelu_tanh;
  for (int r = 0; r < rows; ++r) {
    float* xr = x + static_cast<std::size_t>(r) * ldx;
    if (!exact) {
      fn(xr, n);
      continue;
    }
    for (int i = 0; i < n; ++i)
      xr[i] = 0.5f * xr[i] * (1.0f + erf_canonical(xr[i] * 0.70710678118654752f));
  }
}

void lora_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int in,
               int rank, int out, const float* a, const float* b, float* t) {
  const auto fn = active_table().lora_row;
  for (int r = 0; r < rows; ++r)
    fn(x + static_cast<std::size_t>(r) * ldx, y + static_cast<std::size_t>(r) * ldy, in, rank, out, a, b, t);
}

} // namespace lf::kernels
