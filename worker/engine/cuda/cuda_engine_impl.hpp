#pragma once
/// The CUDA engine's class (cuda_engine.hpp's interface), shared by its source files:
/// cuda_model.cpp (buffers and the forward) and cuda_step.cpp (a step's rows, graphs, logits).

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "worker/engine/cuda/cuda_engine.hpp"
#include "worker/engine/cuda/cuda_kernels.cuh"
#include "worker/engine/cuda/cuda_lora.hpp"
#include "worker/engine/cuda/cuda_util.hpp"
#include "worker/engine/cuda/cuda_weights.hpp"
#include "worker/engine/kernels/thread_pool.hpp"

namespace lf::engine::cuda {

/// The widest head the attention kernel takes (cuda_kernels.cu's max_head_dim).
inline constexpr int max_head_size = 128;

/// A captured decode step of one padded batch size.
class graph_exec {
public:
  graph_exec() = default;
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  ~graph_exec() {
    if (exec_ != nullptr)
      cudaGraphExecDestroy(exec_);
  }
  cudaGraphExec_t* out() noexcept { return &exec_; }
  cudaGraphExec_t get() const noexcept { return exec_; }

private:
  cudaGraphExec_t exec_ = nullptr;
};

/// See cuda_engine.hpp.
class engine_impl final : public cuda_engine {
public:
  engine_impl(const std::string& dir, const cuda_options& o, cache::adapter_lookup_fn adapters);
  ~engine_impl() override;

  void step(const std::vector<engine_chunk>& chunks) override;
  float* logits(std::size_t i) override;
  std::size_t vocab_size() const override { return static_cast<std::size_t>(w_.config.vocab_size); }
  bool multi_logits() const override { return true; }
  void for_rows(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) override {
    host_pool_.parallel_for(n, fn);
  }
  const gpt2_config& config() const override { return w_.config; }
  const cuda_device_info& device() const override { return info_; }
  std::size_t weight_bytes() const override { return w_.bytes_per_step(); }
  std::size_t kv_bytes() const override { return kv_.bytes(); }
  cuda_engine_stats stats() const override { return stats_; }
  void set_graphs(bool on) override { opts_.graphs = on; }

private:
  /// Per-row fields in meta_ (tok, pos, toff, slot, logit index), then the block tables.
  static constexpr int meta_fields = 5;

  /// Grows the buffers to `rows` rows, `logit_rows` rows of logits and LoRA rank `rank`
  /// (dropping the graphs when anything moves).
  void reserve(int rows, int logit_rows, int rank);
  row_info rows() const noexcept;
  kv_layer kv(int layer) noexcept;
  void gemm(const float* x, int in, const float* w, int out, float* y, int rows);
  void lora(int layer, lora_module m, const float* x, int in, float* y, int out, int rows);
  /// Launches the forward over `rows` rows on the stream; the logits of `logit_rows` rows: the
  /// first ones when identity_logits, else those the logit-index field names.
  void forward(int rows, bool with_lora, int logit_rows, bool identity_logits);
  /// The decode step of `rows` padded rows from its graph (capturing it first if needed).
  void replay(int rows, bool with_lora);

  cuda_options opts_;
  cache::adapter_lookup_fn adapters_;
  kernels::thread_pool host_pool_;
  cuda_device_info info_;
  model_weights w_;
  std::unique_ptr<adapter_slots> slots_;
  std::size_t per_block_ = 0;  ///< floats of one block of one layer
  device_buffer<float> kv_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  device_buffer<unsigned char> workspace_;

  int rows_cap_ = 0, logits_cap_ = 0, rank_cap_ = 0, tables_cap_ = 0;
  device_buffer<float> x_, h_, att_, tmp_, qkv_, f_, last_, logits_, t_;
  device_buffer<std::int32_t> meta_;
  pinned_buffer<std::int32_t> host_meta_;
  pinned_buffer<float> host_logits_;
  row_info rows_info_;

  /// (padded rows, LoRA) -> graph, and the adapter table generation it was captured with.
  std::map<std::pair<int, bool>, std::pair<std::unique_ptr<graph_exec>, std::uint64_t>> graphs_;
  std::vector<int> logit_row_;  ///< i-th wanted logits -> row of host_logits_
  cuda_engine_stats stats_;
};

} // namespace lf::engine::cuda
