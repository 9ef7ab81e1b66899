// The avx2 table's matrix products (AVX2 + FMA, hand-written register tiles) and its activation
// conversions.
//
//   f32:  one FMA per row and column vector per k, k in order.
//   bf16: a pair of bf16 widened to two f32 vectors (shift / mask), two FMAs per pair, the odd
//         element first (the order of vdpbf16ps and of the avx512 emulation): in registers for
//         one row (memory-bound), from a panel widened once per thread for more (bf16_widened).
//   int8: u8 x s8 without VNNI. vpmaddubsw sums two u8 x s8 products into a saturating int16,
//         which a = 255 and w = 127 overflow. So the activation is shifted to a' = a - 128
//         (signed, -128..127; avx2_int8_shift_rows writes a' and |a'| once per product), its
//         magnitude |a'| <= 128 is the unsigned operand and its sign moves onto the weight
//         (vpsignb): |a'| * sign(a') w = a' w, and a pair sums to at most
//         2 * 128 * 127 = 32512 < 32767: exact. vpmaddwd with ones widens pairs to int32. The
//         output stage adds back 128 * colsum (avx2_int8_out), so the integers equal every
//         other table's bit for bit.
//   int4: avx2_int4_tile (avx2_gemm_common.hpp) with vpmaddubsw on the activation's u8 and the
//         nibbles (0..15) as they are: no shift needed.
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/common/quant_params.hpp"
#include "worker/engine/kernels/x86/avx2_gemm_common.hpp"
#include "worker/engine/kernels/x86/avx2_math.hpp"

namespace lf::kernels::detail {

namespace {

/// R rows x 16 columns of an f32 panel over k in [0, K), K given (bf16_widened runs it over a
/// widened panel of 2 x groups rows).
template <int R>
__attribute__((noinline)) void f32_slice(const gemm_panels& g, const std::byte* panel, int K, int col0, int v0,
                                         int ncols, int m0) {
  LF_ROW_POINTERS(float, static_cast<const float*>(g.a) + static_cast<std::size_t>(m0) * g.lda);
  const float* b = reinterpret_cast<const float*>(panel) + 8 * v0;
  LF_SLICE_DECLARE(__m256, _mm256_setzero_ps());
  for (int k = 0; k < K; ++k, b += panel_cols) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m256 a = _mm256_broadcast_ss(r##m + k);                                                \
    c##m##0 = _mm256_fmadd_ps(a, b0, c##m##0);                                                     \
    c##m##1 = _mm256_fmadd_ps(a, b1, c##m##1);                                                     \
  }
    LF_ROWS(LF_ROW)
#undef LF_ROW
  }
#define LF_OUT(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    avx2_store_vec(g, m0 + m, col0, v0, 0, ncols, c##m##0);                                        \
    avx2_store_vec(g, m0 + m, col0, v0, 1, ncols, c##m##1);                                        \
  }
  LF_ROWS(LF_OUT)
#undef LF_OUT
}

__attribute__((noinline)) void f32_wide(const gemm_panels& g, const std::byte* panel, int col0, int ncols) {
  const int K = g.w->k();
  const float* A = static_cast<const float*>(g.a);
  const float* B = reinterpret_cast<const float*>(panel);
  LF_WIDE_DECLARE(__m256, _mm256_setzero_ps());
  for (int k = 0; k < K; ++k) {
    const float* b = B + static_cast<std::size_t>(k) * panel_cols;
    const __m256 a = _mm256_broadcast_ss(A + k);
#define LF_COL(t) d##t = _mm256_fmadd_ps(a, _mm256_load_ps(b + 8 * t), d##t);
    LF_WIDE(LF_COL)
#undef LF_COL
  }
#define LF_OUT(t) avx2_store_vec(g, 0, col0, 0, t, ncols, d##t);
  LF_WIDE(LF_OUT)
#undef LF_OUT
}

__attribute__((noinline)) void bf16_wide(const gemm_panels& g, const std::byte* panel, int col0, int ncols) {
  const int groups = g.w->k_padded() / 2;
  const auto* A = static_cast<const std::uint16_t*>(g.a);
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  LF_WIDE_DECLARE(__m256, _mm256_setzero_ps());
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
    const __m256i pair = _mm256_set1_epi32(avx2_load_u32(A + 2 * k));
    const __m256 ah = _mm256_castsi256_ps(_mm256_and_si256(pair, hi_mask));
    const __m256 al = _mm256_castsi256_ps(_mm256_slli_epi32(pair, 16));
#define LF_COL(t)                                                                                  \
  {                                                                                                \
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * t));             \
    d##t = _mm256_fmadd_ps(ah, _mm256_castsi256_ps(_mm256_and_si256(w, hi_mask)), d##t);           \
    d##t = _mm256_fmadd_ps(al, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)), d##t);               \
  }
    LF_WIDE(LF_COL)
