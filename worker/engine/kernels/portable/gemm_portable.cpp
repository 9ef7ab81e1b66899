// The portable table's matrix products and activation conversions: plain C++ that any compiler
// vectorizes for the baseline of its architecture (SSE2 on x86-64, NEON on aarch64).
#include "worker/engine/kernels/portable/gemm_portable.hpp"

#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/half.hpp"

namespace lf::kernels::detail {

namespace {
struct portable_tag {
  using int8_operand = std::int16_t;
};
} // namespace

void portable_gemm_f32(const gemm_panels& g, int p0, int p1) { gemm_portable<portable_tag>(g, p0, p1); }
void portable_gemm_bf16(const gemm_panels& g, int p0, int p1) { gemm_portable<portable_tag>(g, p0, p1); }
void portable_gemm_int8(const gemm_panels& g, int p0, int p1) { gemm_portable<portable_tag>(g, p0, p1); }
void portable_gemm_int4(const gemm_panels& g, int p0, int p1) { gemm_portable<portable_tag>(g, p0, p1); }

void portable_rows_to_bf16(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint16_t* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    for (int i = 0; i < k; ++i)
      o[i] = engine::f32_to_bf16_operand(xr[i]);
    for (int i = k; i < k_padded; ++i)
      o[i] = 0;
  }
}

void portable_rows_to_u8(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint8_t* out,
                         float* scale, std::int32_t* zero) {
  for (int r = 0; r < rows; ++r)
    quantize_row_u8(x + static_cast<std::size_t>(r) * ldx, k, k_padded,
                    out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded), scale[r], zero[r]);
}

} // namespace lf::kernels::detail
