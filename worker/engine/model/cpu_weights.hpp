#pragma once
/// A GPT-2 checkpoint packed for the CPU kernels (kernels/packed_matrix.hpp), read straight from a
/// Hugging Face directory (config.json + model.safetensors, F32, F16 or BF16) without ATen. The four
/// linear layers of every block, the LM head and the token embedding are packed in the compute
/// type; biases, layer norms and the position embedding stay f32.
///
/// Tied checkpoints (no lm_head.weight) keep one matrix: the LM head is wte^T, and an embedding
/// row is a column of it (dequantized for int8). Each tensor's file pages are given back once it
/// is packed, so a load never holds the file and the packed weights at once.

#include <cstddef>
#include <string>
#include <vector>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"
#include "worker/engine/model/compute_dtype.hpp"

namespace lf::engine {

/// One transformer block.
struct cpu_block_weights {
  std::vector<float> ln_1_w, ln_1_b, ln_2_w, ln_2_b;
  kernels::packed_matrix attn, proj, fc, mproj;   ///< c_attn [C, 3C], attn.c_proj [C, C], c_fc [C, I], mlp.c_proj [I, C]
  std::vector<float> attn_b, proj_b, fc_b, mproj_b;
};

/// All weights of a GPT2LMHeadModel for the CPU engine.
struct cpu_weights {
  gpt2_config config;
  compute_dtype dtype = compute_dtype::f32;
  kernels::packed_matrix lm_head;  ///< K = C, N = V: logits = h lm_head
  kernels::packed_matrix wte;      ///< untied checkpoints only (K = C, N = V, columns are rows of wte)
  std::vector<float> wpe;          ///< [P][C]
  std::vector<float> ln_f_w, ln_f_b;
  std::vector<cpu_block_weights> blocks;

  /// Whether the LM head is the token embedding (wte empty).
  bool tied() const noexcept { return wte.n() == 0; }
  /// The embedding of `token` (C floats) into `out`.
  void embed(int token, float* out) const noexcept { (tied() ? lm_head : wte).column(token, out); }
  /// Bytes held.
  std::size_t bytes() const noexcept;
  /// Bytes one decode step reads: every packed matrix once, the LM head included.
  std::size_t bytes_per_step() const noexcept;
};

/// The kernels' weight type of a compute dtype's linear layers (int4: the embedding and head are int8).
kernels::weight_type weight_type_of(compute_dtype d) noexcept;

/// Loads `dir`. Accepts keys with or without the `transformer.` prefix and ignores the
/// non-parameter buffers older checkpoints carry. Throws std::runtime_error naming the file and
/// the tensor for a missing tensor, a wrong shape or an unsupported dtype.
cpu_weights load_cpu_weights(const std::string& dir, compute_dtype dtype);

} // namespace lf::engine
