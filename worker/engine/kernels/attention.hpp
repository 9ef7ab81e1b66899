#pragma once
/// Attention over the paged K/V store for a ragged batch: each sequence brings `count` new rows
/// (one decode token, or a chunk of its prompt) at positions [start, start + count), and every
/// new row attends to all cached positions up to its own, through the sequence's block table.
///
///   1. the new rows' K and V are written into their slots (quantized to the cache's type);
///   2. out = softmax(q K^T / sqrt(head_dim)) V per row and head, reading every key and value
///      back from the cache, the row's own included.
///
/// Because every key is read from the cache, and each query's scores, softmax and weighted sum
/// follow one fixed order whether it is computed alone (decode) or in a group of up to four
/// queries sharing their loads (prefill), a row's output does not depend on how its sequence was
/// chunked, on the other sequences of the step, or on the thread count.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "worker/engine/kernels/kv_cache.hpp"
#include "worker/engine/kernels/thread_pool.hpp"

namespace lf::kernels {

/// One sequence's part of a step.
struct attn_seq {
  const std::int32_t* table = nullptr;  ///< block ids covering positions [0, start + count)
  int start = 0;                        ///< positions already in the cache
  int count = 0;                        ///< new rows (>= 1)
  int row = 0;                          ///< first of them in qkv / out
};

/// See the file comment. `qkv`: rows of [q | k | v], each heads * head_dim floats (row stride
/// ld_qkv); `out`: rows of heads * head_dim floats (row stride ld_out).
void paged_attention(const kv_layer& kv, const float* qkv, std::size_t ld_qkv, float* out,
                     std::size_t ld_out, const std::vector<attn_seq>& seqs, thread_pool& pool);

namespace detail {

/// Up to four consecutive queries of one sequence and head: positions pos0 .. pos0 + nq - 1.
struct attn_group {
  const kv_layer* kv;
  const std::int32_t* table;
  int head;
  int pos0;
  int nq;
  const float* q[4];  ///< each head_dim floats (unscaled)
  float* out[4];
};

/// Stores one token's K and V (head_dim floats per head, heads in a row) in slot `slot` of `block`.
void kv_store(const kv_layer& kv, int block, int slot, const float* k, const float* v);

} // namespace detail

} // namespace lf::kernels
