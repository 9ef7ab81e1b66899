// The CUDA engine: one forward per step over the step's rows (prefill chunks and decode tokens of
// any number of sequences and adapters), f32 throughout. Decode steps (one token per chunk) are
// padded to a power-of-two batch and replayed from a CUDA graph captured the first time that
// batch size is seen; other steps are launched kernel by kernel. See cuda_engine.hpp.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "worker/engine/cuda/cuda_engine_impl.hpp"

namespace lf::engine::cuda {

engine_impl::engine_impl(const std::string& dir, const cuda_options& o, cache::adapter_lookup_fn adapters)
  : opts_(o), adapters_(std::move(adapters)), host_pool_(std::clamp(o.host_threads, 1, 64)) {
  info_ = describe_cuda_device(o.device);
  check(cudaSetDevice(o.device), "cudaSetDevice");
  if (o.block_size < 1 || o.num_blocks == 0)
    throw std::invalid_argument("cuda engine: the K/V pool needs a block size and at least one block");
  w_ = load_model_weights(dir);
  const auto& c = w_.config;
  if (c.head_dim() > max_head_size)
    throw std::invalid_argument("cuda engine: head size " + std::to_string(c.head_dim()) + " is over "
                                + std::to_string(max_head_size));
  slots_ = std::make_unique<adapter_slots>(c.n_layer);
  per_block_ = cuda_kv_block_bytes(c, o.block_size) / sizeof(float) / static_cast<std::size_t>(c.n_layer);
  kv_.resize(per_block_ * o.num_blocks * static_cast<std::size_t>(c.n_layer));
  check(cudaMemset(kv_.get(), 0, kv_.bytes()), "zero the K/V pool");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  check(cublasCreate(&blas_), "create");
  check(cublasSetStream(blas_, stream_), "set stream");
  // The default math mode keeps f32 products in f32 (TF32 only with CUBLAS_TF32_TENSOR_OP_MATH).
  check(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "math mode");
  workspace_.resize(32u << 20);
  check(cublasSetWorkspace(blas_, workspace_.get(), workspace_.bytes()), "workspace");
  reserve(std::max(o.max_rows, 1), 64, 64);
}

engine_impl::~engine_impl() {
  cudaSetDevice(opts_.device);
  graphs_.clear();
  if (blas_ != nullptr)
    cublasDestroy(blas_);
  if (stream_ != nullptr)
    cudaStreamDestroy(stream_);
}

void engine_impl::reserve(int rows, int logit_rows, int rank) {
  const auto& c = w_.config;
  const int blocks_per_seq = (c.n_positions + opts_.block_size - 1) / opts_.block_size;
  bool moved = false;
  if (rows > rows_cap_) {
    rows_cap_ = std::max(rows, rows_cap_ * 2);
    const auto r = static_cast<std::size_t>(rows_cap_), C = static_cast<std::size_t>(c.n_embd);
    x_ = device_buffer<float>(r * C);
    h_ = device_buffer<float>(r * C);
    att_ = device_buffer<float>(r * C);
    tmp_ = device_buffer<float>(r * C);
    qkv_ = device_buffer<float>(r * 3 * C);
    f_ = device_buffer<float>(r * static_cast<std::size_t>(c.inner_dim()));
    tables_cap_ = rows_cap_ * blocks_per_seq;
    meta_ = device_buffer<std::int32_t>(static_cast<std::size_t>(meta_fields * rows_cap_ + tables_cap_));
    host_meta_.resize(meta_.size());
    moved = true;
  }
  if (logit_rows > logits_cap_) {
    logits_cap_ = std::max(logit_rows, logits_cap_ * 2);
    const auto m = static_cast<std::size_t>(logits_cap_);
    last_ = device_buffer<float>(m * static_cast<std::size_t>(c.n_embd));
    logits_ = device_buffer<float>(m * static_cast<std::size_t>(c.vocab_size));
    host_logits_.resize(m * static_cast<std::size_t>(c.vocab_size));
    moved = true;
  }
  if (rank > rank_cap_) {
    rank_cap_ = std::max(rank, rank_cap_ * 2);
    moved = true;
  }
  if (moved) {
    t_ = device_buffer<float>(static_cast<std::size_t>(rows_cap_) * static_cast<std::size_t>(rank_cap_));
    graphs_.clear();  // they hold the old addresses
  }
}

row_info engine_impl::rows() const noexcept {
  const auto* m = meta_.get();
  const auto r = static_cast<std::size_t>(rows_cap_);
  return {m, m + r, m + 2 * r, m + 3 * r, m + meta_fields * r};
}

kv_layer engine_impl::kv(int layer) noexcept {
  const auto& c = w_.config;
  return {kv_.get() + per_block_ * opts_.num_blocks * static_cast<std::size_t>(layer), c.n_head, c.head_dim(),
          opts_.block_size};
}

void engine_impl::gemm(const float* x, int in, const float* w, int out, float* y, int rows) {
  const float one = 1.0f, zero = 0.0f;
  // Row-major y[rows][out] = x[rows][in] w[in][out] is column-major y^T = w^T x^T.
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, out, rows, in, &one, w, out, x, in, &zero, y, out), "sgemm");
}

