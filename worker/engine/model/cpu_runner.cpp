#include "worker/engine/model/cpu_runner.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace lf::engine {

cpu_runner::cpu_runner(cpu_model& model, kernels::kv_cache& kv, cache::adapter_lookup_fn adapters)
  : model_(model), kv_(kv), adapters_(std::move(adapters)) {
  model.check_kv(kv);  // at construction, not at the first step
  // FNV-1a over the position embeddings: cheap, and different for any two distinct checkpoints
  // (and for the random models tests make with different seeds).
  std::uint64_t h = 1469598103934665603ull;
  const auto& wpe = model.weights().wpe;
  const auto* p = reinterpret_cast<const unsigned char*>(wpe.data());
  for (std::size_t i = 0; i < wpe.size() * sizeof(float); ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  const auto& s = kv.shape();
  format_ = "lf-kv1 " + std::string(kernels::to_string(s.type)) + " L" + std::to_string(s.layers) + " H"
            + std::to_string(s.heads) + " D" + std::to_string(s.head_dim) + " B" + std::to_string(s.block_size)
            + " " + std::string(to_string(model.weights().dtype)) + " wpe:" + std::to_string(h);
}

std::size_t cpu_runner::kv_block_bytes() const { return kernels::kv_cache::bytes_per_block(kv_.shape()); }

void cpu_runner::read_kv(const std::vector<cache::block_id>& blocks, std::string& out) const {
  const auto per = kv_block_bytes();
  const auto at = out.size();
  out.resize(at + per * blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i)
    kv_.read_block(blocks[i].value(), reinterpret_cast<std::byte*>(out.data() + at + i * per));
}

void cpu_runner::write_kv(const std::vector<cache::block_id>& blocks, std::string_view bytes) {
  const auto per = kv_block_bytes();
  if (bytes.size() != per * blocks.size())
    throw std::invalid_argument("cpu_runner::write_kv: " + std::to_string(bytes.size()) + " bytes for "
                                + std::to_string(blocks.size()) + " blocks of " + std::to_string(per));
  for (std::size_t i = 0; i < blocks.size(); ++i)
    kv_.write_block(blocks[i].value(), reinterpret_cast<const std::byte*>(bytes.data() + i * per));
}

void cpu_runner::step(const std::vector<engine_chunk>& chunks) {
  // Rows ordered by adapter (stable): each adapter's rows one contiguous run.
  std::vector<std::size_t> order(chunks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return chunks[a].adapter < chunks[b].adapter; });
  // Held for the step: an adapter evicted meanwhile stays alive until the forward is done.
  std::vector<std::shared_ptr<const cpu_lora>> held;
  auto& st = step_;
  st.tokens.clear();
  st.positions.clear();
  st.seqs.clear();
  st.logit_rows.clear();
  st.lora.clear();
  std::size_t table_len = 0;
  for (const auto& c : chunks)
    table_len += c.table ? c.table->size() : 0;
  tables_.resize(table_len);
  const auto bs = static_cast<std::int64_t>(kv_.shape().block_size);
  const auto n_pos = model_.config().n_positions;
  std::vector<int> first_row(chunks.size());
  std::size_t t_off = 0;
  int row = 0;
  cache::adapter_id last_adapter = cache::base_model;
  for (std::size_t i : order) {
    const auto& c = chunks[i];
    if (c.count < 1 || c.start < 0 || c.start + c.count > n_pos)
      throw std::invalid_argument("cpu_runner: a chunk reaches outside the context window");
    if (c.table == nullptr || static_cast<std::int64_t>(c.table->size()) * bs < c.start + c.count)
      throw std::invalid_argument("cpu_runner: a chunk's block table does not cover its tokens");
    for (std::size_t b = 0; b < c.table->size(); ++b)
      tables_[t_off + b] = static_cast<std::int32_t>((*c.table)[b].value());
    st.seqs.push_back({tables_.data() + t_off, static_cast<int>(c.start), static_cast<int>(c.count), row});
    t_off += c.table->size();
    for (std::int64_t k = 0; k < c.count; ++k) {
      st.tokens.push_back(c.tokens[k]);
      st.positions.push_back(static_cast<std::int32_t>(c.start + k));
    }
    if (c.adapter != cache::base_model) {
      // One lookup per distinct adapter; consecutive chunks of it extend the run.
      if (!st.lora.empty() && last_adapter == c.adapter && st.lora.back().begin + st.lora.back().count == row) {
        st.lora.back().count += static_cast<int>(c.count);
      } else {
        held.push_back(find_cpu_lora(adapters_, c.adapter));
        st.lora.push_back({held.back().get(), row, static_cast<int>(c.count)});
        last_adapter = c.adapter;
      }
    }
    first_row[i] = row;
    row += static_cast<int>(c.count);
  }
  // Logits in the callers' chunk order.
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (!chunks[i].want_logits)
      continue;
    const auto n = chunks[i].logits_count;
    if (n < 1 || n > chunks[i].count)
      throw std::invalid_argument("cpu_runner: a chunk wants logits of more positions than it has");
    for (std::int64_t k = chunks[i].count - n; k < chunks[i].count; ++k)
      st.logit_rows.push_back(first_row[i] + static_cast<int>(k));
  }
  model_.forward(st, kv_);
}

void cpu_runner::for_rows(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
  model_.pool().parallel_for(n, fn);  // inline for 0 or 1 rows
}

float* cpu_runner::logits(std::size_t i) {
  if (i >= step_.logit_rows.size())
    throw std::out_of_range("cpu_runner: no logits row " + std::to_string(i));
  return model_.logits(i);
}

} // namespace lf::engine
