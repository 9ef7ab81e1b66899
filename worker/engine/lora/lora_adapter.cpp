// lora_adapter basics: module names and shapes, adapter accounting and validation. Loading is in
// lora_adapter_load.cpp, writing in lora_adapter_write.cpp, adapter ids in adapter_paths.cpp.

#include "worker/engine/lora/lora_adapter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace lf::engine {

namespace fs = std::filesystem;

std::string_view to_string(lora_module m) noexcept {
  switch (m) {
    case lora_module::attn_c_attn: return "attn.c_attn";
    case lora_module::attn_c_proj: return "attn.c_proj";
    case lora_module::mlp_c_fc: return "mlp.c_fc";
    case lora_module::mlp_c_proj: return "mlp.c_proj";
  }
  return "?";
}

std::optional<lora_module> parse_lora_module(std::string_view s) noexcept {
  for (auto m : all_lora_modules)
    if (s == to_string(m))
      return m;
  return std::nullopt;
}

std::vector<lora_module> parse_lora_targets(std::string_view list) {
  std::array<bool, all_lora_modules.size()> on{};
  auto set = [&on](lora_module m) { on[static_cast<std::size_t>(m)] = true; };
  for (std::size_t begin = 0; begin <= list.size();) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string_view t = list.substr(begin, end - begin);
    begin = end + 1;
    if (t.empty())
      continue;
    if (t == "all" || t == "all-linear") {
      for (auto m : all_lora_modules)
        set(m);
    } else if (t == "c_attn") {
      set(lora_module::attn_c_attn);
    } else if (t == "c_fc") {
      set(lora_module::mlp_c_fc);
    } else if (t == "c_proj") {
      set(lora_module::attn_c_proj);
      set(lora_module::mlp_c_proj);
    } else if (auto m = parse_lora_module(t)) {
      set(*m);
    } else {
      throw std::invalid_argument("unknown LoRA target \"" + std::string(t)
                                  + "\" (expected attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, "
                                    "c_attn, c_proj, c_fc or all)");
    }
  }
  std::vector<lora_module> out;
  for (auto m : all_lora_modules)
    if (on[static_cast<std::size_t>(m)])
      out.push_back(m);
  if (out.empty())
    throw std::invalid_argument("the LoRA target list is empty");
  return out;
}

lora_dims module_dims(const gpt2_config& base, lora_module m) noexcept {
  const std::int64_t c = base.n_embd;
  const std::int64_t inner = base.inner_dim();
  switch (m) {
    case lora_module::attn_c_attn: return {c, 3 * c};
    case lora_module::attn_c_proj: return {c, c};
    case lora_module::mlp_c_fc: return {c, inner};
    case lora_module::mlp_c_proj: return {inner, c};
  }
  return {};
}

// --- tensor names -----------------------------------------------------------------------------

namespace {

bool consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix)
    return false;
  s.remove_prefix(prefix.size());
  return true;
}

} // namespace

std::optional<peft_key> parse_peft_key(std::string_view s) noexcept {
  peft_key k;
  if (!consume(s, "base_model.model."))
    return std::nullopt;
  consume(s, "transformer."); // absent when the adapter was made on GPT2Model
  if (!consume(s, "h."))
    return std::nullopt;
  // A decimal layer index without leading zeros, so each layer has exactly one spelling.
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 6 || (digits > 1 && s[0] == '0'))
    return std::nullopt;
  for (std::size_t i = 0; i < digits; ++i)
    k.layer = k.layer * 10 + (s[i] - '0');
  s.remove_prefix(digits);
  if (!consume(s, "."))
    return std::nullopt;
  const auto m = std::find_if(all_lora_modules.begin(), all_lora_modules.end(), [&](lora_module x) {
    return s.substr(0, to_string(x).size()) == to_string(x);
  });
  if (m == all_lora_modules.end())
    return std::nullopt;
  k.module = *m;
  s.remove_prefix(to_string(*m).size());
  if (consume(s, ".lora_B"))
    k.is_b = true;
  else if (!consume(s, ".lora_A"))
    return std::nullopt;
  if (s == ".weight")
    return k;
  // PEFT drops the adapter name when saving, but hand-made state dicts sometimes keep it.
  constexpr std::string_view weight = ".weight";
  if (!consume(s, ".") || s.size() <= weight.size() || s.substr(s.size() - weight.size()) != weight)
    return std::nullopt;
  const std::string_view adapter = s.substr(0, s.size() - weight.size());
  if (adapter.find('.') != std::string_view::npos)
    return std::nullopt;
  return k;
}

