#include "worker/engine/reference/int8_linear.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace lf::engine {

namespace {

/// Rows up to this many use the in-cache kernel; more go through the float GEMM.
constexpr std::int64_t kernel_max_rows = 64;
/// Output columns per task: rows x 256 floats of results stay in L1/L2 while the K loop runs.
constexpr std::int64_t column_block = 256;

/// y[m, j0:j1] += sum_k x[m, k] * float(q[k, j0:j1]) for m < rows, one block of columns. Four
/// weight rows at a time: few rows convert them on the fly; more rows widen them once into an
/// in-cache buffer that every row then reads. Either way each result row is loaded and stored
/// once per four k, not once per k. Built for AVX-512, AVX2 and baseline x86-64, picked at load
/// time (GCC target_clones).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void int8_block(const float* x, const std::int8_t* q, float* y, std::int64_t rows, std::int64_t in,
                std::int64_t out, std::int64_t j0, std::int64_t j1) {
  float w[4][column_block];
  const std::int64_t nb = j1 - j0;
  std::int64_t k = 0;
  for (; k + 4 <= in; k += 4) {
    const std::int8_t* q0 = q + k * out + j0;
    const std::int8_t* q1 = q0 + out;
    const std::int8_t* q2 = q1 + out;
    const std::int8_t* q3 = q2 + out;
    if (rows <= 2) {
      for (std::int64_t m = 0; m < rows; ++m) {
        const float* xm = x + m * in + k;
        const float x0 = xm[0], x1 = xm[1], x2 = xm[2], x3 = xm[3];
        float* yr = y + m * out + j0;
        for (std::int64_t j = 0; j < nb; ++j)
          yr[j] += x0 * static_cast<float>(q0[j]) + x1 * static_cast<float>(q1[j])
                   + x2 * static_cast<float>(q2[j]) + x3 * static_cast<float>(q3[j]);
      }
      continue;
    }
    for (std::int64_t j = 0; j < nb; ++j) {
      w[0][j] = static_cast<float>(q0[j]);
      w[1][j] = static_cast<float>(q1[j]);
      w[2][j] = static_cast<float>(q2[j]);
      w[3][j] = static_cast<float>(q3[j]);
    }
    for (std::int64_t m = 0; m < rows; ++m) {
      const float* xm = x + m * in + k;
      const float x0 = xm[0], x1 = xm[1], x2 = xm[2], x3 = xm[3];
      float* yr = y + m * out + j0;
      for (std::int64_t j = 0; j < nb; ++j)
        yr[j] += x0 * w[0][j] + x1 * w[1][j] + x2 * w[2][j] + x3 * w[3][j];
    }
  }
  for (; k < in; ++k) {  // the last in % 4 rows
    const std::int8_t* qr = q + k * out + j0;
    for (std::int64_t m = 0; m < rows; ++m) {
      const float xv = x[m * in + k];
      float* yr = y + m * out + j0;
      for (std::int64_t j = 0; j < nb; ++j)
        yr[j] += xv * static_cast<float>(qr[j]);
    }
  }
}

} // namespace

int8_weight quantize_int8(const at::Tensor& w) {
  if (w.dim() != 2)
    throw std::invalid_argument("quantize_int8: expected a 2-D [in, out] weight");
  auto f = w.to(at::kFloat);
  auto scale = f.abs().amax(0).div_(127.0);
  scale.masked_fill_(scale.eq(0), 1.0);
  auto q = f.div(scale).round_().clamp_(-127, 127).to(at::kChar).contiguous();
  return {q, scale.contiguous()};
}

at::Tensor int8_linear(const at::Tensor& x_in, const int8_weight& w, const at::Tensor& bias) {
  const auto x = x_in.to(at::kFloat).contiguous();
  const std::int64_t rows = x.size(0), in = w.q.size(0), out = w.q.size(1);
  if (x.size(1) != in)
    throw std::invalid_argument("int8_linear: input width does not match the weight");
  if (rows > kernel_max_rows)
    return at::addmm(bias, x, w.q.to(at::kFloat).mul_(w.scale));
  auto y = at::zeros({rows, out}, x.options());
  const float* xp = x.data_ptr<float>();
  const std::int8_t* qp = w.q.data_ptr<std::int8_t>();
  float* yp = y.data_ptr<float>();
  const std::int64_t blocks = (out + column_block - 1) / column_block;
  at::parallel_for(0, blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b)
      int8_block(xp, qp, yp, rows, in, out, b * column_block, std::min(out, (b + 1) * column_block));
  });
  return y.mul_(w.scale).add_(bias);
}

} // namespace lf::engine
