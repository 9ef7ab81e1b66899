#pragma once
/// Seeded random GPT-2 checkpoints written without torch (config.json + model.safetensors in
/// Hugging Face's names), for the GPU tests and benchmarks, which run where no libtorch is built.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/checkpoint/safetensors.hpp"

namespace lf::test {

/// Writes a GPT2LMHeadModel of shape `c` into `dir` (created): matrices and embeddings drawn from
/// N(0, init_std^2), layer norms 1 + N(0, 0.1^2) and biases N(0, 0.02^2), from std::mt19937_64
/// through Box-Muller (the same values with any standard library). Untied configs get their own
/// lm_head.weight.
inline void write_random_checkpoint(const std::string& dir, const engine::gpt2_config& c, std::uint64_t seed,
                                    float init_std = 0.3f) {
  std::filesystem::create_directories(dir);
  c.save(dir + "/config.json");
  std::mt19937_64 rng(seed);
  auto normal = [&](float sd) {
    const double u1 = (static_cast<double>(rng() >> 11) + 1.0) / 9007199254740993.0;
    const double u2 = static_cast<double>(rng() >> 11) / 9007199254740992.0;
    return static_cast<float>(sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  };
  std::vector<std::vector<float>> data;
  std::vector<engine::tensor_to_write> tensors;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float sd, float mean = 0.0f) {
    std::size_t n = 1;
    for (auto d : shape)
      n *= static_cast<std::size_t>(d);
    data.emplace_back(n);
    for (auto& v : data.back())
      v = mean + normal(sd);
    tensors.push_back({name, engine::dtype::f32, std::move(shape), nullptr, n * sizeof(float)});
  };
  const std::int64_t C = c.n_embd, V = c.vocab_size, P = c.n_positions, I = c.inner_dim();
  add("wte.weight", {V, C}, init_std);
  add("wpe.weight", {P, C}, init_std * 0.5f);
  add("ln_f.weight", {C}, 0.1f, 1.0f);
  add("ln_f.bias", {C}, 0.02f);
  for (int l = 0; l < c.n_layer; ++l) {
    const auto p = "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {C}, 0.1f, 1.0f);
    add(p + "ln_1.bias", {C}, 0.02f);
    add(p + "attn.c_attn.weight", {C, 3 * C}, init_std / std::sqrt(static_cast<float>(C) / 64.0f));
    add(p + "attn.c_attn.bias", {3 * C}, 0.02f);
    add(p + "attn.c_proj.weight", {C, C}, init_std / std::sqrt(static_cast<float>(C) / 64.0f));
    add(p + "attn.c_proj.bias", {C}, 0.02f);
    add(p + "ln_2.weight", {C}, 0.1f, 1.0f);
    add(p + "ln_2.bias", {C}, 0.02f);
    add(p + "mlp.c_fc.weight", {C, I}, init_std / std::sqrt(static_cast<float>(C) / 64.0f));
    add(p + "mlp.c_fc.bias", {I}, 0.02f);
    add(p + "mlp.c_proj.weight", {I, C}, init_std / std::sqrt(static_cast<float>(I) / 64.0f));
    add(p + "mlp.c_proj.bias", {C}, 0.02f);
  }
  if (!c.tie_word_embeddings)
    add("lm_head.weight", {V, C}, init_std);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    tensors[i].data = data[i].data();
  engine::write_safetensors(dir + "/model.safetensors", tensors);
}

} // namespace lf::test
