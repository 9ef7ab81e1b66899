// The portable family's attention: one query at a time, scalar, any head size and block size, in
// the canonical order (the same bits as every table's vector kernel). Every other family falls back
// to it for shapes its vector code does not cover.
#include <algorithm>
#include <cmath>
#include <vector>

#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/half.hpp"

namespace lf::kernels::detail {

namespace {

/// Value `i` of a K vector (dims-major block: element d of slot s at d * block_size + s) or of a
/// V row, as a float.
float load_elem(const kv_layer& kv, const std::byte* base, std::size_t i) {
  switch (kv.type) {
    case kv_type::f32: return reinterpret_cast<const float*>(base)[i];
    case kv_type::bf16: return engine::bf16_to_f32(reinterpret_cast<const std::uint16_t*>(base)[i]);
    case kv_type::int8: return static_cast<float>(reinterpret_cast<const std::int8_t*>(base)[i]);
  }
  return 0;
}


} // namespace

void portable_attend(const attn_group& g) {
  // The canonical order (common/canonical_rows.hpp), with std::fma where the vector tables fuse.
  const auto& kv = *g.kv;
  const int D = kv.head_dim, BS = kv.block_size;
  const float qscale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> s;
  std::vector<float> q(static_cast<std::size_t>(D)), o(static_cast<std::size_t>(D));
  for (int j = 0; j < g.nq; ++j) {
    const int len = g.pos0 + j + 1;
    s.resize(static_cast<std::size_t>(len));
    for (int d = 0; d < D; ++d)
      q[static_cast<std::size_t>(d)] = g.q[j][d] * qscale;
    for (int t = 0; t < len; ++t) {
      const std::size_t bh = static_cast<std::size_t>(g.table[t / BS]) * kv.heads + g.head;
      const std::byte* kb = kv.k + bh * kv.head_bytes();
      float chain[4] = {0, 0, 0, 0};  // d mod 4; a head size not a multiple of 4 leaves its tail in the first chains
      for (int d = 0; d < D; ++d)
        chain[d % 4] = std::fma(q[static_cast<std::size_t>(d)],
                                load_elem(kv, kb, static_cast<std::size_t>(d) * BS + t % BS), chain[d % 4]);
      float acc = (chain[0] + chain[1]) + (chain[2] + chain[3]);
      if (kv.type == kv_type::int8)
        acc *= kv.k_scale[bh * BS + t % BS];
      s[static_cast<std::size_t>(t)] = acc;
    }
    const float inv = 1.0f / canonical_rows::softmax_in_place(s.data(), len);
    std::fill(o.begin(), o.end(), 0.0f);
    for (int t = 0; t < len; ++t) {
      const std::size_t bh = static_cast<std::size_t>(g.table[t / BS]) * kv.heads + g.head;
      const std::byte* vb = kv.v + bh * kv.head_bytes();
      float w = s[static_cast<std::size_t>(t)];
      if (kv.type == kv_type::int8)
        w *= kv.v_scale[bh * BS + t % BS];
      for (int d = 0; d < D; ++d)
        o[static_cast<std::size_t>(d)] =
          std::fma(w, load_elem(kv, vb, static_cast<std::size_t>(t % BS) * D + d), o[static_cast<std::size_t>(d)]);
    }
    for (int d = 0; d < D; ++d)
      g.out[j][d] = o[static_cast<std::size_t>(d)] * inv;
  }
}

} // namespace lf::kernels::detail
