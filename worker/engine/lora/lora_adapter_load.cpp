// load_peft_adapter: reading PEFT LoRA adapter directories (adapter_config.json + safetensors).

#include "worker/engine/lora/lora_adapter.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace lf::engine {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error("lora adapter: " + file + ": " + what);
}

[[noreturn]] void fail_key(const std::string& file, std::string_view key, const std::string& what) {
  fail(file, "key \"" + std::string(key) + "\" " + what);
}

std::string dims_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// --- adapter_config.json --------------------------------------------------------------------

/// One of PEFT's module selectors (target_modules, exclude_modules). PEFT matches them against a
/// module's name in GPT2LMHeadModel ("transformer.h.3.attn.c_attn"): a string is a regex it
/// re.fullmatch()es, a list holds names that match exactly or as a "."-suffix ("c_proj" picks
/// both attn.c_proj and mlp.c_proj).
struct name_selector {
  enum class hit { none, exact, suffix };

  std::optional<std::regex> regex;
  std::vector<std::string> names;

  bool empty() const { return !regex && names.empty(); }

  hit match(const std::string& full, const std::string& tail) const {
    // GPT2Model-based adapters name modules without "transformer.": try regexes on both.
    if (regex && (std::regex_match(full, *regex) || std::regex_match(tail, *regex)))
      return hit::exact;
    hit found = hit::none;
    for (const auto& n : names) {
      if (full == n)
        return hit::exact;
      if (full.size() > n.size() && full.compare(full.size() - n.size(), n.size(), n) == 0
          && full[full.size() - n.size() - 1] == '.')
        found = hit::suffix;
    }
    return found;
  }
};

/// What adapter_config.json says: the scale and which (layer, module) pairs are adapted.
struct peft_config {
  int rank = 0;
  float alpha = 0.0f;
  bool use_rslora = false;
  name_selector target;
  bool all_linear = false;
  name_selector exclude;
  std::optional<std::vector<int>> layers; ///< layers_to_transform; nullopt = every layer.

  /// PEFT's check_target_module_exists for GPT-2 names.
  bool targets(int layer, lora_module m) const {
    const std::string tail = "h." + std::to_string(layer) + "." + std::string(to_string(m));
    const std::string full = "transformer." + tail;
    if (exclude.match(full, tail) != name_selector::hit::none)
      return false;
    if (all_linear) // every Linear/Conv1D but the output head: all four modules here
      return true;
    const auto hit = target.match(full, tail);
    // Like PEFT, layers_to_transform only filters suffix matches; an exact name is one layer.
    if (hit == name_selector::hit::suffix && layers)
      return std::find(layers->begin(), layers->end(), layer) != layers->end();
    return hit != name_selector::hit::none;
  }
};

/// The key's value, or nullptr if absent or JSON null (PEFT writes null for "unset").
const json* get(const json& root, const char* key) {
  auto it = root.find(key);
  return it == root.end() || it->is_null() ? nullptr : &*it;
}

