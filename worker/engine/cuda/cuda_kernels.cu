#include "worker/engine/cuda/cuda_kernels.cuh"

#include <cfloat>

namespace lf::engine::cuda {

namespace {

constexpr int block_threads = 256;

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum (or max) over the block; every thread gets the result. `scratch` holds 32 floats.
template <bool Max>
__device__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = Max ? warp_max(v) : warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (Max ? -FLT_MAX : 0.0f);
  return Max ? warp_max(v) : warp_sum(v);
}

__device__ float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
}

__device__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void embed_kernel(row_info ri, const float* wte, const float* wpe, float* x, int C) {
  const int r = blockIdx.x;
  const int p = ri.pos[r];
  float* xr = x + static_cast<long long>(r) * C;
  if (p < 0) {
    for (int i = threadIdx.x; i < C; i += blockDim.x)
      xr[i] = 0.0f;
    return;
  }
  const float* e = wte + static_cast<long long>(ri.tok[r]) * C;
  const float* pe = wpe + static_cast<long long>(p) * C;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    xr[i] = e[i] + pe[i];
}

__global__ void layer_norm_kernel(const float* x, const std::int32_t* idx, float* y, int C, const float* g,
                                  const float* b, float eps) {
  __shared__ float scratch[32];
  const int i = blockIdx.x;
  const float* xr = x + static_cast<long long>(idx ? idx[i] : i) * C;
  float* yr = y + static_cast<long long>(i) * C;
  float s = 0.0f;
  for (int k = threadIdx.x; k < C; k += blockDim.x)
    s += xr[k];
  const float mean = block_reduce<false>(s, scratch) / static_cast<float>(C);
  float v = 0.0f;
  for (int k = threadIdx.x; k < C; k += blockDim.x) {
    const float d = xr[k] - mean;
    v += d * d;
  }
  const float var = block_reduce<false>(v, scratch) / static_cast<float>(C);
  const float rstd = 1.0f / sqrtf(var + eps);
  for (int k = threadIdx.x; k < C; k += blockDim.x)
    yr[k] = (xr[k] - mean) * rstd * g[k] + b[k];
}

__global__ void epilogue_kernel(epilogue e, const float* t, const float* b, float* y, long long total, int n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float v = t[i] + b[i % n];
    switch (e) {
      case epilogue::bias: y[i] = v; break;
      case epilogue::residual: y[i] += v; break;
      case epilogue::bias_gelu_tanh: y[i] = gelu_tanh(v); break;
      case epilogue::bias_gelu_erf: y[i] = gelu_erf(v); break;
    }
  }
}

__device__ float* kv_slot(kv_layer kv, int block, int which, int head, int slot) {
  const long long per_block = 2LL * kv.heads * kv.block_size * kv.head_dim;
  return kv.base + block * per_block + ((static_cast<long long>(which) * kv.heads + head) * kv.block_size + slot)
                                         * kv.head_dim;
}

__global__ void qkv_epilogue_kernel(row_info ri, float* qkv, const float* bias, kv_layer kv, int C) {
  const int r = blockIdx.x;
  float* row = qkv + static_cast<long long>(r) * 3 * C;
  for (int i = threadIdx.x; i < 3 * C; i += blockDim.x)
    row[i] += bias[i];
  const int p = ri.pos[r];
  if (p < 0)
    return;
  __syncthreads();
  const int block = ri.tables[ri.toff[r] + p / kv.block_size], slot = p % kv.block_size;
  for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
    const int which = i / C, c = i % C, head = c / kv.head_dim, d = c % kv.head_dim;
    kv_slot(kv, block, which, head, slot)[d] = row[C + i];
  }
}

/// One block per (row, head). Scores: a warp per position (lanes over the head's dims), kept in
/// shared memory; softmax over them; then the weighted sum of V, again a warp per position with
/// each lane holding up to max_head_dim / 32 dims, and the warps' sums added at the end.
constexpr int max_head_dim = 128;

__global__ void attention_kernel(row_info ri, const float* qkv, kv_layer kv, float* out, int C) {
  extern __shared__ float sh[];  // [D] q, [32] scratch, [warps][D] partial sums, [span] scores
  const int r = blockIdx.x, h = blockIdx.y, D = kv.head_dim;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float* q = sh;
  float* scratch = q + D;
  float* part = scratch + 32;
  float* score = part + warps * D;
  float* o = out + static_cast<long long>(r) * C + h * D;
  const int p = ri.pos[r];
  if (p < 0) {
    for (int d = threadIdx.x; d < D; d += blockDim.x)
      o[d] = 0.0f;
    return;
  }
  const float qscale = 1.0f / sqrtf(static_cast<float>(D));
  const float* qr = qkv + static_cast<long long>(r) * 3 * C + h * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    q[d] = qr[d] * qscale;
  __syncthreads();
  const int span = p + 1;
  const std::int32_t* table = ri.tables + ri.toff[r];
#pragma unroll 4
  for (int j = warp; j < span; j += warps) {
    const float* k = kv_slot(kv, table[j / kv.block_size], 0, h, j % kv.block_size);
    float acc = 0.0f;
    for (int d = lane; d < D; d += 32)
      acc += q[d] * k[d];
    acc = warp_sum(acc);
    if (lane == 0)
      score[j] = acc;
  }
  __syncthreads();
  float m = -FLT_MAX;
  for (int j = threadIdx.x; j < span; j += blockDim.x)
    m = fmaxf(m, score[j]);
  m = block_reduce<true>(m, scratch);
  float s = 0.0f;
  for (int j = threadIdx.x; j < span; j += blockDim.x) {
    const float e = expf(score[j] - m);
    score[j] = e;
    s += e;
  }
  s = block_reduce<false>(s, scratch);  // its barriers also publish score[]
  float acc[max_head_dim / 32] = {};
#pragma unroll 4
  for (int j = warp; j < span; j += warps) {
    const float w = score[j];
    const float* v = kv_slot(kv, table[j / kv.block_size], 1, h, j % kv.block_size);
#pragma unroll
    for (int t = 0; t < max_head_dim / 32; ++t)
      if (lane + 32 * t < D)
        acc[t] += w * v[lane + 32 * t];
  }
#pragma unroll
  for (int t = 0; t < max_head_dim / 32; ++t)
    if (lane + 32 * t < D)
      part[warp * D + lane + 32 * t] = acc[t];
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float t = 0.0f;
    for (int k = 0; k < warps; ++k)
      t += part[k * D + d];
    o[d] = t / s;
  }
}

