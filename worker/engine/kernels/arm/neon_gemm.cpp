// The neon table's matrix products (baseline Advanced SIMD, every aarch64 CPU) and the activation
// conversions every aarch64 table shares.
//
//   f32:  one FMA per row and column vector per k, k in order.
//   bf16: a pair of bf16 widened to two f32 vectors in registers, two FMAs per pair, the odd
//         element first (the order of the x86 tables).
//   int8: a' = a - 128 (signed) times the s8 weight: each product fits int16 (|a' w| <= 16256),
//         smull / smull2 form eight at a time, sadalp adds pairs into int32 lanes (exact), and a
//         last pairwise add gives each column's sum; the output stage adds back 128 * colsum.
//   int4: the nibbles (0..15, an AND and a shift per load) times the u8 activation as it is:
//         umull / umull2 (each product <= 3825 fits u16), uadalp into u32 pair sums, a last
//         pairwise add per block (neon_int4_tile: then the block's fold into f32).
#include "worker/engine/kernels/arm/neon_common.hpp"
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/common/quant_params.hpp"

namespace lf::kernels::detail {

namespace {

template <int R, int CV>
void f32_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int K = g.w->k();
  const float* A = static_cast<const float*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const float* B = reinterpret_cast<const float*>(panel) + 4 * v0;
  float32x4_t c[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      c[m][t] = vdupq_n_f32(0.0f);
  for (int k = 0; k < K; ++k) {
    const float* b = B + static_cast<std::size_t>(k) * panel_cols;
    float32x4_t bv[CV];
    for (int t = 0; t < CV; ++t)
      bv[t] = vld1q_f32(b + 4 * t);
    for (int m = 0; m < R; ++m) {
      const float32x4_t a = vdupq_n_f32(A[static_cast<std::size_t>(m) * g.lda + k]);
      for (int t = 0; t < CV; ++t)
        c[m][t] = vfmaq_f32(c[m][t], a, bv[t]);
    }
  }
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      neon_store_vec(g, m0 + m, col0, v0, t, ncols, c[m][t]);
}

template <int R, int CV>
void bf16_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 2;
  const auto* A = static_cast<const std::uint16_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const uint32x4_t hi_mask = vdupq_n_u32(0xffff0000u);
  float32x4_t c[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      c[m][t] = vdupq_n_f32(0.0f);
  for (int k = 0; k < groups; ++k) {
    const auto* b = reinterpret_cast<const std::uint32_t*>(panel + static_cast<std::size_t>(k) * 256) + 4 * v0;
    for (int t = 0; t < CV; ++t) {
      const uint32x4_t v = vld1q_u32(b + 4 * t);
      const float32x4_t bh = vreinterpretq_f32_u32(vandq_u32(v, hi_mask));
      const float32x4_t bl = vreinterpretq_f32_u32(vshlq_n_u32(v, 16));
      for (int m = 0; m < R; ++m) {
        const auto pair = static_cast<std::uint32_t>(neon_load_u32(A + static_cast<std::size_t>(m) * g.lda + 2 * k));
        const float32x4_t ah = vreinterpretq_f32_u32(vdupq_n_u32(pair & 0xffff0000u));
        const float32x4_t al = vreinterpretq_f32_u32(vdupq_n_u32(pair << 16));
        c[m][t] = vfmaq_f32(c[m][t], ah, bh);  // odd element first
        c[m][t] = vfmaq_f32(c[m][t], al, bl);
      }
    }
  }
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      neon_store_vec(g, m0 + m, col0, v0, t, ncols, c[m][t]);
}

template <int R, int CV>
void int8_tile(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  // Pair sums: lanes (column 2j: k0+k1, k2+k3, column 2j+1: ...) per half of a column vector.
  int32x4_t lo[R][CV], hi[R][CV];
  for (int m = 0; m < R; ++m)
    for (int t = 0; t < CV; ++t)
      lo[m][t] = hi[m][t] = vdupq_n_s32(0);
  for (int k = 0; k < groups; ++k) {
    const auto* b = reinterpret_cast<const std::int8_t*>(panel + static_cast<std::size_t>(k) * 256) + 16 * v0;
    for (int m = 0; m < R; ++m) {
      const std::int32_t bits = neon_load_u32(A + static_cast<std::size_t>(m) * g.lda + 4 * k) ^ static_cast<std::int32_t>(0x80808080u);
      const int8x16_t s = vreinterpretq_s8_s32(vdupq_n_s32(bits));
      for (int t = 0; t < CV; ++t) {
        const int8x16_t w = vld1q_s8(b + 16 * t);
        lo[m][t] = vpadalq_s16(lo[m][t], vmull_s8(vget_low_s8(s), vget_low_s8(w)));
        hi[m][t] = vpadalq_s16(hi[m][t], vmull_high_s8(s, w));
      }
    }
  }
  for (int m = 0; m < R; ++m) {
    int32x4_t acc[CV];
    for (int t = 0; t < CV; ++t)
      acc[t] = vpaddq_s32(lo[m][t], hi[m][t]);
    neon_int8_out<CV>(g, m0 + m, col0, v0, ncols, acc, true);
  }
}

/// int4's exact sums on baseline NEON: umull / umull2 (u8 x nibble <= 3825 fits u16), uadalp
/// into u32 pair sums per half of a column vector, one pairwise add at the block's end.
struct umull_dot {
  struct acc {
    uint32x4_t lo, hi;
  };
  static acc zero() { return {vdupq_n_u32(0), vdupq_n_u32(0)}; }
  static void mac(acc& c, uint8x16_t a0, uint8x16_t a1, uint8x16_t lo, uint8x16_t hi) {
    c.lo = vpadalq_u16(c.lo, vmull_u8(vget_low_u8(a0), vget_low_u8(lo)));
    c.hi = vpadalq_u16(c.hi, vmull_high_u8(a0, lo));
    c.lo = vpadalq_u16(c.lo, vmull_u8(vget_low_u8(a1), vget_low_u8(hi)));
    c.hi = vpadalq_u16(c.hi, vmull_high_u8(a1, hi));
  }
  static int32x4_t sum(const acc& c) { return vreinterpretq_s32_u32(vpaddq_u32(c.lo, c.hi)); }
};

} // namespace

void neon_gemm_int4(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 8, 2>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    neon_int4_tile<decltype(r)::value, decltype(cv)::value, umull_dot>(g, panel, col0, v0, ncols, m0);
  });
}