bool optional_bool(const json& root, const std::string& file, const char* key) {
  const json* v = get(root, key);
  if (v == nullptr)
    return false;
  if (!v->is_boolean())
    fail_key(file, key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

int json_int(const std::string& file, const char* key, const json& v) {
  constexpr std::int64_t lo = std::numeric_limits<int>::min(), hi = std::numeric_limits<int>::max();
  if (!v.is_number_integer()
      || (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                                 : v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi))
    fail_key(file, key, "must be an integer, got " + v.dump());
  return v.get<int>();
}

/// A pattern map (rank_pattern, alpha_pattern) or list (modules_to_save, layer_replication) that
/// must be absent or empty because the feature behind it is not implemented.
void reject_non_empty(const json& root, const std::string& file, const char* key,
                      const char* feature) {
  const json* v = get(root, key);
  if (v != nullptr && !((v->is_object() || v->is_array()) && v->empty()))
    fail_key(file, key, "is " + v->dump() + ", but " + feature + " is not supported");
}

/// Reads target_modules or exclude_modules; false if the key is absent or null.
bool parse_selector(const json& root, const std::string& file, const char* key,
                    name_selector& out) {
  const json* v = get(root, key);
  if (v == nullptr)
    return false;
  if (v->is_string()) {
    const auto s = v->get<std::string>();
    try {
      out.regex.emplace(s, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail_key(file, key, "is not a regular expression this reader understands: " + v->dump()
                            + " (" + e.what() + ")");
    }
    // PEFT full-matches the string only; a plain name also matching as a suffix is a harmless
    // leniency (PEFT itself would have refused to build an adapter that matches nothing).
    out.names = {s};
  } else if (v->is_array()) {
    for (const auto& t : *v) {
      if (!t.is_string() || t.get<std::string>().empty())
        fail_key(file, key, "must hold non-empty strings, got " + t.dump());
      out.names.push_back(t.get<std::string>());
    }
  } else {
    fail_key(file, key, "must be a list of strings or a string, got " + v->dump());
  }
  return true;
}

void parse_targets(const json& root, const std::string& file, peft_config& c) {
  const json* v = get(root, "target_modules");
  if (v != nullptr && *v == "all-linear")
    c.all_linear = true;
  else if (!parse_selector(root, file, "target_modules", c.target))
    c.target.names = {"c_attn"}; // PEFT's default for gpt2 when target_modules is unset
  parse_selector(root, file, "exclude_modules", c.exclude);
}

void parse_layers(const json& root, const std::string& file, int n_layer, peft_config& c) {
  const json* v = get(root, "layers_to_transform");
  if (v == nullptr || (v->is_array() && v->empty())) // PEFT: [] means every layer too
    return;
  if (const json* t = get(root, "target_modules"); t != nullptr && t->is_string())
    fail_key(file, "layers_to_transform", "cannot be combined with a string target_modules "
                                          "(PEFT's LoraConfig refuses that too)");
  std::vector<int> layers;
  if (v->is_array()) {
    for (const auto& e : *v)
      layers.push_back(json_int(file, "layers_to_transform", e));
  } else {
    layers.push_back(json_int(file, "layers_to_transform", *v));
  }
  for (int l : layers)
    if (l < 0 || l >= n_layer)
      fail_key(file, "layers_to_transform", "names layer " + std::to_string(l)
                                              + ", but the base model has "
                                              + std::to_string(n_layer) + " layers");
  // PEFT finds the layer index after "<layers_pattern>." (any name when empty); GPT-2's blocks
  // live in "h", so a pattern list must include it.
  if (const json* p = get(root, "layers_pattern"); p != nullptr) {
    const bool fits =
      p->is_string() ? (*p == "" || *p == "h")
                     : p->is_array() && (p->empty() || std::count(p->begin(), p->end(), "h") > 0);
    if (!fits)
      fail_key(file, "layers_pattern", "is " + p->dump() + ", but GPT-2's layers are \"h\"");
  }
  c.layers = std::move(layers);
}

peft_config parse_config(const std::string& file, const gpt2_config& base) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(file, "cannot open (missing adapter config?)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    fail(file, "read error");
  json root;
  try {
    root = json::parse(text.str());
  } catch (const json::exception& e) {
    fail(file, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object())
    fail(file, "not a JSON object");

  if (const json* t = get(root, "peft_type"); t != nullptr && *t != "LORA")
    fail_key(file, "peft_type", "is " + t->dump() + ", expected \"LORA\"");
  if (const json* b = get(root, "bias"); b != nullptr && *b != "none")
    fail_key(file, "bias", "is " + b->dump() + ", but only \"none\" is supported");
  if (optional_bool(root, file, "use_dora"))
    fail_key(file, "use_dora", "is true, but DoRA is not supported");
  if (optional_bool(root, file, "lora_bias"))
    fail_key(file, "lora_bias", "is true, but a bias on lora_B is not supported");
  reject_non_empty(root, file, "rank_pattern", "a per-module rank");
  reject_non_empty(root, file, "alpha_pattern", "a per-module alpha");
  reject_non_empty(root, file, "modules_to_save", "saving whole modules");
  reject_non_empty(root, file, "layer_replication", "layer replication");
  reject_non_empty(root, file, "target_parameters", "LoRA on bare parameters");
  reject_non_empty(root, file, "trainable_token_indices", "training token embeddings");
  optional_bool(root, file, "fan_in_fan_out"); // type-checked only: shapes are the same either way

  peft_config c;
  const json* r = get(root, "r");
  if (r == nullptr)
    fail_key(file, "r", "is missing");
  c.rank = json_int(file, "r", *r);
  if (c.rank <= 0)
    fail_key(file, "r", "must be positive, got " + r->dump());
  const json* alpha = get(root, "lora_alpha");
  if (alpha == nullptr)
    fail_key(file, "lora_alpha", "is missing");
  if (!alpha->is_number() || !std::isfinite(alpha->get<double>())
      || std::abs(alpha->get<double>()) > std::numeric_limits<float>::max())
    fail_key(file, "lora_alpha", "must be a finite number, got " + alpha->dump());
  c.alpha = alpha->get<float>();
  c.use_rslora = optional_bool(root, file, "use_rslora");
  parse_targets(root, file, c);
  parse_layers(root, file, base.n_layer, c);
  return c;
}

// --- adapter_model.safetensors ----------------------------------------------------------------

std::string unexpected_key_reason(std::string_view key) {
  if (key.find("lora_magnitude_vector") != std::string_view::npos)
    return "is a DoRA magnitude vector; DoRA is not supported";
  if (key.find("lora_embedding") != std::string_view::npos)
    return "is an embedding LoRA; only attn.c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj are "
           "supported";
  if (key.size() >= 5 && key.substr(key.size() - 5) == ".bias")
    return "is a bias; LoRA biases are not supported";
  return "is not a LoRA weight of a GPT-2 block (expected base_model.model.[transformer.]h.{i}."
         "{attn.c_attn|attn.c_proj|mlp.c_fc|mlp.c_proj}.lora_{A|B}.weight)";
}

/// Checks dtype and shape of lora_A ([rank, in]) or lora_B ([out, rank]), then widens to float32
/// and refuses NaN/inf.
std::vector<float> read_factor(const std::string& file, const tensor_view& t, bool is_b,
                               std::int64_t rank, lora_dims dims, lora_module m) {
  if (t.type != dtype::f32 && t.type != dtype::f16 && t.type != dtype::bf16)
    fail_key(file, t.name, "has dtype " + std::string(to_string(t.type))
                             + "; only F32, F16 and BF16 are supported");
  const std::vector<std::int64_t> want = is_b ? std::vector<std::int64_t>{dims.out, rank}
                                              : std::vector<std::int64_t>{rank, dims.in};
  if (t.shape != want) {
    const std::string r = "r=" + std::to_string(rank);
    std::string what = "has shape " + dims_text(t.shape) + ", expected "
                       + (is_b ? "[out=" + std::to_string(dims.out) + ", " + r + "]"
                               : "[" + r + ", in=" + std::to_string(dims.in) + "]")
                       + " for " + std::string(to_string(m)) + " of the base model";
    const std::size_t rank_dim = is_b ? 1 : 0;
    if (t.shape.size() == 2 && t.shape[1 - rank_dim] == want[1 - rank_dim])
      what += " (the rank differs from r in adapter_config.json; per-module ranks are not "
              "supported)";
    fail_key(file, t.name, what);
  }
  std::vector<float> out = to_float32(t);
  for (float v : out)
    if (!std::isfinite(v))
      fail_key(file, t.name, "contains a NaN or infinite value");
  return out;
}

} // namespace

lora_adapter load_peft_adapter(const std::string& dir, const gpt2_config& base) {
  base.validate("lora adapter " + dir + ": base model config");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(dir, fs::exists(dir, ec) ? "not a directory" : "adapter directory does not exist");
  const std::string config_file = (fs::path(dir) / "adapter_config.json").string();
  const std::string weights_file = (fs::path(dir) / "adapter_model.safetensors").string();
  if (!fs::exists(config_file, ec))
    fail(config_file, "missing (not a PEFT adapter directory?)");
  const peft_config config = parse_config(config_file, base);
  std::vector<lora_module> targeted;
  for (auto m : all_lora_modules)
    for (int l = 0; l < base.n_layer; ++l)
      if (config.targets(l, m)) {
        targeted.push_back(m);
        break;
      }
  if (targeted.empty())
    fail_key(config_file, "target_modules",
             "(with layers_to_transform) matches no attn.c_attn, attn.c_proj, mlp.c_fc or "
             "mlp.c_proj of the base model");

  if (!fs::exists(weights_file, ec)) {
    fail(weights_file, fs::exists(fs::path(dir) / "adapter_model.bin", ec)
                         ? "missing (adapter_model.bin is there, but only safetensors is read)"
                         : "missing");
  }
  safetensors_file file;
  try {
    file = safetensors_file::open(weights_file);
  } catch (const std::exception& e) {
    throw std::runtime_error("lora adapter: " + weights_file + ": " + e.what());
  }

  // Pair up lora_A and lora_B per (layer, module), checking each key as it comes.
  struct slot {
    const tensor_view* a = nullptr;
    const tensor_view* b = nullptr;
  };
  std::map<std::pair<int, lora_module>, slot> slots;
  for (const auto& t : file.tensors()) {
    auto k = parse_peft_key(t.name);
    if (!k)
      fail_key(weights_file, t.name, unexpected_key_reason(t.name));
    if (k->layer >= base.n_layer)
      fail_key(weights_file, t.name, "is for layer " + std::to_string(k->layer)
                                       + ", but the base model has " + std::to_string(base.n_layer)
                                       + " layers");
    if (!config.targets(k->layer, k->module))
      fail_key(weights_file, t.name, "is for a module adapter_config.json does not target "
                                     "(target_modules, exclude_modules, layers_to_transform)");
    slot& both = slots[{k->layer, k->module}];
    const tensor_view*& dst = k->is_b ? both.b : both.a;
    if (dst != nullptr)
      fail_key(weights_file, t.name, "duplicates \"" + dst->name + "\"");
    dst = &t;
  }

  lora_adapter out;
  out.name = fs::path(dir).lexically_normal().filename().string();
  if (out.name.empty())
    out.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  out.rank = config.rank;
  out.alpha = config.alpha;
  out.use_rslora = config.use_rslora;
  out.pairs.reserve(slots.size());
  for (const auto& [where, s] : slots) { // std::map order is (layer, module): already sorted
    if (s.a == nullptr || s.b == nullptr) {
      const tensor_view* have = s.a != nullptr ? s.a : s.b;
      fail_key(weights_file, have->name, std::string("has no matching ")
                                           + (s.a == nullptr ? "lora_A" : "lora_B") + " tensor");
    }
    const auto dims = module_dims(base, where.second);
    lora_pair p;
    p.layer = where.first;
    p.module = where.second;
    p.rank = config.rank;
    p.in = dims.in;
    p.out = dims.out;
    p.a = read_factor(weights_file, *s.a, false, config.rank, dims, where.second);
    p.b = read_factor(weights_file, *s.b, true, config.rank, dims, where.second);
    out.pairs.push_back(std::move(p));
  }

  // Every targeted module must show up somewhere: PEFT would have adapted it, so a file without
  // it was cut short or belongs to another config.
  const std::vector<lora_module> present = out.modules();
  for (auto m : targeted)
    if (std::find(present.begin(), present.end(), m) == present.end())
      fail_key(config_file, "target_modules",
               "covers " + std::string(to_string(m)) + ", but " + weights_file
                 + " has no lora_A/lora_B tensors for it in any layer");
  return out;
}

} // namespace lf::engine
