#pragma once
/// LoRA adapters for the CPU engine: per adapted (layer, module), A as PEFT stores it [rank][in]
/// and B transposed with the adapter's scale folded in [rank][out], so a row's delta is rank dot
/// products with A followed by rank scaled additions of B rows (kernels/elementwise.hpp). Weights
/// are never merged into the base: a batch mixes adapters and rows of the base model.

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "cache/adapter_manager.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/lora/lora_adapter.hpp"
#include "worker/engine/lora/peft_loader.hpp"

namespace lf::engine {

/// One adapter's factors, immutable; shared by the adapter cache and the steps that use it.
class cpu_lora final : public cache::adapter_payload {
public:
  /// The factors of one module: in -> rank -> out.
  struct factors {
    int in = 0, rank = 0, out = 0;
    std::vector<float> a;   ///< [rank][in]
    std::vector<float> bt;  ///< [rank][out], scaled
  };

  /// Throws std::invalid_argument if `a` does not fit `base` (lora_adapter::validate).
  cpu_lora(const lora_adapter& a, const gpt2_config& base);

  std::size_t bytes() const noexcept override { return bytes_; }
  /// The factors of (layer, m), or nullptr if the adapter leaves that module alone.
  const factors* find(int layer, lora_module m) const noexcept;
  const std::string& name() const noexcept { return name_; }
  int rank() const noexcept { return rank_; }

private:
  std::string name_;
  int rank_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::array<factors, all_lora_modules.size()>> layers_;
};

/// An adapter manager serving PEFT adapters from `root` as cpu_lora payloads for `base`.
std::unique_ptr<cache::adapter_manager> make_cpu_lora_manager(std::string root, const gpt2_config& base,
                                                              cache::adapter_cache_config cfg = {},
                                                              adapter_source_fn sources = {});

/// The cpu_lora behind `lookup(id)`: nullptr for base_model. Throws std::runtime_error naming the
/// adapter when it is not ready.
std::shared_ptr<const cpu_lora> find_cpu_lora(const cache::adapter_lookup_fn& lookup, cache::adapter_id id);

} // namespace lf::engine