/// Row r's factors for the module `table` points at, or nullptr (a padding row, the base model, or
/// an adapter that leaves the module alone).
__device__ const lora_factors* row_factors(const row_info& ri, const lora_factors* table, int stride, int r) {
  const int slot = ri.slot[r];
  if (slot < 0 || ri.pos[r] < 0)
    return nullptr;
  const lora_factors* f = table + static_cast<long long>(slot) * stride;
  return f->a == nullptr ? nullptr : f;
}

__global__ void lora_shrink_kernel(row_info ri, const lora_factors* table, int stride, const float* x, int in, float* t,
                                   int max_rank) {
  const int r = blockIdx.x;
  const lora_factors* fp = row_factors(ri, table, stride, r);
  if (fp == nullptr)
    return;
  const lora_factors f = *fp;
  const float* xr = x + static_cast<long long>(r) * in;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int k = warp; k < f.rank; k += warps) {
    const float* a = f.a + static_cast<long long>(k) * in;
    float acc = 0.0f;
    for (int i = lane; i < in; i += 32)
      acc += xr[i] * a[i];
    acc = warp_sum(acc);
    if (lane == 0)
      t[static_cast<long long>(r) * max_rank + k] = acc;
  }
}

__global__ void lora_expand_kernel(row_info ri, const lora_factors* table, int stride, const float* t, int max_rank,
                                   float* y, int out) {
  const int r = blockIdx.y;
  const lora_factors* fp = row_factors(ri, table, stride, r);
  if (fp == nullptr)
    return;
  const lora_factors f = *fp;
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= out)
    return;
  const float* tr = t + static_cast<long long>(r) * max_rank;
  float acc = 0.0f;
  for (int k = 0; k < f.rank; ++k)
    acc += tr[k] * f.bt[static_cast<long long>(k) * out + o];
  y[static_cast<long long>(r) * out + o] += acc;
}

int grid_for(long long total) {
  const long long g = (total + block_threads - 1) / block_threads;
  return static_cast<int>(g < 65535 ? (g > 0 ? g : 1) : 65535);
}

} // namespace

void embed(const row_info& ri, const float* wte, const float* wpe, float* x, int rows, int C, cudaStream_t s) {
  if (rows > 0)
    embed_kernel<<<rows, block_threads, 0, s>>>(ri, wte, wpe, x, C);
}

void layer_norm(const float* x, const std::int32_t* idx, float* y, int rows, int C, const float* g,
                const float* b, float eps, cudaStream_t s) {
  if (rows > 0)
    layer_norm_kernel<<<rows, block_threads, 0, s>>>(x, idx, y, C, g, b, eps);
}

void apply_epilogue(epilogue e, const float* t, const float* b, float* y, int rows, int n, cudaStream_t s) {
  const long long total = static_cast<long long>(rows) * n;
  if (total > 0)
    epilogue_kernel<<<grid_for(total), block_threads, 0, s>>>(e, t, b, y, total, n);
}

void qkv_epilogue(const row_info& ri, float* qkv, const float* bias, kv_layer kv, int rows, int C,
                  cudaStream_t s) {
  if (rows > 0)
    qkv_epilogue_kernel<<<rows, block_threads, 0, s>>>(ri, qkv, bias, kv, C);
}

void paged_attention(const row_info& ri, const float* qkv, kv_layer kv, float* out, int rows, int C,
                     int max_positions, cudaStream_t s) {
  if (rows <= 0)
    return;
  // Few (row, head) blocks (small decode batches): more warps per block share the positions.
  const int threads = rows * kv.heads < 1024 ? 1024 : 256;
  const auto shared =
    static_cast<std::size_t>(kv.head_dim + 32 + (threads / 32) * kv.head_dim + max_positions) * sizeof(float);
  attention_kernel<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(kv.heads)), threads, shared, s>>>(
    ri, qkv, kv, out, C);
}

void lora_shrink(const row_info& ri, const lora_factors* table, int stride, const float* x, int in, float* t,
                 int max_rank, int rows, cudaStream_t s) {
  if (rows > 0)
    lora_shrink_kernel<<<rows, block_threads, 0, s>>>(ri, table, stride, x, in, t, max_rank);
}

void lora_expand(const row_info& ri, const lora_factors* table, int stride, const float* t, int max_rank,
                 float* y, int out, int rows, cudaStream_t s) {
  if (rows > 0)
    lora_expand_kernel<<<dim3(static_cast<unsigned>((out + block_threads - 1) / block_threads),
                              static_cast<unsigned>(rows)),
                         block_threads, 0, s>>>(ri, table, stride, t, max_rank, y, out);
}

} // namespace lf::engine::cuda
