// Moving a sequence's K/V between serving loops: export on a drain's cancel, import on the next
// worker's submit (into the prefix cache, where admission finds it).
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>
#include <exception>

#include "core/log.hpp"

namespace lf::worker {

kv_blob serving_loop::export_kv(request_id id) {
  kv_blob out;
  const cache::seq_id seq{id.value()};
  if (engine_.kv_format().empty() || !blocks_.contains(seq) || !sched_.contains(seq))
    return out;  // queued or preempted: nothing computed to ship
  const auto bs = blocks_.block_size();
  const auto full = blocks_.num_computed(seq) / bs;
  if (full == 0)
    return out;
  const auto& table = blocks_.block_table(seq);
  const std::vector<cache::block_id> ids(table.begin(), table.begin() + full);
  const auto& tokens = sched_.tokens(seq);
  out.format = engine_.kv_format();
  out.tokens.assign(tokens.begin(), tokens.begin() + std::size_t{full} * bs);
  try {
    engine_.read_kv(ids, out.bytes);
  } catch (const std::exception& e) {
    log::warn("worker", "K/V export failed: the request is recomputed where it moves", {{"reason", e.what()}});
    return {};
  }
  std::lock_guard<std::mutex> g(mtx_);
  load_.kv_exported_tokens += out.tokens.size();
  return out;
}

std::uint32_t serving_loop::import_kv(request_id id, cache::adapter_id adapter, cache::cache_salt salt,
                                      const std::vector<std::int32_t>& tokens, const kv_blob& kv) {
  const auto bs = blocks_.block_size();
  const auto n = kv.tokens.size();
  const auto format = engine_.kv_format();
  const char* why = nullptr;
  if (format.empty() || kv.format != format)
    why = "another K/V format (engine, store type, shape or model)";
  else if (!blocks_.prefix_cache_enabled())
    why = "this worker's prefix cache is off";
  else if (n % bs != 0 || n >= tokens.size() || !std::equal(kv.tokens.begin(), kv.tokens.end(), tokens.begin()))
    why = "its tokens are not whole blocks of the request's prompt and resumed tokens";
  else if (kv.bytes.size() != n / bs * engine_.kv_block_bytes())
    why = "its size does not match its tokens";
  std::optional<std::uint32_t> hit;
  const cache::seq_id seq{id.value()};
  if (!why && !(hit = blocks_.allocate(seq, kv.tokens, adapter, salt)))
    why = "the K/V pool is full";
  if (!why) {
    // Blocks the prefix cache already held stay as they are; the rest are written, published to
    // the index and released, so they wait (evictable, newest in LRU order) for this request.
    const auto first = *hit / bs;
    const auto& table = blocks_.block_table(seq);
    const std::vector<cache::block_id> ids(table.begin() + first, table.end());
    try {
      engine_.write_kv(ids, std::string_view(kv.bytes).substr(std::size_t{first} * engine_.kv_block_bytes()));
      blocks_.commit_tokens(seq, kv.tokens, static_cast<std::uint32_t>(n));
    } catch (const std::exception& e) {
      log::warn("worker", "K/V import failed", {{"reason", e.what()}});
      why = "writing it failed";
    }
    blocks_.free(seq);
  }
  std::lock_guard<std::mutex> g(mtx_);
  if (why) {
    ++load_.kv_refused;
    log::info("worker", "shipped K/V not used: recomputing", {{"tokens", n}, {"reason", why}});
    return 0;
  }
  const auto imported = static_cast<std::uint32_t>(n - *hit);
  load_.kv_imported_tokens += imported;
  return imported;
}

} // namespace lf::worker
