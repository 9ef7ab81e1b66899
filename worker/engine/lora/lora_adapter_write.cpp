// write_peft_adapter and make_random_adapter: producing adapters, kept apart from the reader.

#include "worker/engine/lora/lora_adapter.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>

#include <nlohmann/json.hpp>

namespace lf::engine {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("lora adapter: " + path + ": " + what);
}

/// Writes `text` to `path`.tmp and renames it over `path`, so readers never see half a file.
void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      io_fail(path, "cannot create " + tmp + ": " + std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      io_fail(path, "cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    io_fail(path, "cannot rename " + tmp + " into place: " + std::strerror(err));
  }
}

/// adapter_config.json as PEFT's save_pretrained writes it (keys sorted, 2-space indent).
std::string config_json(const lora_adapter& a, const std::string& base_model) {
  nlohmann::json j; // std::map-backed: keys come out sorted, like PEFT's json.dumps(sort_keys=True)
  j["alpha_pattern"] = nlohmann::json::object();
  j["base_model_name_or_path"] =
    base_model.empty() ? nlohmann::json(nullptr) : nlohmann::json(base_model);
  j["bias"] = "none";
  j["fan_in_fan_out"] = true; // GPT-2's Conv1D stores weights as [in, out]
  j["inference_mode"] = true;
  j["layers_to_transform"] = nullptr;
  // Integral alphas (the usual 16, 32) are written as integers, as PEFT users write them.
  if (a.alpha == std::trunc(a.alpha) && std::abs(a.alpha) < 1e9f)
    j["lora_alpha"] = static_cast<std::int64_t>(a.alpha);
  else
    j["lora_alpha"] = a.alpha;
  j["lora_dropout"] = 0.0;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = a.rank;
  j["rank_pattern"] = nlohmann::json::object();
  // Full names ("attn.c_proj", not "c_proj") so PEFT's suffix match picks exactly these modules.
  auto targets = nlohmann::json::array();
  for (auto m : a.modules())
    targets.push_back(std::string(to_string(m)));
  j["target_modules"] = targets;
  j["task_type"] = "CAUSAL_LM";
  j["use_dora"] = false;
  j["use_rslora"] = a.use_rslora;
  return j.dump(2) + "\n";
}

} // namespace

void write_peft_adapter(const std::string& dir, const lora_adapter& a, dtype storage,
                        const std::string& base_model) {
  a.validate();
  if (a.pairs.empty())
    throw std::invalid_argument("lora adapter \"" + a.name + "\": no pairs to write");
  if (storage != dtype::f32 && storage != dtype::f16 && storage != dtype::bf16)
    throw std::invalid_argument("lora adapter \"" + a.name + "\": storage dtype "
                                + std::string(to_string(storage))
                                + " is not supported (F32, F16 or BF16)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    io_fail(dir, "cannot create directory: " + ec.message());

  // F32 is written straight from the pairs; F16/BF16 need converted copies that outlive the call.
  std::vector<std::vector<std::byte>> converted;
  std::vector<tensor_to_write> tensors;
  tensors.reserve(2 * a.pairs.size());
  converted.reserve(2 * a.pairs.size());
  auto add = [&](std::string name, const std::vector<float>& data, std::int64_t rows,
                 std::int64_t cols) {
    tensor_to_write t;
    t.name = std::move(name);
    t.type = storage;
    t.shape = {rows, cols};
    t.nbytes = data.size() * dtype_size(storage);
    if (storage == dtype::f32) {
      t.data = data.data();
    } else {
      converted.emplace_back(t.nbytes);
      from_float32(data.data(), data.size(), storage, converted.back().data());
      t.data = converted.back().data();
    }
    tensors.push_back(std::move(t));
  };
  for (const auto& p : a.pairs) {
    add(peft_key_name(p.layer, p.module, false), p.a, p.rank, p.in);
    add(peft_key_name(p.layer, p.module, true), p.b, p.out, p.rank);
  }
  // Weights first, config last: a directory with a config is then never missing its weights.
  write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), tensors,
                    {{"format", "pt"}}); // the metadata PEFT and transformers write and expect
  write_text_file((fs::path(dir) / "adapter_config.json").string(), config_json(a, base_model));
}

namespace {

/// Standard normals from std::mt19937_64 by Box-Muller with fixed bit-to-double steps: the
/// engine's sequence is fixed by the standard, std::normal_distribution's algorithm is not.
class normal_source {
public:
  explicit normal_source(std::uint64_t seed) : gen_(seed) {}

  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(gen_() >> 11) + 1.0) * 0x1p-53; // (0, 1]: log is finite
    const double u2 = static_cast<double>(gen_() >> 11) * 0x1p-53;         // [0, 1)
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586 * u2;
    spare_ = radius * std::sin(theta);
    has_spare_ = true;
    return radius * std::cos(theta);
  }

private:
  std::mt19937_64 gen_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

} // namespace

lora_adapter make_random_adapter(const gpt2_config& base, int rank, float alpha,
                                 std::vector<lora_module> targets, std::uint64_t seed,
                                 float init_std) {
  if (rank <= 0)
    throw std::invalid_argument("make_random_adapter: rank must be positive, got "
                                + std::to_string(rank));
  if (!std::isfinite(alpha))
    throw std::invalid_argument("make_random_adapter: alpha must be finite");
  if (!std::isfinite(init_std) || init_std < 0)
    throw std::invalid_argument("make_random_adapter: init_std must be finite and >= 0");
  if (targets.empty())
    throw std::invalid_argument("make_random_adapter: no target modules");
  base.validate("make_random_adapter: base model config");
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());

  lora_adapter out;
  out.name = "random-" + std::to_string(seed);
  out.rank = rank;
  out.alpha = alpha;
  normal_source normal(seed);
  auto fill = [&](std::vector<float>& v, std::int64_t n) {
    v.resize(static_cast<std::size_t>(n));
    for (auto& x : v)
      x = static_cast<float>(normal.next() * init_std);
  };
  for (int layer = 0; layer < base.n_layer; ++layer) {
    for (auto m : targets) { // sorted, so pairs come out in (layer, module) order
      const auto dims = module_dims(base, m);
      lora_pair p;
      p.layer = layer;
      p.module = m;
      p.rank = rank;
      p.in = dims.in;
      p.out = dims.out;
      fill(p.a, p.rank * p.in);
      fill(p.b, p.out * p.rank);
      out.pairs.push_back(std::move(p));
    }
  }
  return out;
}

} // namespace lf::engine
