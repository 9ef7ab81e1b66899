#pragma once
/// LoRA adapters on the GPU: the host's cpu_lora payloads (the adapter manager's cache, shared
/// with the CPU engine's format) copied into device slots on first use. A device table of
/// lora_factors, [slot][layer][module], is what the kernels read, so a step's mix of adapters is
/// data (each row's slot), not a launch sequence: one captured graph serves any mix.

#include <cstdint>
#include <memory>
#include <vector>

#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/cuda/cuda_kernels.cuh"
#include "worker/engine/cuda/cuda_util.hpp"

namespace lf::engine::cuda {

/// Device slots for adapters, least recently used evicted. Not thread-safe (the loop's thread).
class adapter_slots {
public:
  /// For a model of `layers` layers; starts with `capacity` slots and doubles when one step
  /// needs more.
  explicit adapter_slots(int layers, int capacity = 16);

  /// Starts a step: slots used by earlier steps may be evicted, slots handed out from now on not.
  void begin_step() noexcept { ++step_; }

  /// The slot holding `p` (copied up if it is not resident). May grow the table.
  int slot_of(const std::shared_ptr<const cpu_lora>& p);

  /// The factors of (slot 0, layer, module); a slot's entry is `stride()` entries further.
  const lora_factors* table(int layer, lora_module m) const noexcept {
    return table_.get() + layer * modules + static_cast<int>(m);
  }
  int stride() const noexcept { return layers_ * modules; }
  /// Largest rank resident.
  int max_rank() const noexcept { return max_rank_; }
  /// Changes whenever table() moves (graphs holding the old address must be captured again).
  std::uint64_t generation() const noexcept { return generation_; }

private:
  static constexpr int modules = static_cast<int>(all_lora_modules.size());
  struct slot {
    std::shared_ptr<const cpu_lora> host;
    device_buffer<float> data;
    std::uint64_t used = 0;  ///< step of last use
  };
  void grow();
  void upload(int index, const std::shared_ptr<const cpu_lora>& p);

  int layers_;
  std::vector<slot> slots_;
  std::vector<lora_factors> host_table_;
  device_buffer<lora_factors> table_;
  std::uint64_t step_ = 1, generation_ = 0;
  int max_rank_ = 0;
};

} // namespace lf::engine::cuda
