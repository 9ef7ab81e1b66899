// The aarch64 tables' attention kernel for head sizes that are multiples of 4 up to 64 and block
// sizes that are multiples of 4; other shapes use the portable kernel. One query at a time; a
// query's arithmetic is the same whether it is computed alone (decode) or in a group (prefill).
#include <cmath>
#include <vector>

#include "worker/engine/kernels/arm/neon_common.hpp"
#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/head_dim.hpp"

namespace lf::kernels::detail {

namespace {

/// 4 consecutive elements of a K or V array of type T, as floats.
template <kv_type T>
inline float32x4_t load4(const std::byte* base, std::size_t i) {
  if constexpr (T == kv_type::f32) {
    return vld1q_f32(reinterpret_cast<const float*>(base) + i);
  } else if constexpr (T == kv_type::bf16) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(base) + i), 16));
  } else {
    const int8x8_t b = vreinterpret_s8_s32(vdup_n_s32(neon_load_u32(reinterpret_cast<const std::int8_t*>(base) + i)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
  }
}

template <kv_type T, int DV>
void attend_one(const attn_group& g, int j) {
  const auto& kv = *g.kv;
  constexpr int D = 4 * DV;
  const int BS = kv.block_size;
  const int len = g.pos0 + j + 1;
  const int nblocks = (len + BS - 1) / BS;
  const float qscale = 1.0f / std::sqrt(static_cast<float>(D));
  thread_local std::vector<float> sbuf;
  sbuf.resize(static_cast<std::size_t>(nblocks) * BS + 4);
  float* sp = sbuf.data();
  float q[D];
  for (int d = 0; d < D; ++d)
    q[d] = g.q[j][d] * qscale;
  const std::size_t head_bytes = kv.head_bytes();

  // Scores: per block, per 4 slots, four chains over the dims (d mod 4), summed (c0+c1)+(c2+c3).
  for (int bi = 0; bi < nblocks; ++bi) {
    const std::size_t bh = static_cast<std::size_t>(g.table[bi]) * kv.heads + g.head;
    const std::byte* kb = kv.k + bh * head_bytes;
    for (int c = 0; c < BS; c += 4) {
      const int lane0 = bi * BS + c;
      if (lane0 >= len)
        break;
      float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
      for (int d = 0; d < D; d += 4) {
        a0 = vfmaq_n_f32(a0, load4<T>(kb, static_cast<std::size_t>(d) * BS + c), q[d]);
        a1 = vfmaq_n_f32(a1, load4<T>(kb, static_cast<std::size_t>(d + 1) * BS + c), q[d + 1]);
        a2 = vfmaq_n_f32(a2, load4<T>(kb, static_cast<std::size_t>(d + 2) * BS + c), q[d + 2]);
        a3 = vfmaq_n_f32(a3, load4<T>(kb, static_cast<std::size_t>(d + 3) * BS + c), q[d + 3]);
      }
      float32x4_t s = vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3));
      if constexpr (T == kv_type::int8)
        s = vmulq_f32(s, vld1q_f32(kv.k_scale + bh * static_cast<std::size_t>(BS) + c));
      vst1q_f32(sp + lane0, s);
    }
  }

  // Softmax over [0, len) (the canonical one).
  const float inv_sum = 1.0f / canonical_rows::softmax_in_place(sp, len);

  // Weighted values, token by token in order.
  float32x4_t o[DV];
  for (int t = 0; t < DV; ++t)
    o[t] = vdupq_n_f32(0.0f);
  for (int tok = 0; tok < len; ++tok) {
    const std::size_t bh = static_cast<std::size_t>(g.table[tok / BS]) * kv.heads + g.head;
    const int slot = tok % BS;
    const std::byte* vb = kv.v + bh * head_bytes;
    float w = sp[tok];
    if constexpr (T == kv_type::int8)
      w *= kv.v_scale[bh * BS + slot];
    const std::size_t row = static_cast<std::size_t>(slot) * D;
    for (int t = 0; t < DV; ++t)
      o[t] = vfmaq_n_f32(o[t], load4<T>(vb, row + 4 * t), w);
  }
  for (int t = 0; t < DV; ++t)
    vst1q_f32(g.out[j] + 4 * t, vmulq_n_f32(o[t], inv_sum));
}

template <kv_type T, int DV>
void by_queries(const attn_group& g) {
  for (int j = 0; j < g.nq; ++j)
    attend_one<T, DV>(g, j);
}

template <kv_type T>
void by_head_dim(const attn_group& g) {
  if (g.kv->block_size % 4 != 0
      || !with_head_vectors<4, 16>(g.kv->head_dim, [&](auto dv) { by_queries<T, decltype(dv)::value>(g); }))
    portable_attend(g);
}

} // namespace

void neon_attend(const attn_group& g) {
  switch (g.kv->type) {
    case kv_type::f32: by_head_dim<kv_type::f32>(g); break;
    case kv_type::bf16: by_head_dim<kv_type::bf16>(g); break;
    case kv_type::int8: by_head_dim<kv_type::int8>(g); break;
  }
}

} // namespace lf::kernels::detail
