#pragma once
/// The CUDA engine's own kernels (the matrix products are cuBLAS's): embedding, layer norm, the
/// epilogues after a product (bias, residual, GELU, K/V into the paged pool), paged attention over
/// the block tables and the multi-LoRA shrink / expand pair. Every kernel reads the step's shape
/// from device memory (a row's position, its table, its adapter slot), never from a host value
/// that changes per step, so a captured CUDA graph replays any decode step of its batch size.
///
/// A step's rows: row r has token tok[r] at position pos[r] (-1: a padding row, which computes
/// nothing and writes zeros) and reads its sequence's block table at tables + toff[r].

#include <cstdint>

#include <cuda_runtime.h>

namespace lf::engine::cuda {

/// Per-row step data, all device pointers of `rows` entries.
struct row_info {
  const std::int32_t* tok = nullptr;
  const std::int32_t* pos = nullptr;
  const std::int32_t* toff = nullptr;
  const std::int32_t* slot = nullptr;  ///< LoRA slot, -1 for the base model
  const std::int32_t* tables = nullptr;
};

/// The paged K/V pool of one layer: [block][2][head][slot][dim] floats (K then V).
struct kv_layer {
  float* base = nullptr;
  int heads = 0, head_dim = 0, block_size = 0;
};

/// x[r] = wte[tok[r]] + wpe[pos[r]] (C floats), zero for padding rows.
void embed(const row_info& ri, const float* wte, const float* wpe, float* x, int rows, int C, cudaStream_t s);

/// y[i] = layer_norm(x[idx ? idx[i] : i]) * g + b, for i < rows (C floats each, two-pass mean and
/// variance in f32).
void layer_norm(const float* x, const std::int32_t* idx, float* y, int rows, int C, const float* g,
                const float* b, float eps, cudaStream_t s);

/// What an epilogue does with a product t (rows x n) and a bias b.
enum class epilogue { bias, residual, bias_gelu_tanh, bias_gelu_erf };

/// bias: y = t + b (in place when y == t); residual: y += t + b; gelu: y = gelu(t + b).
void apply_epilogue(epilogue e, const float* t, const float* b, float* y, int rows, int n, cudaStream_t s);

/// qkv += bias, then each non-padding row's K and V go to the pool at its position's block/slot.
void qkv_epilogue(const row_info& ri, float* qkv, const float* bias, kv_layer kv, int rows, int C,
                  cudaStream_t s);

/// out[r] (C floats) = softmax(q k^T / sqrt(D)) v over positions [0, pos[r]] of row r's sequence,
/// per head, from the pool (the step's own K/V are already written). `max_positions` bounds the
/// scores each block keeps in shared memory.
void paged_attention(const row_info& ri, const float* qkv, kv_layer kv, float* out, int rows, int C,
                     int max_positions, cudaStream_t s);

/// One adapted module's factors in device memory: A [rank][in], B^T scaled [rank][out].
struct lora_factors {
  const float* a = nullptr;
  const float* bt = nullptr;
  int rank = 0;
};

/// t[r][k] = x[r] . A_k for rows whose slot has factors for this module: table[slot * stride]
/// (a null a: the adapter leaves the module alone); t is rows x max_rank.
void lora_shrink(const row_info& ri, const lora_factors* table, int stride, const float* x, int in, float* t,
                 int max_rank, int rows, cudaStream_t s);

/// y[r] += sum_k t[r][k] * B^T_k for those rows.
void lora_expand(const row_info& ri, const lora_factors* table, int stride, const float* t, int max_rank,
                 float* y, int out, int rows, cudaStream_t s);

} // namespace lf::engine::cuda
