// The matrix-product dispatcher: converts the activations with the active table's conversion,
// then spreads the packed matrix's panels over the pool with the table's kernel for its type.
#include "worker/engine/kernels/gemm.hpp"

#include <algorithm>
#include <stdexcept>

#include "worker/engine/kernels/common/quant_params.hpp"
#include "worker/engine/kernels/kernel_table.hpp"

namespace lf::kernels {

void gemm_workspace::reserve(std::size_t bytes, std::size_t rows, std::size_t block_sums) {
  if (act_.size() < bytes)
    act_ = aligned_buffer(std::max(bytes, act_.size() * 3 / 2));
  if (scale_.size() < rows) {
    scale_.resize(rows);
    zero_.resize(rows);
  }
  if (sums_.size() < block_sums)
    sums_.resize(block_sums);
}

void u8_block_sums(const std::uint8_t* a, std::size_t lda, int rows, int k_padded, std::int32_t* out) noexcept {
  const int blocks = k_padded / int4_block;
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* ar = a + static_cast<std::size_t>(r) * lda;
    for (int b = 0; b < blocks; ++b) {
      std::int32_t s = 0;
      for (int i = 0; i < int4_block; ++i)
        s += ar[b * int4_block + i];
      out[static_cast<std::size_t>(r) * static_cast<std::size_t>(blocks) + static_cast<std::size_t>(b)] = s;
    }
  }
}

void quantize_row_u8(const float* x, int k, int k_padded, std::uint8_t* out, float& scale,
                     std::int32_t& zero) noexcept {
  float mn = 0, mx = 0;
  for (int i = 0; i < k; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  float inv;
  detail::u8_params(mn, mx, scale, inv, zero);
  for (int i = 0; i < k; ++i)
    out[i] = detail::u8_of(x[i], inv, zero);
  // Padding: any value works (the padded weights are 0); the zero point keeps the sums exact.
  for (int i = k; i < k_padded; ++i)
    out[i] = static_cast<std::uint8_t>(zero);
}

void gemm(const packed_matrix& w, const gemm_io& io, gemm_workspace& ws, thread_pool& pool) {
  if (io.m < 0 || (io.m > 0 && (io.x == nullptr || io.y == nullptr)))
    throw std::invalid_argument("gemm: null operand or negative row count");
  if (io.m == 0)
    return;
  const int K = w.k(), KP = w.k_padded(), M = io.m;
  const kernel_table& table = active_table();
  gemm_panels g{&w, io.x, io.ldx, nullptr, nullptr, io.y, io.ldy, M, io.bias, io.accumulate};
  // Rows are converted in parallel only when there are enough of them to pay for a region.
  const bool rows_in_parallel = M >= 16;
  auto kernel = table.gemm_f32;
  switch (w.type()) {
    case weight_type::f32:
      break;
    case weight_type::bf16: {
      ws.reserve(static_cast<std::size_t>(M) * KP * 2, 0);
      auto* a = reinterpret_cast<std::uint16_t*>(ws.act());
      auto convert = [&](std::size_t r0, std::size_t r1) {
        table.rows_to_bf16(io.x + r0 * io.ldx, io.ldx, static_cast<int>(r1 - r0), K, KP,
                           a + r0 * static_cast<std::size_t>(KP));
      };
      rows_in_parallel ? pool.parallel_for(static_cast<std::size_t>(M), convert)
                       : convert(0, static_cast<std::size_t>(M));
      g.a = a;
      g.lda = static_cast<std::size_t>(KP);
      kernel = table.gemm_bf16;
      break;
    }
    case weight_type::int8:
    case weight_type::int4: {
      // Both quantize the rows to u8; int8 may want them shifted (int8_shift_rows), int4 wants
      // each row's sums over its blocks.
      const bool int4 = w.type() == weight_type::int4;
      const std::size_t bytes = static_cast<std::size_t>(M) * KP;
      const std::size_t blocks = static_cast<std::size_t>(w.blocks());
      const auto shift = int4 ? nullptr : table.int8_shift_rows;
      ws.reserve(shift ? 2 * bytes : bytes, static_cast<std::size_t>(M), static_cast<std::size_t>(M) * blocks);
      auto* a = reinterpret_cast<std::uint8_t*>(ws.act());
      float* scale = ws.row_scale();
      std::int32_t* zero = ws.row_zero();
      std::int32_t* sums = ws.block_sums();
      auto quantize = [&](std::size_t r0, std::size_t r1) {
        table.rows_to_u8(io.x + r0 * io.ldx, io.ldx, static_cast<int>(r1 - r0), K, KP,
                         a + r0 * static_cast<std::size_t>(KP), scale + r0, zero + r0);
        if (shift)
          shift(a + r0 * static_cast<std::size_t>(KP), (r1 - r0) * static_cast<std::size_t>(KP),
                a + bytes + r0 * static_cast<std::size_t>(KP));
        if (int4)
          u8_block_sums(a + r0 * static_cast<std::size_t>(KP), static_cast<std::size_t>(KP),
                        static_cast<int>(r1 - r0), KP, sums + r0 * blocks);
      };
      if (shift)
        g.a_abs = a + bytes;
      rows_in_parallel ? pool.parallel_for(static_cast<std::size_t>(M), quantize)
                       : quantize(0, static_cast<std::size_t>(M));
      g.a = a;
      g.lda = static_cast<std::size_t>(KP);
      g.a_scale = scale;
      g.a_zero = zero;
      if (int4)
        g.a_block_sums = sums;
      kernel = int4 ? table.gemm_int4 : table.gemm_int8;
      break;
    }
  }
  pool.parallel_for(static_cast<std::size_t>(w.panels()), [&](std::size_t p0, std::size_t p1) {
    kernel(g, static_cast<int>(p0), static_cast<int>(p1));
  });
}

} // namespace lf::kernels
