#pragma once
/// Tiny seeded GPT-2 checkpoints written by the tests themselves (no downloads).

#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"
#include "worker/engine/reference/model_writer.hpp"

namespace lf::test {

/// A 2-layer GPT-2 with the real 50257-token vocabulary. init_std 0.3 makes logits peaked so
/// greedy choices are decided by the model, not by float rounding.
inline engine::gpt2_config tiny_config(int layers = 2, int heads = 4, int embd = 64, int context = 256) {
  engine::gpt2_config c;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = embd;
  c.n_inner = 4 * embd;
  c.n_positions = context;
  return c;
}

/// Writes a tiny model into `dir` and returns its path.
inline std::string write_tiny_model(const temp_dir& dir, const std::string& name = "model",
                                    engine::dtype storage = engine::dtype::f32,
                                    bool prefix = false, bool tied = true, std::uint64_t seed = 42,
                                    engine::gpt2_config cfg = tiny_config()) {
  engine::random_model_options o;
  o.config = cfg;
  o.seed = seed;
  o.init_std = 0.3;
  o.storage = storage;
  o.transformer_prefix = prefix;
  o.tied_lm_head = tied;
  o.tokenizer_dir = std::string(LF_SOURCE_DIR) + "/models/tokenizer";
  auto out = dir / name;
  engine::write_random_model(out, o);
  return out;
}

/// The tiny model in a temporary directory, written once per test binary.
inline const std::string& tiny_model_dir() {
  static temp_dir tmp;
  static std::string dir = write_tiny_model(tmp);
  return dir;
}

/// Eight short English prompts of different lengths, for the tests that serve the tiny model.
inline const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
    "Once upon a time", "The quick brown fox jumps over the lazy dog", "Hi",
    "To be, or not to be, that is the question", "In the beginning God created the heaven",
    "Four score and seven years ago", "It was the best of times, it was the worst of times",
    "Call me Ishmael."};
  return p;
}

} // namespace lf::test
