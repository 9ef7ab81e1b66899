#include "worker/engine/kernels/elementwise.hpp"

#include <cmath>

#include "worker/engine/kernels/cpu_features.hpp"

namespace lf::kernels {

void layer_norm_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int n,
                     const float* gain, const float* bias, float eps) {
  const bool vec = active_isa() == isa::avx512;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    float* yr = y + static_cast<std::size_t>(r) * ldy;
    if (vec) {
      detail::layer_norm_avx512(xr, yr, n, gain, bias, eps);
      continue;
    }
    float sum = 0;
    for (int i = 0; i < n; ++i)
      sum += xr[i];
    const float mean = sum / static_cast<float>(n);
    float var = 0;
    for (int i = 0; i < n; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
    for (int i = 0; i < n; ++i)
      yr[i] = (xr[i] - mean) * rstd * gain[i] + bias[i];
  }
}

void gelu_rows(float* x, std::size_t ldx, int rows, int n, bool exact) {
  const bool vec = !exact && active_isa() == isa::avx512;
  for (int r = 0; r < rows; ++r) {
    float* xr = x + static_cast<std::size_t>(r) * ldx;
    if (vec) {
      detail::gelu_tanh_avx512(xr, n);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const float v = xr[i];
      xr[i] = exact ? 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f))
                    : 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    }
  }
}

void lora_rows(const float* x, std::size_t ldx, float* y, std::size_t ldy, int rows, int in,
               int rank, int out, const float* a, const float* b, float* t) {
  const bool vec = active_isa() == isa::avx512;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    float* yr = y + static_cast<std::size_t>(r) * ldy;
    if (vec) {
      detail::lora_row_avx512(xr, yr, in, rank, out, a, b, t);
      continue;
    }
    for (int j = 0; j < rank; ++j) {
      const float* aj = a + static_cast<std::size_t>(j) * in;
      float acc = 0;
      for (int k = 0; k < in; ++k)
        acc += xr[k] * aj[k];
      t[j] = acc;
    }
    for (int j = 0; j < rank; ++j) {
      const float v = t[j];
      const float* bj = b + static_cast<std::size_t>(j) * out;
      for (int c = 0; c < out; ++c)
        yr[c] += v * bj[c];
    }
  }
}

} // namespace lf::kernels
