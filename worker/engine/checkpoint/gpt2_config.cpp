#include "worker/engine/checkpoint/gpt2_config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace lf::engine {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw std::runtime_error(std::string(source) + ": " + what);
}

[[noreturn]] void fail_key(std::string_view source, const char* key, const std::string& what) {
  fail(source, "key \"" + std::string(key) + "\" " + what);
}

/// Reads the config's top-level keys with type checks that name the key.
class reader {
public:
  reader(const json& root, const std::string& source) : root_(root), source_(source) {}

  /// The key's value, or nullptr if absent or JSON null (Hugging Face writes null for "unset").
  const json* get(const char* key) const {
    auto it = root_.find(key);
    return it == root_.end() || it->is_null() ? nullptr : &*it;
  }

  int required_int(const char* key) const {
    if (auto* v = get(key))
      return to_int(key, *v);
    fail_key(source_, key, "is missing (required for GPT-2)");
  }

  int optional_int(const char* key, int fallback) const {
    auto* v = get(key);
    return v != nullptr ? to_int(key, *v) : fallback;
  }

  double optional_number(const char* key, double fallback) const {
    auto* v = get(key);
    if (v == nullptr)
      return fallback;
    if (!v->is_number())
      fail_key(source_, key, "must be a number, got " + v->dump());
    return v->get<double>();
  }

  bool optional_bool(const char* key, bool fallback) const {
    auto* v = get(key);
    if (v == nullptr)
      return fallback;
    if (!v->is_boolean())
      fail_key(source_, key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }

  std::string optional_string(const char* key, std::string fallback) const {
    auto* v = get(key);
    if (v == nullptr)
      return fallback;
    if (!v->is_string())
      fail_key(source_, key, "must be a string, got " + v->dump());
    return v->get<std::string>();
  }

private:
  int to_int(const char* key, const json& v) const {
    // Integers only: 12.0 or "12" in a config means someone edited it by hand; say so.
    if (!v.is_number_integer())
      fail_key(source_, key, "must be an integer, got " + v.dump());
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::numeric_limits<int>::max()
                               : (v.get<std::int64_t>() > std::numeric_limits<int>::max()
                                  || v.get<std::int64_t>() < std::numeric_limits<int>::min()))
      fail_key(source_, key, "is out of range: " + v.dump());
    return v.get<int>();
  }

  const json& root_;
  const std::string& source_;
};

bool supported_activation(const std::string& name) {
  return name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu";
}

} // namespace