#undef LF_COL
  }
#define LF_OUT(t) avx2_store_vec(g, 0, col0, 0, t, ncols, d##t);
  LF_WIDE(LF_OUT)
#undef LF_OUT
}

/// One row's 32 products with one weight vector: |a'| * (sign(a') w), pairs to int32.
inline __m256i int8_step(__m256i u, __m256i s, __m256i w, __m256i ones) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_sign_epi8(w, s)), ones);
}

template <int R>
__attribute__((noinline)) void int8_slice(const gemm_panels& g, const std::byte* panel, int col0, int v0, int ncols, int m0) {
  const int groups = g.w->k_padded() / 4;
  LF_ROW_POINTERS(std::uint8_t, static_cast<const std::uint8_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda);
  // |a'| rows lie at the same offsets from a_abs as a' rows from a.
  const std::ptrdiff_t to_abs = g.a_abs - static_cast<const std::uint8_t*>(g.a);
  const __m256i ones = _mm256_set1_epi16(1);
  LF_SLICE_DECLARE(__m256i, _mm256_setzero_si256());
  const std::byte* b = panel + 32 * v0;
  for (int k = 0; k < groups; ++k, b += 256) {
    const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
    // a' = a - 128 as int8 and |a'| as uint8 (|-128| = 128 fits), both prepared by int8_shift_rows.
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m256i s = _mm256_set1_epi32(avx2_load_u32(r##m + 4 * k));                              \
    const __m256i u = _mm256_set1_epi32(avx2_load_u32(r##m + to_abs + 4 * k));                     \
    c##m##0 = _mm256_add_epi32(c##m##0, int8_step(u, s, w0, ones));                                \
    c##m##1 = _mm256_add_epi32(c##m##1, int8_step(u, s, w1, ones));                                \
  }
    LF_ROWS(LF_ROW)
#undef LF_ROW
  }
  LF_INT8_SLICE_OUT(true)
}

__attribute__((noinline)) void int8_wide(const gemm_panels& g, const std::byte* panel, int col0, int ncols) {
  const int groups = g.w->k_padded() / 4;
  const auto* A = static_cast<const std::uint8_t*>(g.a);
  const std::uint8_t* U = g.a_abs;
  const __m256i ones = _mm256_set1_epi16(1);
  LF_WIDE_DECLARE(__m256i, _mm256_setzero_si256());
  for (int k = 0; k < groups; ++k) {
    const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
    const __m256i s = _mm256_set1_epi32(avx2_load_u32(A + 4 * k));
    const __m256i u = _mm256_set1_epi32(avx2_load_u32(U + 4 * k));
#define LF_COL(t)                                                                                  \
  d##t = _mm256_add_epi32(d##t, int8_step(u, s, _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32 * t)), ones));
    LF_WIDE(LF_COL)
#undef LF_COL
  }
  const __m256i acc[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
  avx2_int8_out<8>(g, 0, col0, 0, ncols, acc, true);
}

/// int4's four u8 x nibble products per lane: vpmaddubsw (a pair sums to at most 2 * 255 * 15 =
/// 7650: no saturation, no sign trick) and vpmaddwd with ones.
struct maddubs_dot {
  static __m256i mac(__m256i c, __m256i a, __m256i w) {
    return _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), _mm256_set1_epi16(1)));
  }
};

/// A per-thread buffer of at least `floats` 64-byte aligned floats.
float* thread_floats(aligned_buffer& buf, std::size_t floats) {
  if (buf.size() < floats * sizeof(float))
    buf = aligned_buffer(floats * sizeof(float) * 5 / 4);
  return reinterpret_cast<float*>(buf.data());
}

/// bf16 with more than one row (prefill, batches): each panel is widened once, in a per-thread
/// buffer, to an f32 panel of 2 x groups rows (per pair the odd element's row, then the even's),
/// and the activations to f32 rows in the same order; then the f32 tiles run over them. That is
/// the same two FMAs per pair, in the same order, as bf16_wide, so a row's result does not
/// depend on M.
void bf16_widened(const gemm_panels& g, int p0, int p1) {
  thread_local aligned_buffer panel_buf, act_buf;
  const int KP = g.w->k_padded(), groups = KP / 2;
  float* pw = thread_floats(panel_buf, static_cast<std::size_t>(KP) * panel_cols);
  const std::size_t ldaf = static_cast<std::size_t>(KP);
  float* af = thread_floats(act_buf, static_cast<std::size_t>(g.m) * ldaf);
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int m = 0; m < g.m; ++m) {
    const auto* a = static_cast<const std::uint16_t*>(g.a) + static_cast<std::size_t>(m) * g.lda;
    float* o = af + static_cast<std::size_t>(m) * ldaf;
    int k = 0;
    for (; k + 8 <= KP; k += 8) {  // 4 pairs: (even, odd) in each 32-bit lane -> odd, even
      const __m256i v = _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)));
      const __m256i odd = _mm256_and_si256(v, hi_mask), even = _mm256_slli_epi64(_mm256_slli_epi32(v, 16), 32);
      _mm256_storeu_ps(o + k, _mm256_castsi256_ps(_mm256_or_si256(odd, even)));
    }
    for (; k < KP; k += 2) {
      o[k] = engine::bf16_to_f32(a[k + 1]);
      o[k + 1] = engine::bf16_to_f32(a[k]);
    }
  }
  gemm_panels gw = g;
  gw.a = af;
  gw.lda = ldaf;
  for (int p = p0; p < p1; ++p) {
    const int col0 = p * panel_cols;
    const int ncols = std::min(panel_cols, g.w->n() - col0);
    const int nvec = (ncols + 7) / 8;
    const std::byte* panel = g.w->panel(p);
    for (int k = 0; k < groups; ++k)
      for (int t = 0; t < 8; ++t) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + static_cast<std::size_t>(k) * 256 + 32 * t));
        _mm256_store_ps(pw + static_cast<std::size_t>(2 * k) * panel_cols + 8 * t, _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask)));
        _mm256_store_ps(pw + static_cast<std::size_t>(2 * k + 1) * panel_cols + 8 * t, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
      }
    const auto* wide = reinterpret_cast<const std::byte*>(pw);
    int m0 = 0;
    for (; m0 + 6 <= g.m; m0 += 6)
      for (int v0 = 0; v0 < nvec; v0 += 2)
        f32_slice<6>(gw, wide, KP, col0, v0, ncols, m0);
    for (int v0 = 0; v0 < nvec; v0 += 2)
      switch (g.m - m0) {
        case 1: f32_slice<1>(gw, wide, KP, col0, v0, ncols, m0); break;
        case 2: f32_slice<2>(gw, wide, KP, col0, v0, ncols, m0); break;
        case 3: f32_slice<3>(gw, wide, KP, col0, v0, ncols, m0); break;
        case 4: f32_slice<4>(gw, wide, KP, col0, v0, ncols, m0); break;
        case 5: f32_slice<5>(gw, wide, KP, col0, v0, ncols, m0); break;
        default: break;
      }
  }
}