void neon_gemm_f32(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 16, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    f32_tile<decltype(r)::value, decltype(cv)::value>(g, panel, col0, v0, ncols, m0);
  });
}

void neon_gemm_bf16(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 8, 4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    bf16_tile<decltype(r)::value, decltype(cv)::value>(g, panel, col0, v0, ncols, m0);
  });
}

void neon_gemm_int8(const gemm_panels& g, int p0, int p1) {
  neon_tiles<4, 8, 2>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    int8_tile<decltype(r)::value, decltype(cv)::value>(g, panel, col0, v0, ncols, m0);
  });
}

void neon_rows_to_bf16(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint16_t* out) {
  // f32_to_bf16_operand (half.hpp), 4 at a time: below 2^-56 a signed zero, else the rounding.
  const uint32x4_t round = vdupq_n_u32(0x7fff), one = vdupq_n_u32(1), quiet = vdupq_n_u32(0x40);
  const uint32x4_t abs_mask = vdupq_n_u32(0x7fffffff), inf = vdupq_n_u32(0x7f800000);
  const uint32x4_t floor = vdupq_n_u32(engine::bf16_operand_floor_bits), sign = vdupq_n_u32(0x80000000u);
  auto convert = [&](uint32x4_t u) {
    u = vbslq_u32(vcltq_u32(vandq_u32(u, abs_mask), floor), vandq_u32(u, sign), u);
    const uint32x4_t rounded = vaddq_u32(u, vaddq_u32(round, vandq_u32(vshrq_n_u32(u, 16), one)));
    const uint32x4_t nan = vcgtq_u32(vandq_u32(u, abs_mask), inf);
    const uint32x4_t r = vbslq_u32(nan, vorrq_u32(vshrq_n_u32(u, 16), quiet), vshrq_n_u32(rounded, 16));
    return vmovn_u32(r);
  };
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    int i = 0;
    for (; i + 4 <= k; i += 4)
      vst1_u16(o + i, convert(vreinterpretq_u32_f32(vld1q_f32(xr + i))));
    for (; i < k; ++i)
      o[i] = engine::f32_to_bf16_operand(xr[i]);
    for (int j = k; j < k_padded; ++j)
      o[j] = 0;
  }
}

void neon_rows_to_u8(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint8_t* out,
                     float* scale, std::int32_t* zero) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint8_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    float32x4_t mn = vdupq_n_f32(0.0f), mx = mn;
    int i = 0;
    for (; i + 4 <= k; i += 4) {
      const float32x4_t v = vld1q_f32(xr + i);
      mn = vminq_f32(mn, v);
      mx = vmaxq_f32(mx, v);
    }
    float lo = vminvq_f32(mn), hi = vmaxvq_f32(mx);
    for (int j = i; j < k; ++j) {
      lo = std::min(lo, xr[j]);
      hi = std::max(hi, xr[j]);
    }
    float inv;
    u8_params(lo, hi, scale[r], inv, zero[r]);
    const float32x4_t vinv = vdupq_n_f32(inv), vzero = vdupq_n_f32(static_cast<float>(zero[r]));
    const float32x4_t vlo = vdupq_n_f32(0.0f), vhi = vdupq_n_f32(255.0f);
    i = 0;
    for (; i + 8 <= k; i += 8) {
      // round(x * inv) (to nearest even), + zero, clamp: u8_of's arithmetic, 8 at a time.
      uint16x4_t h[2];
      for (int q = 0; q < 2; ++q) {
        const float32x4_t t = vrndnq_f32(vmulq_f32(vld1q_f32(xr + i + 4 * q), vinv));
        h[q] = vmovn_u32(vcvtq_u32_f32(vminq_f32(vmaxq_f32(vaddq_f32(t, vzero), vlo), vhi)));
      }
      vst1_u8(o + i, vmovn_u16(vcombine_u16(h[0], h[1])));
    }
    for (; i < k; ++i)
      o[i] = u8_of(xr[i], inv, zero[r]);
    for (int j = k; j < k_padded; ++j)
      o[j] = static_cast<std::uint8_t>(zero[r]);
  }
}

} // namespace lf::kernels::detail
