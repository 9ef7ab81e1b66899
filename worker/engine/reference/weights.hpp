#pragma once
/// GPT-2 weights as ATen tensors, loaded from a Hugging Face checkpoint directory
/// (config.json + model.safetensors). Only worker/engine/ includes ATen.

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/model/compute_dtype.hpp"

namespace lf::engine {

class safetensors_file;

/// One transformer block. Conv1D weights keep Hugging Face's [in, out] layout so `x.mm(w)` needs no
/// transpose and f32 checkpoints are used in place (no copy).
struct gpt2_block_weights {
  at::Tensor ln_1_w, ln_1_b;
  at::Tensor attn_w, attn_b;  ///< c_attn: [C, 3C], [3C]
  at::Tensor proj_w, proj_b;  ///< attn.c_proj: [C, C], [C]
  at::Tensor ln_2_w, ln_2_b;
  at::Tensor fc_w, fc_b;      ///< mlp.c_fc: [C, 4C], [4C]
  at::Tensor mproj_w, mproj_b;///< mlp.c_proj: [4C, C], [C]
  /// compute_dtype::int8 only: the four weights above are int8 and these are their per-output-
  /// column scales (int8_linear.hpp); undefined otherwise.
  at::Tensor attn_s, proj_s, fc_s, mproj_s;
};

/// All weights of a GPT2LMHeadModel. `lm_head` is `wte` itself when the checkpoint ties them.
struct gpt2_weights {
  gpt2_config config;
  at::Tensor wte;  ///< [V, C]
  at::Tensor wpe;  ///< [P, C]
  std::vector<gpt2_block_weights> blocks;
  at::Tensor ln_f_w, ln_f_b;
  at::Tensor lm_head;  ///< [V, C]
  compute_dtype dtype = compute_dtype::f32;
  /// Keeps the memory map alive while f32 tensors point into it.
  std::shared_ptr<const safetensors_file> backing;

  /// Bytes of weight data one decode step must read (every parameter once at its stored width;
  /// lm_head counted once even when tied, since the embedding lookup touches only a few rows).
  std::size_t bytes_per_step() const;
  /// Bytes of all weights as stored (tied lm_head counted once; int8 scales included).
  std::size_t bytes() const;
  /// Total parameter count (tied lm_head counted once).
  std::int64_t num_parameters() const;
};

/// Loads `dir`/config.json and `dir`/model.safetensors. Accepts keys with or without the
/// `transformer.` prefix, F32/F16/BF16 data, a missing lm_head (tied to wte). Ignores the
/// non-parameter buffers older checkpoints carry (`attn.bias`, `attn.masked_bias`).
/// Throws std::runtime_error naming the file and tensor for a missing tensor or wrong shape.
gpt2_weights load_gpt2_weights(const std::string& dir, compute_dtype dtype = compute_dtype::f32);

} // namespace lf::engine
