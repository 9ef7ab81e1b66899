// The AVX2 tables' attention kernel for head sizes that are multiples of 8 up to 64 (every GPT-2
// size has 64) and block sizes that are multiples of 8; other shapes use the portable kernel.
// One query at a time (16 registers hold one query's 8 output vectors, not four queries'); the
// group's queries re-read their keys and values from cache. A query's arithmetic is the same
// whether it is computed alone (decode) or in a group (prefill). bf16 K/V in 16-slot blocks reads
// 16 elements a load and widens them as pairs (attend_one_pairs), with the same chains.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/head_dim.hpp"

namespace lf::kernels::detail {

namespace {

/// 8 consecutive elements of a K or V array of type T, as floats.
template <kv_type T>
inline __m256 load8(const std::byte* base, std::size_t i) {
  if constexpr (T == kv_type::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(base) + i);
  } else if constexpr (T == kv_type::bf16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const std::uint16_t*>(base) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(reinterpret_cast<const std::int8_t*>(base) + i));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  }
}

inline void prefetch_head(const std::byte* p, std::size_t bytes) {
  for (std::size_t off = 0; off < bytes; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

/// Query j of a group, set up: its length and blocks, its row scaled by 1 / sqrt(D) into q, and
/// this thread's score buffer with `pad` lanes of room past its last block.
struct query_setup {
  int len, nblocks;
  float* scores;
};
template <int D>
query_setup set_up_query(const attn_group& g, int j, float* q, int pad) {
  const int BS = g.kv->block_size;
  query_setup s{};
  s.len = g.pos0 + j + 1;
  s.nblocks = (s.len + BS - 1) / BS;
  thread_local std::vector<float> sbuf;
  sbuf.resize(static_cast<std::size_t>(s.nblocks) * BS + static_cast<std::size_t>(pad));
  s.scores = sbuf.data();
  const float qscale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int d = 0; d < D; ++d)
    q[d] = g.q[j][d] * qscale;
  return s;
}

/// Query j of the group: its scores, softmax and weighted values.
template <kv_type T, int DV>
void attend_one(const attn_group& g, int j) {
  const auto& kv = *g.kv;
  constexpr int D = 8 * DV;
  const int BS = kv.block_size;
  alignas(32) float q[D];
  const auto [len, nblocks, sp] = set_up_query<D>(g, j, q, 8);
  const std::size_t head_bytes = kv.head_bytes();

  // Scores: per block, per 8 slots, four chains over the dims (d mod 4), summed (c0+c1)+(c2+c3).
  for (int bi = 0; bi < nblocks; ++bi) {
    const std::size_t bh = static_cast<std::size_t>(g.table[bi]) * kv.heads + g.head;
    const std::byte* kb = kv.k + bh * head_bytes;
    if (bi + 1 < nblocks)
      prefetch_head(kv.k + (static_cast<std::size_t>(g.table[bi + 1]) * kv.heads + g.head) * head_bytes, head_bytes);
    for (int c = 0; c < BS; c += 8) {
      const int lane0 = bi * BS + c;
      if (lane0 >= len)
        break;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int d = 0; d < D; d += 4) {
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(q[d]), load8<T>(kb, static_cast<std::size_t>(d) * BS + c), a0);
        a1 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 1]), load8<T>(kb, static_cast<std::size_t>(d + 1) * BS + c), a1);
        a2 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 2]), load8<T>(kb, static_cast<std::size_t>(d + 2) * BS + c), a2);
        a3 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 3]), load8<T>(kb, static_cast<std::size_t>(d + 3) * BS + c), a3);
      }
      __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
      if constexpr (T == kv_type::int8)
        s = _mm256_mul_ps(s, _mm256_loadu_ps(kv.k_scale + bh * static_cast<std::size_t>(BS) + c));
      _mm256_storeu_ps(sp + lane0, s);
    }
  }

  // Softmax over [0, len) (the canonical one).
  const float inv_sum = 1.0f / canonical_rows::softmax_in_place(sp, len);

  // Weighted values, token by token in order.
  __m256 o[DV];
  for (int t = 0; t < DV; ++t)
    o[t] = _mm256_setzero_ps();
  for (int tok = 0; tok < len; ++tok) {
    const std::size_t bh = static_cast<std::size_t>(g.table[tok / BS]) * kv.heads + g.head;
    const int slot = tok % BS;
    if (slot == 0 && tok / BS + 1 < nblocks)
      prefetch_head(kv.v + (static_cast<std::size_t>(g.table[tok / BS + 1]) * kv.heads + g.head) * head_bytes, head_bytes);
    const std::byte* vb = kv.v + bh * head_bytes;
    float w = sp[tok];
    if constexpr (T == kv_type::int8)
      w *= kv.v_scale[bh * BS + slot];
    const __m256 vw = _mm256_set1_ps(w);
    const std::size_t row = static_cast<std::size_t>(slot) * D;
#pragma GCC unroll 8
    for (int t = 0; t < DV; ++t)
      o[t] = _mm256_fmadd_ps(vw, load8<T>(vb, row + 8 * t), o[t]);
  }
  const __m256 vinv = _mm256_set1_ps(inv_sum);
