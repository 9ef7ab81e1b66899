// The attention dispatcher (work items over the pool) and the K/V store; the kernels are the
// active table's.
#include "worker/engine/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/kernel_table.hpp"

namespace lf::kernels {

namespace detail {

namespace {

/// int8: the scale of one head vector and its bytes.
void quantize_head(const float* x, int d, std::int8_t* out, std::size_t stride, float& scale) {
  float amax = 0;
  for (int i = 0; i < d; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  scale = amax > 0 ? amax / 127.0f : 1.0f;
  const float inv = 1.0f / scale;
  for (int i = 0; i < d; ++i)
    out[static_cast<std::size_t>(i) * stride] =
      static_cast<std::int8_t>(std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f));
}

} // namespace

void kv_store(const kv_layer& kv, int block, int slot, const float* k, const float* v) {
  const kernel_table& table = active_table();
  const int D = kv.head_dim, BS = kv.block_size;
  for (int h = 0; h < kv.heads; ++h) {
    const std::size_t bh = static_cast<std::size_t>(block) * kv.heads + h;
    std::byte* kb = kv.k + bh * kv.head_bytes();
    std::byte* vb = kv.v + bh * kv.head_bytes();
    const float* kh = k + static_cast<std::size_t>(h) * D;
    const float* vh = v + static_cast<std::size_t>(h) * D;
    switch (kv.type) {
      case kv_type::f32:
        for (int d = 0; d < D; ++d)
          reinterpret_cast<float*>(kb)[static_cast<std::size_t>(d) * BS + slot] = kh[d];
        std::copy(vh, vh + D, reinterpret_cast<float*>(vb) + static_cast<std::size_t>(slot) * D);
        break;
      case kv_type::bf16: {
        // K is stored dims-major (a stride of block_size): convert the head into a buffer first.
        std::uint16_t kq[256];
        for (int d0 = 0; d0 < D; d0 += 256) {
          const int n = std::min(256, D - d0);
          table.rows_to_bf16(kh + d0, static_cast<std::size_t>(n), 1, n, n, kq);
          for (int d = 0; d < n; ++d)
            reinterpret_cast<std::uint16_t*>(kb)[static_cast<std::size_t>(d0 + d) * BS + slot] = kq[d];
        }
        table.rows_to_bf16(vh, static_cast<std::size_t>(D), 1, D, D,
                          reinterpret_cast<std::uint16_t*>(vb) + static_cast<std::size_t>(slot) * D);
        break;
      }
      case kv_type::int8:
        quantize_head(kh, D, reinterpret_cast<std::int8_t*>(kb) + slot, static_cast<std::size_t>(BS),
                      kv.k_scale[bh * BS + slot]);
        quantize_head(vh, D, reinterpret_cast<std::int8_t*>(vb) + static_cast<std::size_t>(slot) * D, 1,
                      kv.v_scale[bh * BS + slot]);
        break;
    }
  }
}

} // namespace detail

void paged_attention(const kv_layer& kv, const float* qkv, std::size_t ld_qkv, float* out,
                     std::size_t ld_out, const std::vector<attn_seq>& seqs, thread_pool& pool) {
  const int H = kv.heads, D = kv.head_dim, BS = kv.block_size;
  const std::size_t C = static_cast<std::size_t>(H) * D;
  // 1. Every new row's K and V into its slot (rows of different sequences in parallel).
  std::vector<std::pair<int, int>> rows;  // (sequence, index of the row in it)
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].count < 1 || seqs[i].table == nullptr || seqs[i].start < 0)
      throw std::invalid_argument("paged_attention: a sequence without rows or block table");
    for (int r = 0; r < seqs[i].count; ++r)
      rows.emplace_back(static_cast<int>(i), r);
  }
  auto store = [&](std::size_t b, std::size_t e) {
    for (auto i = b; i < e; ++i) {
      const auto& s = seqs[static_cast<std::size_t>(rows[i].first)];
      const int pos = s.start + rows[i].second;
      const float* row = qkv + static_cast<std::size_t>(s.row + rows[i].second) * ld_qkv;
      detail::kv_store(kv, s.table[pos / BS], pos % BS, row + C, row + 2 * C);
    }
  };
  rows.size() >= 8 ? pool.parallel_for(rows.size(), store) : store(0, rows.size());
  // 2. Work items: (sequence, head, up to four consecutive queries), split by cost over threads.
  std::vector<detail::attn_group> items;
  std::vector<double> cost;
  for (const auto& s : seqs)
    for (int h = 0; h < H; ++h)
      for (int i0 = 0; i0 < s.count; i0 += 4) {
        detail::attn_group g{&kv, s.table, h, s.start + i0, std::min(4, s.count - i0), {}, {}};
        for (int j = 0; j < g.nq; ++j) {
          g.q[j] = qkv + static_cast<std::size_t>(s.row + i0 + j) * ld_qkv + static_cast<std::size_t>(h) * D;
          g.out[j] = out + static_cast<std::size_t>(s.row + i0 + j) * ld_out + static_cast<std::size_t>(h) * D;
        }
        items.push_back(g);
        cost.push_back(static_cast<double>(g.nq) * (g.pos0 + g.nq));
      }
  const auto kernel = active_table().attend;
  const int parts = pool.size();
  if (parts == 1 || items.size() < 2) {
    for (const auto& g : items)
      kernel(g);
    return;
  }
  // Contiguous ranges of about equal cost, one per thread.
  std::vector<std::size_t> bounds(static_cast<std::size_t>(parts) + 1, items.size());
  bounds[0] = 0;
  double total = 0;
  for (double c : cost)
    total += c;
  double run = 0;
  int next = 1;
  for (std::size_t i = 0; i < items.size() && next < parts; ++i) {
    run += cost[i];
    while (next < parts && run >= total * next / parts)
      bounds[static_cast<std::size_t>(next++)] = i + 1;
  }
  pool.run([&](int t) {
    for (auto i = bounds[static_cast<std::size_t>(t)]; i < bounds[static_cast<std::size_t>(t) + 1]; ++i)
      kernel(items[i]);
  });
}

} // namespace lf::kernels