#undef LF_SLICE_DECLARE
#undef LF_WIDE_DECLARE
#undef LF_ROW_POINTERS

} // namespace

void avx2_gemm_f32(const gemm_panels& g, int p0, int p1) {
  avx2_tiles<6>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    if constexpr (decltype(cv)::value == 8)
      f32_wide(g, panel, col0, ncols);
    else
      f32_slice<decltype(r)::value>(g, panel, g.w->k(), col0, v0, ncols, m0);
  });
}

void avx2_gemm_bf16(const gemm_panels& g, int p0, int p1) {
  if (g.m > 1) {
    bf16_widened(g, p0, p1);
    return;
  }
  for (int p = p0; p < p1; ++p)
    bf16_wide(g, g.w->panel(p), p * panel_cols, std::min(panel_cols, g.w->n() - p * panel_cols));
}

void avx2_gemm_int8(const gemm_panels& g, int p0, int p1) {
  avx2_tiles<4>(g, p0, p1, [&](auto r, auto cv, const std::byte* panel, int col0, int v0, int ncols, int m0) {
    if constexpr (decltype(cv)::value == 8)
      int8_wide(g, panel, col0, ncols);
    else
      int8_slice<decltype(r)::value>(g, panel, col0, v0, ncols, m0);
  });
}

