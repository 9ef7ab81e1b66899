#pragma once
// Private to the kernels: the portable matrix-product kernel, written so a compiler vectorizes it
// across the 64 columns of a panel (k outer, columns inner, up to four rows sharing each panel
// read). gemm_portable.cpp instantiates it for the portable table (baseline flags: any CPU of
// the architecture). The Tag (with its int8_operand type) makes an instantiation its own symbol,
// so a copy compiled with other flags could never stand in for it at link time.
//
// Each output element is summed over k in order from 0, whatever the tile: the same results as a
// scalar loop, on every row count and thread count, and the same bits as every other family's.
// f32: one fused multiply-add a step (std::fma, as the vector tables' FMA; on a CPU without FMA
// libm computes it exactly, slowly). bf16: the odd element of a pair first, as vdpbf16ps, one
// multiply and one add (a bf16 product is exact in f32, so that equals a fused step;
// -ffp-contract=off). int8 sums are exact integers; int4 sums each block exactly, then combines the
// blocks in k order with std::fma (gemm.hpp), as every vector table.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "worker/engine/kernels/gemm.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"

namespace lf::kernels::detail {

/// Rows of a tile: a panel is read once per this many rows.
inline constexpr int portable_rows = 4;

/// y row `m`, columns [col0, col0 + n) from accumulated f32 values.
template <class Tag>
inline void portable_store(const gemm_panels& g, int m, int col0, int n, const float* v) {
  float* y = g.y + static_cast<std::size_t>(m) * g.ldy + col0;
  for (int c = 0; c < n; ++c) {
    float t = v[c];
    if (g.bias)
      t = t + g.bias[col0 + c];
    y[c] = g.accumulate ? y[c] + t : t;
  }
}

/// A bf16 bit pattern widened to f32 (exact).
template <class Tag>
inline float portable_bf16(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/// Rows [m0, m0 + R) x one panel.
template <class Tag, int R>
void portable_tile(const gemm_panels& g, const std::byte* panel, int col0, int n, int m0, int groups) {
  constexpr int P = panel_cols;
  const auto& w = *g.w;
  switch (w.type()) {
    case weight_type::f32: {
      const auto* b = reinterpret_cast<const float*>(panel);
      const float* a[R];
      for (int r = 0; r < R; ++r)
        a[r] = static_cast<const float*>(g.a) + static_cast<std::size_t>(m0 + r) * g.lda;
      alignas(64) float acc[R][P] = {};
      for (int k = 0; k < groups; ++k) {
        const float* bk = b + k * P;
        for (int r = 0; r < R; ++r) {
          const float ar = a[r][k];
          for (int c = 0; c < P; ++c)
            acc[r][c] = std::fma(ar, bk[c], acc[r][c]);  // fused, as every vector table
        }
      }
      for (int r = 0; r < R; ++r)
        portable_store<Tag>(g, m0 + r, col0, n, acc[r]);
      return;
    }
    case weight_type::bf16: {
      const auto* b = reinterpret_cast<const std::uint16_t*>(panel);
      const std::uint16_t* a[R];
      for (int r = 0; r < R; ++r)
        a[r] = static_cast<const std::uint16_t*>(g.a) + static_cast<std::size_t>(m0 + r) * g.lda;
      alignas(64) float acc[R][P] = {};
      alignas(64) float even[P], odd[P];
      for (int k = 0; k < groups; ++k) {
        const std::uint16_t* bk = b + k * P * 2;
        for (int c = 0; c < P; ++c) {
          even[c] = portable_bf16<Tag>(bk[2 * c]);
          odd[c] = portable_bf16<Tag>(bk[2 * c + 1]);
        }
        for (int r = 0; r < R; ++r) {
          const float a0 = portable_bf16<Tag>(a[r][2 * k]), a1 = portable_bf16<Tag>(a[r][2 * k + 1]);
          for (int c = 0; c < P; ++c) {
            acc[r][c] += a1 * odd[c];
            acc[r][c] += a0 * even[c];
          }
        }
      }
      for (int r = 0; r < R; ++r)
        portable_store<Tag>(g, m0 + r, col0, n, acc[r]);
      return;
    }
    case weight_type::int8: {
      const auto* b = reinterpret_cast<const std::int8_t*>(panel);
      const std::uint8_t* a[R];
      for (int r = 0; r < R; ++r)
        a[r] = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0 + r) * g.lda;
      alignas(64) std::int32_t acc[R][P] = {};
      // Operands of Tag::int8_operand: int32 where the vector unit multiplies 32-bit lanes
      // (AVX2), int16 with 32-bit products elsewhere (the widening multiplies SSE2 has).
      using operand = typename Tag::int8_operand;
      alignas(64) operand q[4][P];
      for (int k = 0; k < groups; ++k) {
        const std::int8_t* bk = b + k * P * 4;
        for (int c = 0; c < P; ++c)
          for (int j = 0; j < 4; ++j)
            q[j][c] = bk[4 * c + j];
        for (int r = 0; r < R; ++r) {
          const operand a0 = a[r][4 * k], a1 = a[r][4 * k + 1], a2 = a[r][4 * k + 2], a3 = a[r][4 * k + 3];
          for (int c = 0; c < P; ++c)
            acc[r][c] += static_cast<std::int32_t>(a0) * q[0][c] + static_cast<std::int32_t>(a1) * q[1][c]
                         + static_cast<std::int32_t>(a2) * q[2][c] + static_cast<std::int32_t>(a3) * q[3][c];
        }
      }
      const float* ws = w.scales() + col0;
      const std::int32_t* cs = w.col_sums() + col0;
      for (int r = 0; r < R; ++r) {
        const float as = g.a_scale[m0 + r];
        const std::int32_t az = g.a_zero[m0 + r];
        alignas(64) float v[P];
        for (int c = 0; c < n; ++c)
          v[c] = static_cast<float>(acc[r][c] - az * cs[c]) * (as * ws[c]);
        portable_store<Tag>(g, m0 + r, col0, n, v);
      }
      return;
    }
    case weight_type::int4: {
      const auto* b = reinterpret_cast<const std::uint8_t*>(panel);
      const std::uint8_t* a[R];
      for (int r = 0; r < R; ++r)
        a[r] = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0 + r) * g.lda;
      const int blocks = w.blocks();
      constexpr int rows_per_block = int4_block / 8;
      const float* bs = w.block_scales() + static_cast<std::size_t>(col0 / P) * blocks * P;
      const std::int16_t* bsum = w.block_sums() + static_cast<std::size_t>(col0 / P) * blocks * P;
      alignas(64) float acc[R][P] = {};
      using operand = typename Tag::int8_operand;
      alignas(64) operand q[8][P];
      for (int blk = 0; blk < blocks; ++blk) {
        alignas(64) std::int32_t dot[R][P] = {};
        for (int gr = 0; gr < rows_per_block; ++gr) {
          const int k8 = blk * rows_per_block + gr;  // the group row: k = 8 k8 ..
          const std::uint8_t* bk = b + static_cast<std::size_t>(k8) * P * 4;
          for (int c = 0; c < P; ++c)
            for (int j = 0; j < 4; ++j) {
              q[j][c] = static_cast<operand>(bk[4 * c + j] & 0x0f);
              q[j + 4][c] = static_cast<operand>(bk[4 * c + j] >> 4);
            }
          for (int r = 0; r < R; ++r) {
            const std::uint8_t* ak = a[r] + 8 * k8;
            for (int j = 0; j < 8; ++j) {
              const std::int32_t aj = ak[j];
              for (int c = 0; c < P; ++c)
                dot[r][c] += aj * static_cast<std::int32_t>(q[j][c]);
            }
          }
        }
        const float* sc = bs + static_cast<std::size_t>(blk) * P;
        const std::int16_t* cs = bsum + static_cast<std::size_t>(blk) * P;
        for (int r = 0; r < R; ++r) {
          const std::int32_t shift = 8 * g.a_block_sums[static_cast<std::size_t>(m0 + r) * blocks + blk];
          const std::int32_t az = g.a_zero[m0 + r];
          for (int c = 0; c < P; ++c)
            acc[r][c] = std::fma(sc[c], static_cast<float>(dot[r][c] - shift - az * cs[c]), acc[r][c]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const float as = g.a_scale[m0 + r];
        alignas(64) float v[P];
        for (int c = 0; c < n; ++c)
          v[c] = acc[r][c] * as;
        portable_store<Tag>(g, m0 + r, col0, n, v);
      }
      return;
    }
  }
}

/// Panels [p0, p1) x every row, in tiles of up to portable_rows rows.
template <class Tag>
void gemm_portable(const gemm_panels& g, int p0, int p1) {
  const auto& w = *g.w;
  const int groups = w.k_padded() / group_of(w.type());
  for (int p = p0; p < p1; ++p) {
    const int col0 = p * panel_cols;
    const int n = std::min(panel_cols, w.n() - col0);
    const std::byte* panel = w.panel(p);
    int m0 = 0;
    for (; m0 + portable_rows <= g.m; m0 += portable_rows)
      portable_tile<Tag, portable_rows>(g, panel, col0, n, m0, groups);
    switch (g.m - m0) {
      case 1: portable_tile<Tag, 1>(g, panel, col0, n, m0, groups); break;
      case 2: portable_tile<Tag, 2>(g, panel, col0, n, m0, groups); break;
      case 3: portable_tile<Tag, 3>(g, panel, col0, n, m0, groups); break;
      default: break;
    }
  }
}

} // namespace lf::kernels::detail
