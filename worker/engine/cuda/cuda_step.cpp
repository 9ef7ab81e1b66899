// A step of the CUDA engine: the chunks become rows (validated before anything reaches the
// device), the rows' fields and block tables go up in one staging buffer, the forward runs (from
// a graph for decode steps) and the wanted logits come back to page-locked host memory.
#include <stdexcept>
#include <string>

#include "worker/engine/cuda/cuda_engine_impl.hpp"

namespace lf::engine::cuda {

namespace {

int next_pow2(int n) {
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

} // namespace

void engine_impl::step(const std::vector<engine_chunk>& chunks) {
  const auto& c = w_.config;
  const std::int64_t bs = opts_.block_size;
  logit_row_.clear();
  check(cudaSetDevice(opts_.device), "cudaSetDevice");  // the loop's thread, not the constructor's
  std::int64_t total = 0;
  int wanted = 0;
  bool decode = true;
  for (const auto& ch : chunks) {
    if (ch.count < 1 || ch.start < 0 || ch.start + ch.count > c.n_positions || ch.tokens == nullptr)
      throw std::invalid_argument("cuda engine: a chunk reaches outside the context window");
    if (ch.table == nullptr || static_cast<std::int64_t>(ch.table->size()) * bs < ch.start + ch.count)
      throw std::invalid_argument("cuda engine: a chunk's block table does not cover its tokens");
    const auto need = static_cast<std::size_t>((ch.start + ch.count + bs - 1) / bs);
    for (std::size_t b = 0; b < need; ++b)
      if ((*ch.table)[b].value() >= opts_.num_blocks)
        throw std::invalid_argument("cuda engine: block " + std::to_string((*ch.table)[b].value())
                                    + " is outside the pool of " + std::to_string(opts_.num_blocks));
    for (std::int64_t k = 0; k < ch.count; ++k)
      if (ch.tokens[k] < 0 || ch.tokens[k] >= c.vocab_size)
        throw std::invalid_argument("cuda engine: token id " + std::to_string(ch.tokens[k])
                                    + " is outside the vocabulary");
    if (ch.want_logits && (ch.logits_count < 1 || ch.logits_count > ch.count))
      throw std::invalid_argument("cuda engine: a chunk wants logits of more positions than it has");
    total += ch.count;
    wanted += ch.want_logits ? static_cast<int>(ch.logits_count) : 0;
    decode = decode && ch.count == 1;
  }
  if (chunks.empty())
    return;
  // Adapters to slots (copied up on first use); all before any launch.
  slots_->begin_step();
  std::vector<int> slot(chunks.size(), -1);
  bool any_lora = false;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].adapter == cache::base_model)
      continue;
    if (!adapters_)
      throw std::runtime_error("cuda engine: a chunk asks for an adapter, but the engine has no adapter manager");
    slot[i] = slots_->slot_of(find_cpu_lora(adapters_, chunks[i].adapter));
    any_lora = true;
  }
  const int rows = static_cast<int>(total);
  const bool graph = opts_.graphs && decode && rows <= opts_.max_graph_batch;
  const int padded = graph ? next_pow2(rows) : rows;
  reserve(padded, graph ? padded : wanted, slots_->max_rank());
  const auto R = static_cast<std::size_t>(rows_cap_);
  std::int32_t* m = host_meta_.get();
  std::int32_t *tok = m, *pos = m + R, *toff = m + 2 * R, *slt = m + 3 * R, *lidx = m + 4 * R, *tab = m + 5 * R;
  int row = 0, t_at = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto& ch = chunks[i];
    const auto need = static_cast<int>((ch.start + ch.count + bs - 1) / bs);
    for (int b = 0; b < need; ++b)
      tab[t_at + b] = static_cast<std::int32_t>((*ch.table)[static_cast<std::size_t>(b)].value());
    for (std::int64_t k = 0; k < ch.count; ++k, ++row) {
      tok[row] = ch.tokens[k];
      pos[row] = static_cast<std::int32_t>(ch.start + k);
      toff[row] = t_at;
      slt[row] = slot[i];
    }
    t_at += need;
    if (ch.want_logits) {  // the chunk's last logits_count rows, in position order
      for (auto r = row - static_cast<int>(ch.logits_count); r < row; ++r) {
        if (graph) {
          logit_row_.push_back(r);
        } else {
          lidx[logit_row_.size()] = r;
          logit_row_.push_back(static_cast<int>(logit_row_.size()));
        }
      }
    }
  }
  for (int r = rows; r < padded; ++r) {
    tok[r] = 0;
    pos[r] = -1;
    toff[r] = 0;
    slt[r] = -1;
  }
  for (int f = 0; f < meta_fields; ++f)
    check(cudaMemcpyAsync(meta_.get() + f * R, m + f * R, static_cast<std::size_t>(padded) * sizeof(std::int32_t),
                          cudaMemcpyHostToDevice, stream_),
          "rows up");
  check(cudaMemcpyAsync(meta_.get() + meta_fields * R, tab, static_cast<std::size_t>(t_at) * sizeof(std::int32_t),
                        cudaMemcpyHostToDevice, stream_),
        "tables up");
  if (graph) {
    replay(padded, any_lora);
  } else {
    forward(rows, any_lora, wanted, false);
    ++stats_.eager_steps;
  }
  check(cudaGetLastError(), "launch");
  const int back = graph ? rows : wanted;
  if (back > 0)
    check(cudaMemcpyAsync(host_logits_.get(), logits_.get(),
                          static_cast<std::size_t>(back) * static_cast<std::size_t>(c.vocab_size) * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "logits down");
  check(cudaStreamSynchronize(stream_), "step");
}

void engine_impl::replay(int padded, bool with_lora) {
  const auto key = std::make_pair(padded, with_lora);
  auto it = graphs_.find(key);
  if (it != graphs_.end() && it->second.second == slots_->generation()) {
    check(cudaGraphLaunch(it->second.first->get(), stream_), "graph launch");
    ++stats_.graph_steps;
    return;
  }
  // First time at this size: this step runs eagerly (cuBLAS picks and loads its kernels), then
  // the same launches are captured for the next steps of this size.
  forward(padded, with_lora, padded, true);
  ++stats_.eager_steps;
  check(cudaStreamSynchronize(stream_), "before capture");
  cudaGraph_t g = nullptr;
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin capture");
  try {
    forward(padded, with_lora, padded, true);
  } catch (...) {
    cudaStreamEndCapture(stream_, &g);
    if (g != nullptr)
      cudaGraphDestroy(g);
    throw;
  }
  check(cudaStreamEndCapture(stream_, &g), "end capture");
  auto exec = std::make_unique<graph_exec>();
  const auto made = cudaGraphInstantiate(exec->out(), g, 0);
  cudaGraphDestroy(g);
  check(made, "graph instantiate");
  graphs_[key] = {std::move(exec), slots_->generation()};
  ++stats_.graphs_captured;
}

float* engine_impl::logits(std::size_t i) {
  if (i >= logit_row_.size())
    throw std::out_of_range("cuda engine: no logits row " + std::to_string(i));
  return host_logits_.get() + static_cast<std::size_t>(logit_row_[i]) * static_cast<std::size_t>(w_.config.vocab_size);
}

} // namespace lf::engine::cuda