void gpt2_config::validate(std::string_view source) const {
  auto positive = [&](const char* key, int value) {
    if (value <= 0)
      fail_key(source, key, "must be positive, got " + std::to_string(value));
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  positive("n_positions", n_positions);
  positive("vocab_size", vocab_size);
  // 4 * n_embd and 3 * n_embd (the fused qkv width) must fit in an int.
  if (n_embd > std::numeric_limits<int>::max() / 4)
    fail_key(source, "n_embd", "is too large: " + std::to_string(n_embd));
  if (n_embd % n_head != 0)
    fail_key(source, "n_embd", "(" + std::to_string(n_embd) + ") must be divisible by n_head ("
                                 + std::to_string(n_head) + ")");
  if (n_inner < 0)
    fail_key(source, "n_inner", "must be positive (or null for 4 * n_embd), got "
                                  + std::to_string(n_inner));
  if (!(layer_norm_epsilon > 0) || !std::isfinite(layer_norm_epsilon))
    fail_key(source, "layer_norm_epsilon", "must be a positive number");
  if (bos_token_id < 0)
    fail_key(source, "bos_token_id", "must not be negative");
  if (eos_token_id < 0)
    fail_key(source, "eos_token_id", "must not be negative");
  if (!supported_activation(activation_function))
    fail_key(source, "activation_function",
             "\"" + activation_function
               + "\" is not supported (expected \"gelu_new\", \"gelu_pytorch_tanh\" or \"gelu\")");
}

gpt2_config gpt2_config::parse(std::string_view json_text, const std::string& source) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(source, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object())
    fail(source, "not a JSON object");
  reader r(root, source);

  if (auto* type = r.get("model_type"); type != nullptr && *type != "gpt2")
    fail_key(source, "model_type", "is " + type->dump() + ", expected \"gpt2\"");

  gpt2_config c;
  c.n_layer = r.required_int("n_layer");
  c.n_head = r.required_int("n_head");
  c.n_embd = r.required_int("n_embd");
  c.vocab_size = r.required_int("vocab_size");
  // n_positions sizes the position table; very old configs only carry n_ctx.
  if (r.get("n_positions") != nullptr || r.get("n_ctx") == nullptr)
    c.n_positions = r.required_int("n_positions");
  else
    c.n_positions = r.required_int("n_ctx");
  c.n_inner = r.optional_int("n_inner", 0);
  c.layer_norm_epsilon = r.optional_number("layer_norm_epsilon", c.layer_norm_epsilon);
  c.bos_token_id = r.optional_int("bos_token_id", c.bos_token_id);
  c.eos_token_id = r.optional_int("eos_token_id", c.eos_token_id);
  c.activation_function = r.optional_string("activation_function", c.activation_function);
  c.tie_word_embeddings = r.optional_bool("tie_word_embeddings", c.tie_word_embeddings);

  // Variants that change attention's math; the engine implements neither, so refuse to load
  // rather than produce subtly wrong logits.
  if (!r.optional_bool("scale_attn_weights", true))
    fail_key(source, "scale_attn_weights", "is false, which is not supported");
  if (r.optional_bool("scale_attn_by_inverse_layer_idx", false))
    fail_key(source, "scale_attn_by_inverse_layer_idx", "is true, which is not supported");

  c.validate(source);
  if (c.n_inner == 0)
    c.n_inner = 4 * c.n_embd;
  return c;
}

gpt2_config gpt2_config::load(const std::string& config_json_path) {
  std::ifstream in(config_json_path, std::ios::binary);
  if (!in)
    fail(config_json_path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    fail(config_json_path, "read error");
  return parse(text.str(), config_json_path);
}

std::string gpt2_config::to_json() const {
  // Key order follows what transformers itself writes (alphabetical), so diffs against a
  // downloaded config.json stay small.
  nlohmann::ordered_json j;
  j["activation_function"] = activation_function;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["attn_pdrop"] = 0.1;
  j["bos_token_id"] = bos_token_id;
  j["embd_pdrop"] = 0.1;
  j["eos_token_id"] = eos_token_id;
  j["initializer_range"] = 0.02;
  j["layer_norm_epsilon"] = layer_norm_epsilon;
  j["model_type"] = "gpt2";
  j["n_ctx"] = n_positions;
  j["n_embd"] = n_embd;
  j["n_head"] = n_head;
  if (n_inner > 0 && n_inner != 4 * n_embd)
    j["n_inner"] = n_inner;
  else
    j["n_inner"] = nullptr;
  j["n_layer"] = n_layer;
  j["n_positions"] = n_positions;
  j["reorder_and_upcast_attn"] = false;
  j["resid_pdrop"] = 0.1;
  j["scale_attn_by_inverse_layer_idx"] = false;
  j["scale_attn_weights"] = true;
  j["summary_activation"] = nullptr;
  j["summary_first_dropout"] = 0.1;
  j["summary_proj_to_labels"] = true;
  j["summary_type"] = "cls_index";
  j["summary_use_proj"] = true;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["use_cache"] = true;
  j["vocab_size"] = vocab_size;
  return j.dump(2) + "\n";
}

void gpt2_config::save(const std::string& config_json_path) const {
  validate(config_json_path);
  const std::string text = to_json();
  const std::string tmp = config_json_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(config_json_path, "cannot create " + tmp + ": " + std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      fail(config_json_path, "cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), config_json_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(config_json_path, "cannot rename " + tmp + " into place: " + std::strerror(err));
  }
}

} // namespace lf::engine