std::string peft_key_name(int layer, lora_module m, bool is_b) {
  return "base_model.model.transformer.h." + std::to_string(layer) + "."
         + std::string(to_string(m)) + (is_b ? ".lora_B.weight" : ".lora_A.weight");
}

// --- lora_adapter ---------------------------------------------------------------------------

float lora_adapter::scale() const noexcept {
  if (rank <= 0)
    return 0.0f;
  const float r = static_cast<float>(rank);
  return use_rslora ? alpha / std::sqrt(r) : alpha / r;
}

std::size_t lora_adapter::bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& p : pairs)
    n += (p.a.size() + p.b.size()) * sizeof(float);
  return n;
}

namespace {

bool pair_less(const lora_pair& p, std::pair<int, lora_module> key) {
  return std::make_pair(p.layer, p.module) < key;
}

} // namespace

const lora_pair* lora_adapter::find(int layer, lora_module m) const noexcept {
  auto it = std::lower_bound(pairs.begin(), pairs.end(), std::make_pair(layer, m), pair_less);
  return it != pairs.end() && it->layer == layer && it->module == m ? &*it : nullptr;
}

std::vector<lora_module> lora_adapter::modules() const {
  std::vector<lora_module> out;
  for (auto m : all_lora_modules)
    if (std::any_of(pairs.begin(), pairs.end(), [m](const lora_pair& p) { return p.module == m; }))
      out.push_back(m);
  return out;
}

void lora_adapter::validate() const {
  auto bad = [this](const std::string& what) {
    throw std::invalid_argument("lora adapter \"" + name + "\": " + what);
  };
  if (rank <= 0)
    bad("rank must be positive, got " + std::to_string(rank));
  if (!std::isfinite(alpha))
    bad("alpha must be finite");
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto& p = pairs[i];
    const std::string where =
      "pair (layer " + std::to_string(p.layer) + ", " + std::string(to_string(p.module)) + ")";
    if (p.layer < 0 || p.in <= 0 || p.out <= 0)
      bad(where + ": layer must not be negative, in and out must be positive");
    if (p.rank != rank)
      bad(where + ": rank " + std::to_string(p.rank) + " differs from the adapter's "
          + std::to_string(rank));
    // Dimensions are bounded by the int-sized model config, so these products cannot overflow.
    if (p.a.size() != static_cast<std::size_t>(p.rank * p.in))
      bad(where + ": a holds " + std::to_string(p.a.size()) + " floats, [rank, in] needs "
          + std::to_string(p.rank * p.in));
    if (p.b.size() != static_cast<std::size_t>(p.out * p.rank))
      bad(where + ": b holds " + std::to_string(p.b.size()) + " floats, [out, rank] needs "
          + std::to_string(p.out * p.rank));
    if (i > 0 && !pair_less(pairs[i - 1], {p.layer, p.module}))
      bad(where + ": pairs must be sorted by (layer, module) without duplicates");
  }
}

void lora_adapter::validate(const gpt2_config& base) const {
  validate();
  for (const auto& p : pairs) {
    const auto dims = module_dims(base, p.module);
    const std::string where =
      "pair (layer " + std::to_string(p.layer) + ", " + std::string(to_string(p.module)) + ")";
    if (p.layer >= base.n_layer)
      throw std::invalid_argument("lora adapter \"" + name + "\": " + where
                                  + ": the base model has " + std::to_string(base.n_layer)
                                  + " layers");
    if (p.in != dims.in || p.out != dims.out)
      throw std::invalid_argument("lora adapter \"" + name + "\": " + where + ": in/out "
                                  + std::to_string(p.in) + "/" + std::to_string(p.out)
                                  + ", the base model needs " + std::to_string(dims.in) + "/"
                                  + std::to_string(dims.out));
  }
}

} // namespace lf::engine
