// The avx512 table's matrix products: f32, bf16 emulated with two FMAs per pair (for CPUs without
// avx512_bf16), and the conversion of activation rows (to bf16, to u8). Compiled with AVX-512
// flags; reached only through a table whose needs this CPU meets.
#include "worker/engine/kernels/x86/avx512_gemm_common.hpp"
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/common/quant_params.hpp"

namespace lf::kernels::detail {

namespace {

template <int R>
void f32_tile(const gemm_panels& g, const std::byte* panel, int col0, int ncols, int m0) {
  const int K = g.w->k();
  const float* A = static_cast<const float*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
  const float* B = reinterpret_cast<const float*>(panel);
  LF_TILE_DECLARE(__m512, _mm512_setzero_ps());
  for (int k = 0; k < K; ++k) {
    const float* b = B + static_cast<std::size_t>(k) * panel_cols;
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), b2 = _mm512_load_ps(b + 32),
                 b3 = _mm512_load_ps(b + 48);
#define LF_ROW(m)                                                                                  \
  if constexpr (R > m) {                                                                           \
    const __m512 a = _mm512_set1_ps(A[static_cast<std::size_t>(m) * g.lda + k]);                   \
    c##m##0 = _mm512_fmadd_ps(a, b0, c##m##0);                                                     \
    c##m##1 = _mm512_fmadd_ps(a, b1, c##m##1);                                                     \
    c##m##2 = _mm512_fmadd_ps(a, b2, c##m##2);                                                     \
    c##m##3 = _mm512_fmadd_ps(a, b3, c##m##3);                                                     \
  }
    LF_TILE_FOR_ROWS(LF_ROW)
#undef LF_ROW
  }
  LF_TILE_FOR_ROWS(LF_TILE_STORE_F32)
}

} // namespace

void avx512_gemm_f32(const gemm_panels& g, int p0, int p1) {
  for_each_tile<6>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    f32_tile<decltype(rows)::value>(g, panel, col0, ncols, m0);
  });
}

void avx512_gemm_bf16(const gemm_panels& g, int p0, int p1) {
  const int groups = g.w->k_padded() / 2;
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for_each_tile<4>(g, p0, p1, [&](auto rows, const std::byte* panel, int col0, int ncols, int m0) {
    constexpr int R = decltype(rows)::value;
    const auto* A = static_cast<const std::uint16_t*>(g.a) + static_cast<std::size_t>(m0) * g.lda;
    __m512 c[R][4];
    for (int m = 0; m < R; ++m)
      for (int t = 0; t < 4; ++t)
        c[m][t] = _mm512_setzero_ps();
    for (int k = 0; k < groups; ++k) {
      const std::byte* b = panel + static_cast<std::size_t>(k) * 256;
      __m512 bh[4], bl[4];
      for (int t = 0; t < 4; ++t) {
        const __m512i v = _mm512_load_si512(b + 64 * t);
        bh[t] = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
        bl[t] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      }
#pragma GCC unroll 4
      for (int m = 0; m < R; ++m) {
        const int pair = load_u32(A + static_cast<std::size_t>(m) * g.lda + 2 * k);
        const __m512 ah = _mm512_castsi512_ps(_mm512_set1_epi32(pair & static_cast<int>(0xffff0000u)));
        const __m512 al = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(static_cast<unsigned>(pair) << 16)));
        for (int t = 0; t < 4; ++t) {
          c[m][t] = _mm512_fmadd_ps(ah, bh[t], c[m][t]);  // odd element first, as vdpbf16ps
          c[m][t] = _mm512_fmadd_ps(al, bl[t], c[m][t]);
        }
      }
    }
    for (int m = 0; m < R; ++m)
      store_out(g, m0 + m, col0, ncols, c[m]);
  });
}

void avx512_rows_to_bf16(const float* x, std::size_t ldx, int rows, int k, int k_padded,
                              std::uint16_t* out) {
  // f32_to_bf16_operand (half.hpp), 16 at a time: below 2^-56 a signed zero; else u + 0x7fff +
  // ((u >> 16) & 1), then the high half; a NaN keeps its high half with the quiet bit set.
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i floor = _mm512_set1_epi32(static_cast<int>(engine::bf16_operand_floor_bits));
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  auto convert = [&](__m512i u) {
    const __mmask16 tiny = _mm512_cmplt_epu32_mask(_mm512_and_si512(u, abs_mask), floor);
    u = _mm512_mask_and_epi32(u, tiny, u, sign);
    const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(round, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i r = _mm512_mask_or_epi32(_mm512_srli_epi32(rounded, 16), nan, _mm512_srli_epi32(u, 16), quiet);
    return _mm512_cvtepi32_epi16(r);
  };
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint16_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    int i = 0;
    for (; i + 16 <= k; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), convert(_mm512_castps_si512(_mm512_loadu_ps(xr + i))));
    if (i < k) {
      const __mmask16 mk = static_cast<__mmask16>((1u << (k - i)) - 1);
      _mm256_mask_storeu_epi16(o + i, mk, convert(_mm512_castps_si512(_mm512_maskz_loadu_ps(mk, xr + i))));
    }
    for (int j = k; j < k_padded; ++j)
      o[j] = 0;
  }
}

void avx512_rows_to_u8(const float* x, std::size_t ldx, int rows, int k, int k_padded,
                          std::uint8_t* out, float* scale, std::int32_t* zero) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * ldx;
    std::uint8_t* o = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(k_padded);
    __m512 mn = _mm512_setzero_ps(), mx = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m512 v = _mm512_loadu_ps(xr + i);
      mn = _mm512_min_ps(mn, v);
      mx = _mm512_max_ps(mx, v);
    }
    if (i < k) {
      const __mmask16 mk = static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m512 v = _mm512_maskz_loadu_ps(mk, xr + i);  // zeros elsewhere: the range has 0 anyway
      mn = _mm512_min_ps(mn, v);
      mx = _mm512_max_ps(mx, v);
    }
    float inv;
    u8_params(_mm512_reduce_min_ps(mn), _mm512_reduce_max_ps(mx), scale[r], inv, zero[r]);
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512 vzero = _mm512_set1_ps(static_cast<float>(zero[r]));
    const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
    auto convert = [&](__m512 v) {
      // round(x * inv) (to nearest even), + zero, clamp: u8_of's arithmetic, 16 at a time.
      const __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, vzero), lo), hi));
    };
    i = 0;
    for (; i + 16 <= k; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm512_cvtepi32_epi8(convert(_mm512_loadu_ps(xr + i))));
    if (i < k) {
      const __mmask16 mk = static_cast<__mmask16>((1u << (k - i)) - 1);
      _mm_mask_storeu_epi8(o + i, mk, _mm512_cvtepi32_epi8(convert(_mm512_maskz_loadu_ps(mk, xr + i))));
    }
    for (int j = k; j < k_padded; ++j)
      o[j] = static_cast<std::uint8_t>(zero[r]);
  }
}

} // namespace lf::kernels::detail
