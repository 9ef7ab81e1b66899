#pragma once
/// LoRA adapters for GPT-2 in Hugging Face PEFT's on-disk format (adapter ids and their
/// directories: adapter_paths.hpp).
///
/// A PEFT adapter directory holds adapter_config.json and adapter_model.safetensors. For each
/// adapted Conv1D module W (in -> out) of layer i the file carries
///
///   base_model.model.transformer.h.{i}.{module}.lora_A.weight   [r, in]
///   base_model.model.transformer.h.{i}.{module}.lora_B.weight   [out, r]
///
/// and the adapted output is  y = x W + scale * (x A^T) B^T  with scale = alpha / r (or
/// alpha / sqrt(r) with rsLoRA). GPT-2's modules are Conv1D, so PEFT saves them with
/// fan_in_fan_out = true, yet A and B keep the shapes above either way.
/// Pure C++17 (safetensors + nlohmann_json); no torch.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"

namespace lf::engine {

/// The GPT-2 modules a LoRA adapter can target, in the order they run within a block.
enum class lora_module : std::uint8_t { attn_c_attn, attn_c_proj, mlp_c_fc, mlp_c_proj };

/// Every lora_module, in enum order.
inline constexpr std::array<lora_module, 4> all_lora_modules = {
  lora_module::attn_c_attn, lora_module::attn_c_proj, lora_module::mlp_c_fc,
  lora_module::mlp_c_proj};

/// The module's path inside a GPT-2 block: "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj".
std::string_view to_string(lora_module m) noexcept;

/// Inverse of to_string (full names only, so "c_proj" is std::nullopt: it is ambiguous).
std::optional<lora_module> parse_lora_module(std::string_view s) noexcept;

/// Parses a comma-separated target list the way PEFT matches module names: "attn.c_attn",
/// "attn.c_proj", "mlp.c_fc", "mlp.c_proj" by full name, "c_attn" and "c_fc" as suffixes of their
/// only module, "c_proj" as both projections, "all" or "all-linear" as all four. Returns the
/// modules in enum order without duplicates. Throws std::invalid_argument naming an unknown entry
/// or for an empty list.
std::vector<lora_module> parse_lora_targets(std::string_view list);

/// Input and output widths of a module of `base`.
struct lora_dims {
  std::int64_t in = 0;
  std::int64_t out = 0;
};

/// c_attn: C -> 3C, attn.c_proj: C -> C, c_fc: C -> inner, mlp.c_proj: inner -> C.
lora_dims module_dims(const gpt2_config& base, lora_module m) noexcept;

/// What a tensor name of a PEFT adapter file addresses.
struct peft_key {
  int layer = 0;
  lora_module module = lora_module::attn_c_attn;
  bool is_b = false; ///< lora_B (else lora_A).
};

/// Decodes `base_model.model.[transformer.]h.{i}.{module}.lora_{A|B}[.{adapter}].weight` (i
/// decimal without leading zeros, adapter a name without '.'); std::nullopt for anything else.
std::optional<peft_key> parse_peft_key(std::string_view name) noexcept;

/// The name PEFT saves a factor under:
/// `base_model.model.transformer.h.{layer}.{module}.lora_A.weight` (or lora_B).
std::string peft_key_name(int layer, lora_module m, bool is_b);

/// The two low-rank factors of one adapted module, as row-major float32.
struct lora_pair {
  int layer = 0;
  lora_module module = lora_module::attn_c_attn;
  std::int64_t rank = 0;
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::vector<float> a; ///< lora_A: [rank, in].
  std::vector<float> b; ///< lora_B: [out, rank].
};

/// One LoRA adapter: a single rank and alpha shared by all its modules.
struct lora_adapter {
  std::string name; ///< Informational (the directory name when loaded).
  int rank = 0;
  float alpha = 0.0f;
  bool use_rslora = false;
  /// Sorted by (layer, module), at most one per (layer, module); find() relies on the order.
  std::vector<lora_pair> pairs;

  /// alpha / rank, or alpha / sqrt(rank) with rsLoRA.
  float scale() const noexcept;

  /// Bytes of float data held by `pairs` (what an adapter cache budgets).
  std::size_t bytes() const noexcept;

  /// The pair of (layer, m), or nullptr if the adapter leaves that module alone.
  const lora_pair* find(int layer, lora_module m) const noexcept;

