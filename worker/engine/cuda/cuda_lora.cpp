#include "worker/engine/cuda/cuda_lora.hpp"

#include <algorithm>

namespace lf::engine::cuda {

adapter_slots::adapter_slots(int layers, int capacity) : layers_(layers) {
  slots_.resize(static_cast<std::size_t>(std::max(capacity, 1)));
  host_table_.assign(slots_.size() * static_cast<std::size_t>(stride()), lora_factors{});
  table_.upload(host_table_.data(), host_table_.size());
}

void adapter_slots::grow() {
  slots_.resize(slots_.size() * 2);
  host_table_.resize(slots_.size() * static_cast<std::size_t>(stride()), lora_factors{});
  table_ = device_buffer<lora_factors>(host_table_.size());
  table_.upload(host_table_.data(), host_table_.size());
  ++generation_;
}

int adapter_slots::slot_of(const std::shared_ptr<const cpu_lora>& p) {
  int victim = -1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    if (s.host == p) {
      s.used = step_;
      return static_cast<int>(i);
    }
    // Prefer an empty slot, then the least recently used one not taken in this step.
    if (s.used == step_)
      continue;
    if (victim < 0 || (s.host == nullptr && slots_[static_cast<std::size_t>(victim)].host != nullptr)
        || (s.host != nullptr && slots_[static_cast<std::size_t>(victim)].host != nullptr
            && s.used < slots_[static_cast<std::size_t>(victim)].used))
      victim = static_cast<int>(i);
  }
  if (victim < 0) {
    victim = static_cast<int>(slots_.size());
    grow();
  }
  upload(victim, p);
  return victim;
}

void adapter_slots::upload(int index, const std::shared_ptr<const cpu_lora>& p) {
  auto& s = slots_[static_cast<std::size_t>(index)];
  std::size_t total = 0;
  for (int l = 0; l < layers_; ++l)
    for (auto m : all_lora_modules)
      if (const auto* f = p->find(l, m))
        total += f->a.size() + f->bt.size();
  s.data = device_buffer<float>(std::max<std::size_t>(total, 1));
  std::size_t at = 0;
  for (int l = 0; l < layers_; ++l)
    for (auto m : all_lora_modules) {
      auto& e = host_table_[static_cast<std::size_t>(index * stride() + l * modules + static_cast<int>(m))];
      e = lora_factors{};
      const auto* f = p->find(l, m);
      if (f == nullptr)
        continue;
      float* a = s.data.get() + at;
      check(cudaMemcpy(a, f->a.data(), f->a.size() * sizeof(float), cudaMemcpyHostToDevice), "adapter A");
      at += f->a.size();
      float* bt = s.data.get() + at;
      check(cudaMemcpy(bt, f->bt.data(), f->bt.size() * sizeof(float), cudaMemcpyHostToDevice), "adapter B");
      at += f->bt.size();
      e = lora_factors{a, bt, f->rank};
      max_rank_ = std::max(max_rank_, f->rank);
    }
  const auto first = static_cast<std::size_t>(index * stride());
  check(cudaMemcpy(table_.get() + first, host_table_.data() + first, static_cast<std::size_t>(stride()) * sizeof(lora_factors),
                   cudaMemcpyHostToDevice),
        "adapter table");
  s.host = p;
  s.used = step_;
}

} // namespace lf::engine::cuda
