#pragma once
/// Writing GPT-2 checkpoints in the Hugging Face layout (config.json + model.safetensors +
/// tokenizer files): random models for tests and demos, and later trained ones.

#include <cstdint>
#include <string>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"

namespace lf::engine {

struct gpt2_weights;

/// How make-model initialises and stores a random GPT-2.
struct random_model_options {
  gpt2_config config;
  std::uint64_t seed = 0;
  /// Standard deviation of weight matrices (GPT-2 uses 0.02). Tests use larger values so logits
  /// are peaked and greedy choices are not decided by float rounding.
  double init_std = 0.02;
  dtype storage = dtype::f32;          ///< F32, F16 or BF16 on disk
  bool transformer_prefix = false;     ///< keys `transformer.h.0...` (GPT2LMHeadModel) or `h.0...`
  bool tied_lm_head = true;            ///< false writes an explicit lm_head.weight
  std::string tokenizer_dir;           ///< vocab.json + merges.txt copied from here (if non-empty)
};

/// Writes `w` as `out_dir`/config.json + model.safetensors (creating the directory).
void save_gpt2_checkpoint(const gpt2_weights& w, const std::string& out_dir, dtype storage,
                          bool transformer_prefix = false, bool tied_lm_head = true);

/// Builds a GPT-2 with seeded random weights (biases and layer norms randomised too, so a loader
/// that drops them fails the tests) and writes it with save_gpt2_checkpoint plus tokenizer files.
void write_random_model(const std::string& out_dir, const random_model_options& opts);

/// The same random weights in memory (f32), without touching the disk.
gpt2_weights make_random_weights(const gpt2_config& cfg, std::uint64_t seed, double init_std);

} // namespace lf::engine