void avx2_gemm_int4(const gemm_panels& g, int p0, int p1) { avx2_gemm_int4_with<3, maddubs_dot>(g, p0, p1); }

void avx2_int8_shift_rows(std::uint8_t* a, std::size_t n, std::uint8_t* abs_out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i s = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)), flip);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + i), s);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(abs_out + i), _mm256_abs_epi8(s));
  }
  for (; i < n; ++i) {
    const auto s = static_cast<std::int8_t>(a[i] ^ 0x80u);
    a[i] = static_cast<std::uint8_t>(s);
    abs_out[i] = static_cast<std::uint8_t>(s < 0 ? -s : s);
  }
}

void avx2_rows_to_bf16(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint16_t* out) {
  // f32_to_bf16_operand (half.hpp), 8 at a time: below 2^-56 a signed zero; else u + 0x7fff +
  // ((u >> 16) & 1), then the high half; a NaN keeps its high half with the quiet bit set.
  const __m256i round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i floor = _mm256_set1_epi32(static_cast<int>(engine::bf16_operand_floor_bits));
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  auto convert = [&](__m256i u) {
    const __m256i tiny = _mm256_cmpgt_epi32(floor, _mm256_and_si256(u, abs_mask));  // both < 2^31
    u = _mm256_blendv_epi8(u, _mm256_and_si256(u, sign), tiny);
    const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    const __m256i r = _mm256_blendv_epi8(_mm256_srli_epi32(rounded, 16), quiet_nan, nan);
    // 8 x u32 (each < 2^16) to 8 x u16: pack within lanes, then gather the two lanes' halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    return _mm256_castsi256_si128(packed);
  };
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    int i = 0;
    for (; i + 8 <= k; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), convert(_mm256_castps_si256(_mm256_loadu_ps(xr + i))));
    if (i < k) {
      alignas(32) float tail[8] = {};
      alignas(16) std::uint16_t res[8];
      for (int j = i; j < k; ++j)
        tail[j - i] = xr[j];
      _mm_store_si128(reinterpret_cast<__m128i*>(res), convert(_mm256_castps_si256(_mm256_load_ps(tail))));
      for (int j = i; j < k; ++j)
        o[j] = res[j - i];
    }
    for (int j = k; j < k_padded; ++j)
      o[j] = 0;
  }
}

void avx2_rows_to_u8(const float* x, std::size_t ldx, int rows, int k, int k_padded, std::uint8_t* out,
                     float* scale, std::int32_t* zero) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint8_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    __m256 mn = _mm256_setzero_ps(), mx = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= k; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      mn = _mm256_min_ps(mn, v);
      mx = _mm256_max_ps(mx, v);
    }
    float lo = avx2_hmin(mn), hi = avx2_hmax(mx);
    for (int j = i; j < k; ++j) {
      lo = std::min(lo, xr[j]);
      hi = std::max(hi, xr[j]);
    }
    float inv;
    u8_params(lo, hi, scale[r], inv, zero[r]);
    const __m256 vinv = _mm256_set1_ps(inv);
    const __m256 vzero = _mm256_set1_ps(static_cast<float>(zero[r]));
    const __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_set1_ps(255.0f);
    i = 0;
    for (; i + 16 <= k; i += 16) {
      // round(x * inv) (to nearest even), + zero, clamp: u8_of's arithmetic, 16 at a time.
      __m256i q[2];
      for (int h = 0; h < 2; ++h) {
        const __m256 t = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i + 8 * h), vinv),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[h] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(t, vzero), vlo), vhi));
      }
      const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(q[0], q[1]), 0xd8);
      const __m128i b8 = _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), b8);
    }
    for (; i < k; ++i)
      o[i] = u8_of(xr[i], inv, zero[r]);
    for (int j = k; j < k_padded; ++j)
      o[j] = static_cast<std::uint8_t>(zero[r]);
  }
}

} // namespace lf::kernels::detail
