#pragma once
/// Training a GPT-2 from text, or a LoRA adapter on a frozen GPT-2, with AdamW, warmup + cosine
/// learning rate, gradient clipping, a held-out validation split and resumable checkpoints.
/// This header is torch-free; trainer.cpp is one of the two files that include <torch/torch.h>.
///
/// Output directory of a run:
///
///   OUT/config.json, model.safetensors, vocab.json, merges.txt   base model (when finished)
///   OUT/adapter_config.json, adapter_model.safetensors           LoRA adapter (when finished)
///   OUT/checkpoint/   f32 weights (same formats), optimizer.pt, train_state.json: what --resume reads

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"
#include "worker/engine/lora/lora_adapter.hpp"

namespace lf::train {

/// Precision of the matrix products in training (master weights are always f32).
enum class precision { f32, bf16 };

/// Parses "f32" / "bf16"; throws std::invalid_argument otherwise.
precision parse_precision(const std::string& s);

/// Everything a training run needs. Defaults suit the base model; the CLI changes a few for LoRA.
struct train_options {
  std::vector<std::string> corpus_files;
  std::string out_dir;
  /// vocab.json + merges.txt: tokenizes the corpus and is copied next to a trained base model.
  std::string tokenizer_dir;

  engine::gpt2_config config; ///< Shape of a new base model (ignored for LoRA).
  double init_std = 0.02;
  /// Non-empty: train a LoRA adapter on this frozen base model directory instead of a base model.
  std::string base_dir;
  int lora_rank = 8;
  float lora_alpha = 16.0f;
  std::vector<engine::lora_module> lora_targets;

  int context = 256;         ///< Tokens per training window (at most the model's n_positions).
  double val_fraction = 0.05; ///< Held-out tail of every corpus file.
  double mix_power = 1.0;    ///< Files are drawn with probability ~ train_tokens^mix_power.

  std::int64_t steps = 1000; ///< Optimizer steps of the whole run (the cosine ends here).
  int batch = 8;             ///< Windows per optimizer step.
  int micro_batch = 0;       ///< Windows per forward/backward (gradient accumulation); 0 = batch.
  double lr = 6e-4;
  double min_lr_ratio = 0.1; ///< Final learning rate as a fraction of lr.
  std::int64_t warmup = 100;
  double weight_decay = 0.1; ///< On matrices and embeddings only (not biases or layer norms).
  double beta1 = 0.9, beta2 = 0.95;
  double grad_clip = 1.0;    ///< Max global gradient norm; <= 0 disables clipping.
  double dropout = 0.0;

  std::int64_t eval_every = 200; ///< Validation every N steps (and at the start and end).
  std::size_t eval_tokens = 32768; ///< Held-out tokens per file per validation; 0 = all.
  std::int64_t save_every = 0;   ///< Checkpoint every N steps; 0 = at each validation.
  std::int64_t log_every = 10;   ///< Progress line every N steps.

  std::uint64_t seed = 1337;
  int threads = 0;               ///< ATen intra-op threads; 0 = leave ATen's default.
  precision prec = precision::bf16;
  engine::dtype save_dtype = engine::dtype::f32; ///< Storage of the final model or adapter.
  bool resume = false;           ///< Continue from OUT/checkpoint.
  /// Stop after this many steps of this invocation (writing a checkpoint); 0 = run to `steps`.
  std::int64_t stop_after = 0;
};

/// Validation loss of one corpus file (mean cross entropy in nats per token).
struct stream_loss {
  std::string name;
  double loss = 0;
  std::int64_t tokens = 0; ///< Predicted held-out tokens.
};

/// One validation pass.
struct eval_record {
  std::int64_t step = 0; ///< Optimizer steps done when it ran.
  std::vector<stream_loss> streams;
  double mean = 0;       ///< Token-weighted over the streams.
};

/// What a run did.
struct train_result {
  std::int64_t first_step = 0;  ///< 0, or the step a resumed run started at.
  std::int64_t steps_done = 0;  ///< Optimizer steps done in total (including earlier runs).
  bool finished = false;        ///< Reached `steps` and wrote the final output.
  double last_train_loss = 0;
  std::vector<eval_record> evals;
  double seconds = 0;           ///< Wall time of this invocation's steps.
  double tokens_per_second = 0;
};

/// Trains a base model (base_dir empty) or a LoRA adapter, printing progress and validation lines
/// to `log` (flushed line by line, so it can be redirected to a file). Throws
/// std::invalid_argument for bad options, std::runtime_error for unreadable inputs, a missing
/// checkpoint on resume or a non-finite loss.
train_result run_training(const train_options& opts, std::ostream& log);

/// Sets ATen's intra-op thread count (n > 0); returns the count in effect.
int set_train_threads(int n);

/// Inputs of evaluate_model().
struct eval_options {
  std::string model_dir;
  std::string adapter_dir;   ///< Optional PEFT adapter applied on the model.
  std::string tokenizer_dir;
  std::vector<std::string> corpus_files;
  double val_fraction = 0.05;
  int context = 256;
  std::size_t eval_tokens = 0; ///< 0 = the whole held-out tail.
  int micro_batch = 8;
  precision prec = precision::f32;
};

/// Held-out loss of a model (plus adapter) on each corpus file's validation tail, split exactly
/// as run_training splits it.
std::vector<stream_loss> evaluate_model(const eval_options& opts);

} // namespace lf::train
