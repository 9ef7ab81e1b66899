// The AVX-512 attention kernel for head_dim 16, 32, 48 or 64 (every GPT-2 size has 64); other
// head sizes use the portable kernel. Up to four queries of a sequence and head share each K and V
// load; each query's arithmetic is the same as when it is computed alone.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/head_dim.hpp"

namespace lf::kernels::detail {

namespace {

/// 16 elements (masked) of a K or V array of type T, as floats.
template <kv_type T>
inline __m512 load16(const std::byte* base, std::size_t i, __mmask16 m) {
  if constexpr (T == kv_type::f32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(base) + i);
  } else if constexpr (T == kv_type::bf16) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const std::uint16_t*>(base) + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    const __m128i b = _mm_maskz_loadu_epi8(m, reinterpret_cast<const std::int8_t*>(base) + i);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
  }
}

inline __mmask16 lanes(int n) { return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// Named vector variables (GCC 12 keeps arrays of vectors updated in a loop in memory):
// X(j, t) for queries j < 4 and column vectors / chains t < 4.
#define LF_QT(X)                                                                                   \
  X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3) X(2, 0) X(2, 1) X(2, 2) X(2, 3) \
    X(3, 0) X(3, 1) X(3, 2) X(3, 3)

template <kv_type T, int Q, int DV>
void attend_group(const attn_group& g) {
  const auto& kv = *g.kv;
  constexpr int D = 16 * DV;
  const int BS = kv.block_size;
  const float qscale = 1.0f / std::sqrt(static_cast<float>(D));
  const int len_max = g.pos0 + Q;
  const int nblocks = (len_max + BS - 1) / BS;
  // A 16-lane score store starts anywhere in the last block: room for all its lanes.
  const int ld = (nblocks * BS + 15) / 16 * 16 + 16;
  thread_local std::vector<float> qbuf, sbuf;
  qbuf.resize(static_cast<std::size_t>(Q) * D);
  sbuf.resize(static_cast<std::size_t>(Q) * ld);
  for (int j = 0; j < Q; ++j)
    for (int d = 0; d < D; ++d)
      qbuf[static_cast<std::size_t>(j) * D + d] = g.q[j][d] * qscale;
  const float* qp = qbuf.data();
  float* sp = sbuf.data();

  // Scores: per block, per 16 slots, four chains over the dims (d mod 4), summed (c0+c1)+(c2+c3).
  const std::size_t head_bytes = kv.head_bytes();
  for (int bi = 0; bi < nblocks; ++bi) {
    const std::size_t bh = static_cast<std::size_t>(g.table[bi]) * kv.heads + g.head;
    const std::byte* kb = kv.k + bh * head_bytes;
    // Blocks lie anywhere in the pool: ask for the next block's keys while this one is scored.
    if (bi + 1 < nblocks) {
      const std::byte* next = kv.k + (static_cast<std::size_t>(g.table[bi + 1]) * kv.heads + g.head) * head_bytes;
      for (std::size_t off = 0; off < head_bytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next + off), _MM_HINT_T0);
    }
    for (int c = 0; c * 16 < BS; ++c) {
      const int lane0 = bi * BS + 16 * c;
      if (lane0 >= len_max)
        break;
      const __mmask16 m = lanes(BS - 16 * c);
#define LF_DECL(j, t) __m512 a##j##t = _mm512_setzero_ps();
      LF_QT(LF_DECL)
#undef LF_DECL
      for (int d = 0; d < D; d += 4) {
        const __m512 k0 = load16<T>(kb, static_cast<std::size_t>(d) * BS + 16 * c, m);
        const __m512 k1 = load16<T>(kb, static_cast<std::size_t>(d + 1) * BS + 16 * c, m);
        const __m512 k2 = load16<T>(kb, static_cast<std::size_t>(d + 2) * BS + 16 * c, m);
        const __m512 k3 = load16<T>(kb, static_cast<std::size_t>(d + 3) * BS + 16 * c, m);
#define LF_FMA(j, t)                                                                               \
  if constexpr (Q > j)                                                                             \
    a##j##t = _mm512_fmadd_ps(_mm512_set1_ps(qp[j * D + d + t]), k##t, a##j##t);
        LF_QT(LF_FMA)
#undef LF_FMA
      }
      __m512 ks = _mm512_set1_ps(1.0f);
      if constexpr (T == kv_type::int8)
        ks = _mm512_maskz_loadu_ps(m, kv.k_scale + bh * static_cast<std::size_t>(BS) + 16 * c);
#define LF_SCORE(j)                                                                                \
  if constexpr (Q > j) {                                                                           \
    __m512 s = _mm512_add_ps(_mm512_add_ps(a##j##0, a##j##1), _mm512_add_ps(a##j##2, a##j##3));     \
    if constexpr (T == kv_type::int8)                                                              \
      s = _mm512_mul_ps(s, ks);                                                                    \
    _mm512_mask_storeu_ps(sp + static_cast<std::size_t>(j) * ld + lane0, m, s);                    \
  }
      LF_SCORE(0) LF_SCORE(1) LF_SCORE(2) LF_SCORE(3)
#undef LF_SCORE
    }
  }

  // Softmax per query over its own length (the canonical one); the weights stay in sbuf.
  float inv_sum[4] = {};
  for (int j = 0; j < Q; ++j)
    inv_sum[j] = 1.0f / canonical_rows::softmax_in_place(sp + static_cast<std::size_t>(j) * ld, g.pos0 + j + 1);

  // Weighted values, token by token in order.
#define LF_DECL(j, t) __m512 o##j##t = _mm512_setzero_ps();
  LF_QT(LF_DECL)
#undef LF_DECL
  for (int tok = 0; tok < len_max; ++tok) {
    const std::size_t bh = static_cast<std::size_t>(g.table[tok / BS]) * kv.heads + g.head;
    const int slot = tok % BS;
    const std::byte* vb = kv.v + bh * head_bytes;
    // At a block's first token, ask for the next block's values.
    if (slot == 0 && tok / BS + 1 < nblocks) {
      const std::byte* next = kv.v + (static_cast<std::size_t>(g.table[tok / BS + 1]) * kv.heads + g.head) * head_bytes;
      for (std::size_t off = 0; off < head_bytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next + off), _MM_HINT_T0);
    }
    const std::size_t row = static_cast<std::size_t>(slot) * D;
    __m512 v0 = _mm512_setzero_ps(), v1 = v0, v2 = v0, v3 = v0;
    v0 = load16<T>(vb, row, 0xffff);
    if constexpr (DV > 1) v1 = load16<T>(vb, row + 16, 0xffff);
    if constexpr (DV > 2) v2 = load16<T>(vb, row + 32, 0xffff);
    if constexpr (DV > 3) v3 = load16<T>(vb, row + 48, 0xffff);
    float vs = 1.0f;
    if constexpr (T == kv_type::int8)
      vs = kv.v_scale[bh * BS + slot];
#define LF_ACC(j, t)                                                                               \
  if constexpr (Q > j && DV > t) {                                                                 \
    if (tok <= g.pos0 + j) {                                                                       \
      float w = sp[static_cast<std::size_t>(j) * ld + tok];                                        \
      if constexpr (T == kv_type::int8)                                                            \
        w *= vs;                                                                                   \
      o##j##t = _mm512_fmadd_ps(_mm512_set1_ps(w), v##t, o##j##t);                                 \
    }                                                                                              \
  }
    LF_QT(LF_ACC)
#undef LF_ACC
  }
#define LF_OUT(j, t)                                                                               \
  if constexpr (Q > j && DV > t)                                                                   \
    _mm512_storeu_ps(g.out[j] + 16 * t, _mm512_mul_ps(o##j##t, _mm512_set1_ps(inv_sum[j])));
  LF_QT(LF_OUT)
#undef LF_OUT
}

template <kv_type T, int DV>
void by_queries(const attn_group& g) {
  switch (g.nq) {
    case 1: attend_group<T, 1, DV>(g); break;
    case 2: attend_group<T, 2, DV>(g); break;
    case 3: attend_group<T, 3, DV>(g); break;
    default: attend_group<T, 4, DV>(g); break;
  }
}

template <kv_type T>
void by_head_dim(const attn_group& g) {
  if (!with_head_vectors<16, 4>(g.kv->head_dim, [&](auto dv) { by_queries<T, decltype(dv)::value>(g); }))
    portable_attend(g);
}

} // namespace

void avx512_attend(const attn_group& g) {
  switch (g.kv->type) {
    case kv_type::f32: by_head_dim<kv_type::f32>(g); break;
    case kv_type::bf16: by_head_dim<kv_type::bf16>(g); break;
    case kv_type::int8: by_head_dim<kv_type::int8>(g); break;
  }
}

} // namespace lf::kernels::detail