  /// The distinct modules that have a pair in at least one layer, in enum order.
  std::vector<lora_module> modules() const;

  /// Throws std::invalid_argument if the adapter is inconsistent: rank <= 0, alpha not finite, a
  /// pair whose rank differs from `rank`, a negative layer or width, a or b sized wrongly for its
  /// rank/in/out, or pairs not strictly sorted by (layer, module).
  void validate() const;

  /// validate(), plus every pair's layer < base.n_layer and in/out equal to module_dims(base, m).
  void validate(const gpt2_config& base) const;
};

/// Reads a PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors) for
/// `base`, selecting modules as PEFT's check_target_module_exists does on GPT2LMHeadModel's
/// names ("transformer.h.{i}.{module}"):
/// - r and lora_alpha are required; use_rslora picks the scale; fan_in_fan_out is accepted either
///   way (the stored shapes do not depend on it).
/// - target_modules: a list of names that match exactly or as a "."-suffix ("c_proj" means both
///   attn.c_proj and mlp.c_proj; "h.1.mlp.c_fc" one module), a string (a regex PEFT full-matches;
///   a plain name also matches as a suffix), "all-linear" (all four modules), or absent (PEFT's
///   GPT-2 default, c_attn). exclude_modules takes modules back out, in the same forms.
/// - layers_to_transform (int or list; [] = all) restricts suffix matches to those layers, as in
///   PEFT; with a string target_modules it is refused, as PEFT's LoraConfig does.
/// - task_type, base_model_name_or_path, lora_dropout and other bookkeeping are ignored.
/// Tensors: keys as parse_peft_key() accepts them, dtype F32/F16/BF16. The tensors present decide
/// what is loaded; each must belong to a targeted (layer, module), and each targeted module needs
/// tensors in at least one layer (PEFT leaves missing layers at lora_B = 0, i.e. unchanged). The
/// result's `name` is the directory's last component.
/// Throws std::runtime_error naming the file (hence the directory) and the key for: a missing
/// directory or file, invalid JSON or safetensors, an ill-typed or missing key, r <= 0, a
/// non-finite lora_alpha, a config that targets nothing, settings that are not implemented
/// (peft_type other than "LORA", bias other than "none", use_dora, lora_bias, non-empty
/// rank_pattern, alpha_pattern, modules_to_save, layer_replication, target_parameters or
/// trainable_token_indices, a layers_pattern without "h", layers_to_transform past the base's
/// layers), an unexpected tensor (also DoRA vectors, biases), a lone lora_A or lora_B, a
/// duplicate, a layer >= base.n_layer, a shape that disagrees with r or `base`, an unsupported
/// dtype or a non-finite weight.
lora_adapter load_peft_adapter(const std::string& dir, const gpt2_config& base);

/// Writes `a` as a PEFT adapter directory (created if needed) that peft.PeftModel.from_pretrained
/// loads: adapter_model.safetensors with the standard key names, stored as `storage` (F32, F16 or
/// BF16), then adapter_config.json (target_modules = the full names of a.modules()). Both files
/// are written to a temporary name and renamed into place. `base_model` becomes
/// base_model_name_or_path (null when empty). Throws std::invalid_argument for an invalid adapter
/// (see validate()), an adapter without pairs or another storage dtype, std::runtime_error naming
/// the path on I/O errors.
void write_peft_adapter(const std::string& dir, const lora_adapter& a, dtype storage = dtype::f32,
                        const std::string& base_model = "");

/// A deterministic random adapter for tests and demos: every layer of `base`, each module of
/// `targets` (duplicates ignored), A and B both drawn from N(0, init_std^2) so, unlike PEFT's
/// initialisation (B = 0), it changes the model's output. The normals come from std::mt19937_64
/// (whose sequence the standard fixes) through a fixed Box-Muller formula, not from
/// std::normal_distribution, so a seed gives the same weights with any standard library.
/// Throws std::invalid_argument for rank <= 0, alpha or init_std not finite, init_std < 0, or no
/// targets.
lora_adapter make_random_adapter(const gpt2_config& base, int rank, float alpha,
                                 std::vector<lora_module> targets, std::uint64_t seed,
                                 float init_std = 0.02f);

} // namespace lf::engine
