#pragma once
/// A GPT-2 checkpoint in device memory, f32, in Hugging Face's layouts: Conv1D weights [in][out]
/// row-major (cuBLAS reads them as column-major [out][in] matrices, no transpose copy), wte and
/// lm_head [V][C]. Read tensor by tensor from the safetensors file (F32, F16 or BF16) and copied up
/// at once, so the host never holds more than one tensor.

#include <cstddef>
#include <string>
#include <vector>

#include "worker/engine/cuda/cuda_util.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"

namespace lf::engine::cuda {

/// One transformer block's parameters.
struct block_weights {
  device_buffer<float> ln_1_w, ln_1_b, ln_2_w, ln_2_b;
  device_buffer<float> attn, attn_b, proj, proj_b, fc, fc_b, mproj, mproj_b;
};

/// All of GPT2LMHeadModel on the device of the current CUDA context.
struct model_weights {
  gpt2_config config;
  device_buffer<float> wte, wpe, ln_f_w, ln_f_b;
  device_buffer<float> lm_head;  ///< untied checkpoints only
  std::vector<block_weights> blocks;

  /// The LM head: wte itself when tied.
  const float* head() const noexcept { return lm_head.size() ? lm_head.get() : wte.get(); }
  /// Bytes of every matrix a decode step reads (the four per block and the head).
  std::size_t bytes_per_step() const noexcept;
  /// Bytes held.
  std::size_t bytes() const noexcept;
};

/// Loads `dir` (config.json + model.safetensors) onto the current device. Throws
/// std::runtime_error naming the file and tensor, as the CPU loader does.
model_weights load_model_weights(const std::string& dir);

} // namespace lf::engine::cuda