#pragma GCC unroll 8
  for (int t = 0; t < DV; ++t)
    _mm256_storeu_ps(g.out[j] + 8 * t, _mm256_mul_ps(o[t], vinv));
}

/// Two f32 vectors (lane i: element 2i, then 2i + 1 of 16) in element order: elements 0..7
/// into `first`, 8..15 into `second`.
inline void interleave_pairs(__m256 even, __m256 odd, __m256& first, __m256& second) {
  const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
  first = _mm256_permute2f128_ps(lo, hi, 0x20);
  second = _mm256_permute2f128_ps(lo, hi, 0x31);
}

/// attend_one for bf16 K/V with 16-slot blocks and head sizes of 16 dims a vector pair: 16 bf16
/// a load, widened as pairs (low half: shift, high half: mask) into even and odd elements. Each
/// score slot and output dim has the chain attend_one gives it (the same FMAs in the same order),
/// so the bits are the same; it saves the per-8 widening (vpmovzxwd) and half the shifts.
template <int DV>
void attend_one_pairs(const attn_group& g, int j) {
  static_assert(DV % 2 == 0);
  constexpr int D = 8 * DV, P = DV / 2;  // P vector pairs of 16 dims
  const auto& kv = *g.kv;
  const int BS = kv.block_size;
  alignas(32) float q[D];
  const auto [len, nblocks, sp] = set_up_query<D>(g, j, q, 16);
  const std::size_t head_bytes = kv.head_bytes();
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const auto low = [](__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); };
  const auto high = [&](__m256i v) { return _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask)); };
  const auto load = [](const std::uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };

  // Scores: per block, per 16 slots, four chains over the dims (d mod 4) for the even and for the
  // odd slots, summed (c0+c1)+(c2+c3) as in attend_one.
  for (int bi = 0; bi < nblocks; ++bi) {
    const std::size_t bh = static_cast<std::size_t>(g.table[bi]) * kv.heads + g.head;
    const auto* kb = reinterpret_cast<const std::uint16_t*>(kv.k + bh * head_bytes);
    if (bi + 1 < nblocks)
      prefetch_head(kv.k + (static_cast<std::size_t>(g.table[bi + 1]) * kv.heads + g.head) * head_bytes, head_bytes);
    for (int c = 0; c < BS; c += 16) {
      const int lane0 = bi * BS + c;
      if (lane0 >= len)
        break;
      __m256 e0 = _mm256_setzero_ps(), e1 = e0, e2 = e0, e3 = e0, o0 = e0, o1 = e0, o2 = e0, o3 = e0;
      for (int d = 0; d < D; d += 4) {
#define LF_CHAIN(t)                                                                                \
  {                                                                                                \
    const __m256 qd = _mm256_set1_ps(q[d + t]);                                                    \
    const __m256i v = load(kb + static_cast<std::size_t>(d + t) * BS + c);                         \
    e##t = _mm256_fmadd_ps(qd, low(v), e##t);                                                      \
    o##t = _mm256_fmadd_ps(qd, high(v), o##t);                                                     \
  }
        LF_CHAIN(0) LF_CHAIN(1) LF_CHAIN(2) LF_CHAIN(3)
#undef LF_CHAIN
      }
      __m256 first, second;
      interleave_pairs(_mm256_add_ps(_mm256_add_ps(e0, e1), _mm256_add_ps(e2, e3)),
                       _mm256_add_ps(_mm256_add_ps(o0, o1), _mm256_add_ps(o2, o3)), first, second);
      _mm256_storeu_ps(sp + lane0, first);
      _mm256_storeu_ps(sp + lane0 + 8, second);
    }
  }

  const float inv_sum = 1.0f / canonical_rows::softmax_in_place(sp, len);

  // Weighted values, token by token in order: even and odd dims of each 16 apart.
  __m256 oe[P], oo[P];
