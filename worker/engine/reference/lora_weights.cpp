#include "worker/engine/reference/lora_weights.hpp"

#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "worker/engine/lora/peft_loader.hpp"
#include "worker/engine/reference/gpt2_model.hpp"

namespace lf::engine {

namespace fs = std::filesystem;

lora_weights::lora_weights(const lora_adapter& a, const gpt2_config& base, at::ScalarType dtype)
  : name_(a.name), rank_(a.rank), scale_(a.scale()),
    layers_(static_cast<std::size_t>(base.n_layer)) {
  a.validate(base);
  at::NoGradGuard no_grad;
  for (const auto& p : a.pairs) {
    // from_blob borrows the vectors; t().contiguous() makes the copy we keep.
    auto A = at::from_blob(const_cast<float*>(p.a.data()), {p.rank, p.in}, at::kFloat);
    auto B = at::from_blob(const_cast<float*>(p.b.data()), {p.out, p.rank}, at::kFloat);
    factors f;
    f.a_t = A.t().contiguous().to(dtype);
    f.b_t = B.t().mul(scale_).contiguous().to(dtype);
    bytes_ += static_cast<std::size_t>(f.a_t.numel() + f.b_t.numel())
              * static_cast<std::size_t>(f.a_t.element_size());
    layers_[static_cast<std::size_t>(p.layer)][static_cast<std::size_t>(p.module)] = std::move(f);
  }
}

const lora_weights::factors* lora_weights::find(int layer, lora_module m) const noexcept {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    return nullptr;
  const auto& f = layers_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(m)];
  return f.a_t.defined() ? &f : nullptr;
}

// -- lora_batch ---------------------------------------------------------------------------------

lora_batch lora_batch::from_rows(const std::vector<const lora_weights*>& row_adapter) {
  std::vector<const lora_weights*> order;  // adapters by first appearance
  std::unordered_map<const lora_weights*, std::vector<std::int64_t>> rows;
  for (std::size_t i = 0; i < row_adapter.size(); ++i) {
    const auto* a = row_adapter[i];
    if (a == nullptr)
      continue;
    auto& r = rows[a];
    if (r.empty())
      order.push_back(a);
    r.push_back(static_cast<std::int64_t>(i));
  }
  lora_batch out;
  for (const auto* a : order) {
    auto& r = rows[a];
    lora_group g;
    g.adapter = a;
    if (r.back() - r.front() + 1 == static_cast<std::int64_t>(r.size())) {
      g.begin = r.front();
      g.count = static_cast<std::int64_t>(r.size());
    } else {
      g.rows = at::tensor(r, at::kLong);
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

void lora_batch::apply(at::Tensor& out, const at::Tensor& x, int layer, lora_module m) const {
  for (const auto& g : groups) {
    const auto* f = g.adapter->find(layer, m);
    if (f == nullptr)
      continue;
    if (!g.rows.defined()) {
      // Rows [begin, begin + count) of a contiguous [N, out] are a contiguous view.
      auto dst = out.narrow(0, g.begin, g.count);
      dst.addmm_(x.narrow(0, g.begin, g.count).mm(f->a_t), f->b_t);
    } else {
      out.index_add_(0, g.rows, x.index_select(0, g.rows).mm(f->a_t).mm(f->b_t));
    }
  }
}

// -- lookup and loading -------------------------------------------------------------------------

std::shared_ptr<const lora_weights> find_lora(const cache::adapter_lookup_fn& lookup,
                                              cache::adapter_id id) {
  return find_adapter_payload<lora_weights>(lookup, id);
}

std::unique_ptr<cache::adapter_manager> make_lora_manager(std::string root, const gpt2_model& model,
                                                          cache::adapter_cache_config cfg,
                                                          adapter_source_fn sources) {
  return make_peft_manager(std::move(root), model.config(),
                           [&model](const lora_adapter& a) -> std::shared_ptr<const cache::adapter_payload> {
                             return std::make_shared<const lora_weights>(a, model.config(), model.scalar_type());
                           },
                           cfg, std::move(sources));
}

} // namespace lf::engine
