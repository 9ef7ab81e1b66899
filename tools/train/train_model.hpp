#pragma once
/// GPT-2 as a differentiable function of its weights, for training: the same architecture as the
/// engine's gpt2_model (pre-LN blocks, tanh-approximated GELU unless config says "gelu", lm_head
/// tied to wte, layer-norm epsilon from config), over a rectangular batch [B, T] with a causal
/// mask, optionally with trainable LoRA factors on the block projections.
///
/// Weights live in the engine's own gpt2_weights (f32 master copies, Conv1D [in, out] layout), so
/// a trained model is written with save_gpt2_checkpoint and read back by load_gpt2_weights.
/// ATen only (autograd works through at:: ops); the optimizer lives in trainer.cpp.
///
/// With precision::bf16 the master weights, layer norms, softmax and residual stream stay f32 and
/// only the operands of the matrix products are cast (oneDNN runs bf16 products on AMX/AVX-512
/// about 5x faster than f32 on this project's machines).

#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/train/trainer.hpp"
#include "worker/engine/lora/lora_adapter.hpp"
#include "worker/engine/reference/weights.hpp"

namespace lf::train {

/// A freshly initialised GPT-2 as Hugging Face's GPT2PreTrainedModel._init_weights does it:
/// weights and embeddings N(0, init_std^2), the residual projections (attn.c_proj, mlp.c_proj)
/// N(0, init_std^2 / (2 n_layer)), biases 0, layer norms weight 1 and bias 0. Owned f32 tensors,
/// lm_head tied to wte. Deterministic in `seed`.
engine::gpt2_weights init_gpt2(const engine::gpt2_config& cfg, std::uint64_t seed,
                               double init_std = 0.02);

/// A deep copy as owned, contiguous f32 tensors (loaded weights may point into a read-only
/// memory map), lm_head tied to wte. Throws std::invalid_argument if `w` has an untied lm_head.
engine::gpt2_weights owned_copy(const engine::gpt2_weights& w);

/// The trainable tensors of `w` in a fixed order (wte, wpe, each block's 12, ln_f weight and bias;
/// lm_head is wte). The order is what optimizer checkpoints are keyed by.
std::vector<at::Tensor> parameter_list(const engine::gpt2_weights& w);

/// Trainable LoRA factors for the modules of every layer: y += scale * (x A^T) B^T.
struct lora_weights {
  int rank = 0;
  float alpha = 0.0f;
  bool rslora = false;  ///< rank-stabilized scaling (PEFT's use_rslora)
  /// a[layer][module], b[layer][module] (module in lora_module order); undefined tensors for
  /// modules that are not adapted.
  std::vector<std::array<at::Tensor, 4>> a, b;

  /// alpha / rank, or alpha / sqrt(rank) with rsLoRA (as PEFT and the engine scale it).
  float scale() const noexcept {
    return rslora ? alpha / std::sqrt(static_cast<float>(rank)) : alpha / static_cast<float>(rank);
  }
  /// The defined factors, A then B per (layer, module), in (layer, module) order.
  std::vector<at::Tensor> parameters() const;
};

/// PEFT's initialisation: A uniform in +-1/sqrt(in) (kaiming_uniform_ with a = sqrt(5)), B = 0, so
/// the adapted model starts equal to the base. Throws std::invalid_argument for rank <= 0 or no
/// targets.
lora_weights init_lora(const engine::gpt2_config& base, int rank, float alpha,
                       const std::vector<engine::lora_module>& targets, std::uint64_t seed);

/// Trainable copies of a loaded adapter's factors (for resuming and evaluation), rsLoRA's scaling
/// kept.
lora_weights lora_from_adapter(const engine::lora_adapter& a, const engine::gpt2_config& base);

/// The factors as the engine's adapter struct, ready for write_peft_adapter.
engine::lora_adapter lora_to_adapter(const lora_weights& l, const std::string& name);

/// How forward runs.
struct forward_options {
  precision prec = precision::f32;
  double dropout = 0.0;              ///< on the embeddings and both residual branches
  bool training = false;             ///< dropout only applies when training
  const lora_weights* lora = nullptr;
};

/// The final-layer-normed hidden states, float32 [B * T, C], for token ids [B, T] (int64).
at::Tensor forward_hidden(const engine::gpt2_weights& w, const at::Tensor& ids,
                          const forward_options& opts);

/// float32 logits [B, T, V] for token ids [B, T] (int64): forward_hidden then the tied lm_head.
at::Tensor forward_logits(const engine::gpt2_weights& w, const at::Tensor& ids,
                          const forward_options& opts);

/// Mean next-token cross entropy of `windows` (int64 [B, T + 1]): predicts tokens 1..T from
/// 0..T-1, through ATen's autograd end to end (the reference train_backward is checked against).
at::Tensor lm_loss(const engine::gpt2_weights& w, const at::Tensor& windows,
                   const forward_options& opts);

/// One forward and backward pass over `windows` (int64 [B, T + 1]), accumulating
/// d(loss_scale * mean loss)/d(parameter) into the .grad of every tensor that requires grad (the
/// base weights, or only the LoRA factors). The head runs outside autograd through the fused
/// kernel of xent_kernel.hpp: the [B * T, V] logits are computed once in the compute dtype,
/// overwritten by their gradient and multiplied back, which is what makes training with the
/// 50257-token vocabulary affordable. Returns the mean loss (unscaled).
/// `workspace`, if given, keeps the logits buffer between calls: allocating its hundreds of MB
/// afresh costs a page fault per 4 KiB every step.
double train_backward(const engine::gpt2_weights& w, const at::Tensor& windows,
                      const forward_options& opts, double loss_scale,
                      at::Tensor* workspace = nullptr);

/// Sum (not mean) of the next-token losses of `windows` and the number of predicted tokens,
/// without autograd and in micro-batches of `micro_batch` rows. `windows`: int32 row-major, rows of
/// `length` tokens.
std::pair<double, std::int64_t> sum_loss(const engine::gpt2_weights& w,
                                         const std::vector<std::int32_t>& windows, int length,
                                         int micro_batch, const forward_options& opts);

/// Sum over rows of the softmax cross entropy of `logits` ([N, V], float32 or bfloat16,
/// contiguous) against `targets` (int64 [N]); with `write_grad`, logits become
/// grad_scale * (softmax - onehot) in place. Rows run in parallel on ATen's threads. Throws
/// std::invalid_argument for a target outside [0, V).
double fused_xent_(at::Tensor& logits, const at::Tensor& targets, double grad_scale,
                   bool write_grad);

} // namespace lf::train
