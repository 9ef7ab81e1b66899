#include "worker/engine/model/cpu_lora.hpp"

#include "worker/engine/lora/peft_loader.hpp"

namespace lf::engine {

cpu_lora::cpu_lora(const lora_adapter& a, const gpt2_config& base)
  : name_(a.name), rank_(a.rank), layers_(static_cast<std::size_t>(base.n_layer)) {
  a.validate(base);
  const float scale = a.scale();
  for (const auto& p : a.pairs) {
    factors f;
    f.in = static_cast<int>(p.in);
    f.rank = static_cast<int>(p.rank);
    f.out = static_cast<int>(p.out);
    f.a = p.a;  // [rank][in] already
    f.bt.resize(static_cast<std::size_t>(p.rank * p.out));
    for (std::int64_t o = 0; o < p.out; ++o)      // lora_B is [out][rank]
      for (std::int64_t j = 0; j < p.rank; ++j)
        f.bt[static_cast<std::size_t>(j * p.out + o)] = p.b[static_cast<std::size_t>(o * p.rank + j)] * scale;
    bytes_ += (f.a.size() + f.bt.size()) * sizeof(float);
    layers_[static_cast<std::size_t>(p.layer)][static_cast<std::size_t>(p.module)] = std::move(f);
  }
}

const cpu_lora::factors* cpu_lora::find(int layer, lora_module m) const noexcept {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    return nullptr;
  const auto& f = layers_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(m)];
  return f.rank > 0 ? &f : nullptr;
}

std::unique_ptr<cache::adapter_manager> make_cpu_lora_manager(std::string root, const gpt2_config& base,
                                                              cache::adapter_cache_config cfg,
                                                              adapter_source_fn sources) {
  return make_peft_manager(std::move(root), base,
                           [base](const lora_adapter& a) -> std::shared_ptr<const cache::adapter_payload> {
                             return std::make_shared<const cpu_lora>(a, base);
                           },
                           cfg, std::move(sources));
}

std::shared_ptr<const cpu_lora> find_cpu_lora(const cache::adapter_lookup_fn& lookup, cache::adapter_id id) {
  return find_adapter_payload<cpu_lora>(lookup, id);
}

} // namespace lf::engine