#pragma GCC unroll 4
  for (int t = 0; t < P; ++t)
    oe[t] = oo[t] = _mm256_setzero_ps();
  for (int tok = 0; tok < len; ++tok) {
    const std::size_t bh = static_cast<std::size_t>(g.table[tok / BS]) * kv.heads + g.head;
    const int slot = tok % BS;
    if (slot == 0 && tok / BS + 1 < nblocks)
      prefetch_head(kv.v + (static_cast<std::size_t>(g.table[tok / BS + 1]) * kv.heads + g.head) * head_bytes, head_bytes);
    const auto* vb =
      reinterpret_cast<const std::uint16_t*>(kv.v + bh * head_bytes) + static_cast<std::size_t>(slot) * D;
    const __m256 vw = _mm256_set1_ps(sp[tok]);
#pragma GCC unroll 4
    for (int t = 0; t < P; ++t) {
      const __m256i v = load(vb + 16 * t);
      oe[t] = _mm256_fmadd_ps(vw, low(v), oe[t]);
      oo[t] = _mm256_fmadd_ps(vw, high(v), oo[t]);
    }
  }
  const __m256 vinv = _mm256_set1_ps(inv_sum);
#pragma GCC unroll 4
  for (int t = 0; t < P; ++t) {
    __m256 first, second;
    interleave_pairs(oe[t], oo[t], first, second);
    _mm256_storeu_ps(g.out[j] + 16 * t, _mm256_mul_ps(first, vinv));
    _mm256_storeu_ps(g.out[j] + 16 * t + 8, _mm256_mul_ps(second, vinv));
  }
}

template <kv_type T, int DV>
void by_queries(const attn_group& g) {
  if constexpr (T == kv_type::bf16 && DV % 2 == 0) {
    if (g.kv->block_size % 16 == 0) {
      for (int j = 0; j < g.nq; ++j)
        attend_one_pairs<DV>(g, j);
      return;
    }
  }
  for (int j = 0; j < g.nq; ++j)
    attend_one<T, DV>(g, j);
}

template <kv_type T>
void by_head_dim(const attn_group& g) {
  if (g.kv->block_size % 8 != 0) {
    portable_attend(g);
    return;
  }
  if (!with_head_vectors<8, 8>(g.kv->head_dim, [&](auto dv) { by_queries<T, decltype(dv)::value>(g); }))
    portable_attend(g);
}

} // namespace

void avx2_attend(const attn_group& g) {
  switch (g.kv->type) {
    case kv_type::f32: by_head_dim<kv_type::f32>(g); break;
    case kv_type::bf16: by_head_dim<kv_type::bf16>(g); break;
    case kv_type::int8: by_head_dim<kv_type::int8>(g); break;
  }
}

} // namespace lf::kernels::detail
