#pragma once
/// LoRA adapters as ATen tensors, and the row -> adapter map of a mixed batch.
///
/// GPT-2's Conv1D weights stay [in, out] (y = x W + b), so an adapted module computes
///   y = x W + b + scale * (x A^T) B^T  =  x W + b + (x a_t) b_t
/// with a_t = A^T [in, r] and b_t = scale * B^T [r, out] kept contiguous: two small matrix
/// products per group of rows, never a merged or copied W. In a batch, the base projection runs
/// once over all N rows; then each adapter's delta is added to its own rows only (Punica's SGMV
/// idea): a contiguous run of rows is updated in place through a view, scattered rows through
/// index_select / index_add_.

#include <ATen/ATen.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "cache/adapter_manager.hpp"
#include "worker/engine/lora/lora_adapter.hpp"
#include "worker/engine/lora/peft_loader.hpp"

namespace lf::engine {

class gpt2_model;

/// One adapter's factors for every (layer, module) it adapts, in the model's compute dtype.
/// Immutable; shared by the adapter cache and the steps that use it.
class lora_weights final : public cache::adapter_payload {
public:
  /// a_t = A^T [in, r] and b_t = scale * B^T [r, out]; undefined if the module is not adapted.
  struct factors {
    at::Tensor a_t;
    at::Tensor b_t;
  };

  /// Converts `a` for a model with config `base` computing in `dtype` (kFloat or kBFloat16).
  /// Throws std::invalid_argument if `a` does not fit `base` (lora_adapter::validate(base)).
  lora_weights(const lora_adapter& a, const gpt2_config& base, at::ScalarType dtype);

  /// Tensor bytes (what the adapter cache budgets).
  std::size_t bytes() const noexcept override { return bytes_; }

  /// The factors of (layer, m), or nullptr if the adapter leaves it alone.
  const factors* find(int layer, lora_module m) const noexcept;

  const std::string& name() const noexcept { return name_; }
  int rank() const noexcept { return rank_; }
  float scale() const noexcept { return scale_; }

private:
  std::string name_;
  int rank_ = 0;
  float scale_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::array<factors, all_lora_modules.size()>> layers_;
};

/// Rows of a flat batch that share one adapter.
struct lora_group {
  const lora_weights* adapter = nullptr;  ///< never null in a lora_batch
  std::int64_t begin = 0, count = 0;      ///< the rows when they are contiguous
  at::Tensor rows;                        ///< else their indices: int64 [k] (then begin/count unused)
};

/// Which rows of a flat batch use which adapter; rows in no group use the base model alone.
/// Borrowed pointers: the caller keeps the lora_weights alive for the forward pass.
struct lora_batch {
  std::vector<lora_group> groups;

  /// Groups rows by adapter (nullptr = base model); an adapter's rows become one group, a
  /// contiguous range when they are adjacent.
  static lora_batch from_rows(const std::vector<const lora_weights*>& row_adapter);

  bool empty() const noexcept { return groups.empty(); }

  /// Adds each group's delta for module `m` of `layer`: out[rows] += x[rows] a_t b_t.
  /// `x`: the module's input [N, in]; `out`: its output [N, out], contiguous, updated in place.
  void apply(at::Tensor& out, const at::Tensor& x, int layer, lora_module m) const;
};

/// Finds an adapter's weights: nullptr for base_model, the lora_weights behind `lookup(id)`
/// otherwise. Throws std::runtime_error if the adapter is not ready (the lookup returns nothing
/// or something else), naming it.
std::shared_ptr<const lora_weights> find_lora(const cache::adapter_lookup_fn& lookup,
                                              cache::adapter_id id);

/// An adapter manager serving PEFT adapters from `root` for `model` (peft_loader.hpp with
/// lora_weights payloads). `model` must outlive it.
std::unique_ptr<cache::adapter_manager> make_lora_manager(std::string root, const gpt2_model& model,
                                                          cache::adapter_cache_config cfg = {},
                                                          adapter_source_fn sources = {});

} // namespace lf::engine
