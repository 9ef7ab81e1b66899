#include "worker/engine/attention_kernel.hpp"

#include <algorithm>
#include <cmath>

namespace lf::engine {

namespace {

// Dot products and axpy over head_dim floats. Eight independent partial sums let the compiler use
// SIMD without -ffast-math; target_clones picks AVX-512 / AVX2 at run time where the CPU has them.
__attribute__((target_clones("avx512f", "avx2", "default")))
void scores_and_max(const kv_layer_view& kv, const std::int32_t* table, std::int64_t len, int head,
                    const float* q, float scale, float* scores) {
  const int d = kv.head_dim;
  const auto bs = static_cast<std::int64_t>(kv.block_size);
  for (std::int64_t p = 0; p < len; ++p) {
    auto slot = static_cast<std::int64_t>(table[p / bs]) * bs + p % bs;
    const float* k = kv.k + (slot * kv.n_head + head) * d;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= d; i += 8)
      for (int j = 0; j < 8; ++j)
        acc[j] += q[i + j] * k[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < d; ++i)
      s += q[i] * k[i];
    scores[p] = s * scale;
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void weighted_values(const kv_layer_view& kv, const std::int32_t* table, std::int64_t len, int head,
                     const float* probs, float* out) {
  const int d = kv.head_dim;
  const auto bs = static_cast<std::int64_t>(kv.block_size);
  std::fill(out, out + d, 0.0f);
  for (std::int64_t p = 0; p < len; ++p) {
    auto slot = static_cast<std::int64_t>(table[p / bs]) * bs + p % bs;
    const float* v = kv.v + (slot * kv.n_head + head) * d;
    const float w = probs[p];
    for (int i = 0; i < d; ++i)
      out[i] += w * v[i];
  }
}

} // namespace

void paged_decode_head(const kv_layer_view& kv, const std::int32_t* block_table, std::int64_t len,
                       int head, const float* q, float scale, float* out, float* scratch) {
  scores_and_max(kv, block_table, len, head, q, scale, scratch);
  float mx = *std::max_element(scratch, scratch + len);
  double sum = 0;
  for (std::int64_t p = 0; p < len; ++p) {
    scratch[p] = std::exp(scratch[p] - mx);
    sum += scratch[p];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (std::int64_t p = 0; p < len; ++p)
    scratch[p] *= inv;
  weighted_values(kv, block_table, len, head, scratch, out);
}

} // namespace lf::engine
