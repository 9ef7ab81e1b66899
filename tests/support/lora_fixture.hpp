#pragma once
/// Shared by the LoRA engine tests: a tiny model, random adapters strong enough to change greedy
/// choices, a lookup over them, and the reference the forward pass must match: the base weights
/// with the adapter merged in, W + scale * (B A)^T in GPT-2's [in, out] layout.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/tiny_model.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/lora_weights.hpp"
#include "worker/engine/reference/weights.hpp"

namespace lf::test {

/// A rank-4 random adapter on `targets` of the tiny model; init_std 0.2 with alpha 8 moves the
/// logits enough that greedy tokens change.
inline engine::lora_adapter tiny_adapter(const engine::gpt2_config& cfg, std::uint64_t seed,
                                         std::vector<engine::lora_module> targets = {
                                           engine::all_lora_modules.begin(),
                                           engine::all_lora_modules.end()}) {
  auto a = engine::make_random_adapter(cfg, 4, 8.0f, std::move(targets), seed, 0.2f);
  a.name = "tiny-" + std::to_string(seed);
  return a;
}

/// The model's weights with `a` merged in (new tensors; the model's own are untouched).
inline engine::gpt2_weights merged_weights(const engine::gpt2_weights& base,
                                           const engine::lora_adapter& a) {
  engine::gpt2_weights w = base;
  for (const auto& p : a.pairs) {
    auto A = at::from_blob(const_cast<float*>(p.a.data()), {p.rank, p.in}, at::kFloat);
    auto B = at::from_blob(const_cast<float*>(p.b.data()), {p.out, p.rank}, at::kFloat);
    auto delta = B.mm(A).t().mul(a.scale());  // [in, out], like the Conv1D weight
    auto& b = w.blocks[static_cast<std::size_t>(p.layer)];
    at::Tensor* target = nullptr;
    switch (p.module) {
      case engine::lora_module::attn_c_attn: target = &b.attn_w; break;
      case engine::lora_module::attn_c_proj: target = &b.proj_w; break;
      case engine::lora_module::mlp_c_fc: target = &b.fc_w; break;
      case engine::lora_module::mlp_c_proj: target = &b.mproj_w; break;
    }
    *target = target->clone().add_(delta);
  }
  return w;
}

/// Finds adapters by id in a fixed map (what an adapter_manager does for ready adapters).
inline cache::adapter_lookup_fn lookup_of(
  std::map<cache::adapter_id, std::shared_ptr<const engine::lora_weights>> m) {
  return [m = std::move(m)](cache::adapter_id id) -> std::shared_ptr<const cache::adapter_payload> {
    auto it = m.find(id);
    return it == m.end() ? nullptr : it->second;
  };
}

} // namespace lf::test
