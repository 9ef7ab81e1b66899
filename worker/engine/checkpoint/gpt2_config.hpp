#pragma once
/// The GPT-2 hyper-parameters of a Hugging Face checkpoint's config.json. Pure C++17.

#include <string>
#include <string_view>

#include "core/request.hpp"

namespace lf::engine {

/// GPT-2 model shape and the few settings the forward pass depends on. Defaults are gpt2 (124M).
struct gpt2_config {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int n_positions = 1024; ///< Context length (size of the position embedding).
  int vocab_size = 50257;
  /// Width of the MLP's hidden layer; 0 means 4 * n_embd. load() always stores the resolved value.
  /// Read it through inner_dim().
  int n_inner = 0;
  double layer_norm_epsilon = 1e-5;
  int bos_token_id = 50256;
  int eos_token_id = 50256;
  /// "gelu_new" or "gelu_pytorch_tanh" (the tanh approximation, same math) or "gelu" (exact erf).
  std::string activation_function = "gelu_new";
  /// The LM head is the token embedding (Hugging Face's default); false: the checkpoint carries
  /// its own lm_head.weight.
  bool tie_word_embeddings = true;

  /// n_embd / n_head.
  int head_dim() const noexcept { return n_head > 0 ? n_embd / n_head : 0; }

  /// The MLP's hidden width: n_inner, or 4 * n_embd when n_inner is 0.
  int inner_dim() const noexcept { return n_inner > 0 ? n_inner : 4 * n_embd; }

  /// What requests for this model are validated against (core/request.hpp): its context window
  /// and vocabulary, the default policy limits.
  request_limits limits() const noexcept {
    request_limits l;
    l.context_window = static_cast<std::uint32_t>(n_positions);
    l.vocab_size = static_cast<std::size_t>(vocab_size);
    return l;
  }

  /// True for the exact erf GELU ("gelu"), false for the tanh approximation.
  bool exact_gelu() const noexcept { return activation_function == "gelu"; }

  /// Throws std::runtime_error, prefixed with `source`, if a field is out of range or inconsistent:
  /// non-positive sizes, n_embd % n_head != 0, negative n_inner, layer_norm_epsilon not > 0,
  /// negative token ids, an unsupported activation_function.
  void validate(std::string_view source = "gpt2_config") const;

  /// Reads a Hugging Face GPT-2 config.json. Required: n_layer, n_head, n_embd, vocab_size and
  /// n_positions (or the legacy n_ctx). Optional with Hugging Face's defaults: n_inner (null = 4 *
  /// n_embd), layer_norm_epsilon, bos_token_id, eos_token_id, activation_function. Other keys are
  /// ignored, except settings that change the math and are not implemented
  /// (scale_attn_weights false, scale_attn_by_inverse_layer_idx true), which are rejected.
  /// Throws std::runtime_error naming the file and the key on a missing or ill-typed key, invalid
  /// JSON or a value validate() rejects.
  static gpt2_config load(const std::string& config_json_path);

  /// Parses config.json text; `source` names it in error messages. load() without the file.
  static gpt2_config parse(std::string_view json_text, const std::string& source);

  /// The config.json text save() writes (2-space indented, trailing newline).
  std::string to_json() const;

  /// Writes a config.json that transformers' GPT2LMHeadModel.from_pretrained accepts: the fields
  /// above plus "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", n_ctx = n_positions
  /// and GPT-2's usual dropout/initializer/summary settings. Validates first; writes
  /// `path`.tmp and renames it into place. Throws std::runtime_error naming the path.
  void save(const std::string& config_json_path) const;
};

} // namespace lf::engine