void engine_impl::lora(int layer, lora_module m, const float* x, int in, float* y, int out, int rows) {
  const auto* table = slots_->table(layer, m);
  lora_shrink(rows_info_, table, slots_->stride(), x, in, t_.get(), rank_cap_, rows, stream_);
  lora_expand(rows_info_, table, slots_->stride(), t_.get(), rank_cap_, y, out, rows, stream_);
}

void engine_impl::forward(int rows, bool with_lora, int logit_rows, bool identity_logits) {
  const auto& c = w_.config;
  const int C = c.n_embd, I = c.inner_dim();
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  const auto gelu = c.exact_gelu() ? epilogue::bias_gelu_erf : epilogue::bias_gelu_tanh;
  rows_info_ = this->rows();
  embed(rows_info_, w_.wte.get(), w_.wpe.get(), x_.get(), rows, C, stream_);
  for (int l = 0; l < c.n_layer; ++l) {
    const auto& b = w_.blocks[static_cast<std::size_t>(l)];
    layer_norm(x_.get(), nullptr, h_.get(), rows, C, b.ln_1_w.get(), b.ln_1_b.get(), eps, stream_);
    gemm(h_.get(), C, b.attn.get(), 3 * C, qkv_.get(), rows);
    if (with_lora)
      lora(l, lora_module::attn_c_attn, h_.get(), C, qkv_.get(), 3 * C, rows);
    qkv_epilogue(rows_info_, qkv_.get(), b.attn_b.get(), kv(l), rows, C, stream_);
    paged_attention(rows_info_, qkv_.get(), kv(l), att_.get(), rows, C, c.n_positions, stream_);
    gemm(att_.get(), C, b.proj.get(), C, tmp_.get(), rows);
    if (with_lora)
      lora(l, lora_module::attn_c_proj, att_.get(), C, tmp_.get(), C, rows);
    apply_epilogue(epilogue::residual, tmp_.get(), b.proj_b.get(), x_.get(), rows, C, stream_);
    layer_norm(x_.get(), nullptr, h_.get(), rows, C, b.ln_2_w.get(), b.ln_2_b.get(), eps, stream_);
    gemm(h_.get(), C, b.fc.get(), I, f_.get(), rows);
    if (with_lora)
      lora(l, lora_module::mlp_c_fc, h_.get(), C, f_.get(), I, rows);
    apply_epilogue(gelu, f_.get(), b.fc_b.get(), f_.get(), rows, I, stream_);
    gemm(f_.get(), I, b.mproj.get(), C, tmp_.get(), rows);
    if (with_lora)
      lora(l, lora_module::mlp_c_proj, f_.get(), I, tmp_.get(), C, rows);
    apply_epilogue(epilogue::residual, tmp_.get(), b.mproj_b.get(), x_.get(), rows, C, stream_);
  }
  if (logit_rows == 0)
    return;
  const std::int32_t* idx = identity_logits ? nullptr : meta_.get() + 4 * static_cast<std::size_t>(rows_cap_);
  layer_norm(x_.get(), idx, last_.get(), logit_rows, C, w_.ln_f_w.get(), w_.ln_f_b.get(), eps, stream_);
  const float one = 1.0f, zero = 0.0f;
  check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, c.vocab_size, logit_rows, C, &one, w_.head(), C, last_.get(),
                    C, &zero, logits_.get(), c.vocab_size),
        "lm head");
}

} // namespace lf::engine::cuda
