#include "worker/kv_porter.hpp"

#include <algorithm>
#include <exception>

#include "core/log.hpp"
#include "worker/engine/model/step_engine.hpp"

namespace lf::worker {

kv_blob kv_porter::export_kv(cache::seq_id seq, const std::vector<std::int32_t>& tokens) {
  kv_blob out;
  if (engine_.kv_format().empty() || !blocks_.contains(seq))
    return out;
  const auto bs = blocks_.block_size();
  const auto full = blocks_.num_computed(seq) / bs;
  if (full == 0 || tokens.size() < std::size_t{full} * bs)
    return out;
  const auto& table = blocks_.block_table(seq);
  const std::vector<cache::block_id> ids(table.begin(), table.begin() + full);
  out.format = engine_.kv_format();
  out.tokens.assign(tokens.begin(), tokens.begin() + std::size_t{full} * bs);
  try {
    engine_.read_kv(ids, out.bytes);
  } catch (const std::exception& e) {
    log::warn("worker", "K/V export failed: the request is recomputed where it moves", {{"reason", e.what()}});
    return {};
  }
  counts_.exported_tokens += out.tokens.size();
  return out;
}

std::uint32_t kv_porter::import_kv(cache::seq_id seq, cache::adapter_id adapter, cache::cache_salt salt,
                                   const std::vector<std::int32_t>& tokens, const kv_blob& kv, std::string& why) {
  why.clear();
  const auto bs = blocks_.block_size();
  const auto n = kv.tokens.size();
  const auto format = engine_.kv_format();
  if (format.empty() || kv.format != format)
    why = "another K/V format (engine, store type, shape or model)";
  else if (!blocks_.prefix_cache_enabled())
    why = "this worker's prefix cache is off";
  else if (n % bs != 0 || n >= tokens.size() || !std::equal(kv.tokens.begin(), kv.tokens.end(), tokens.begin()))
    why = "its tokens are not whole blocks of the request's prompt and resumed tokens";
  else if (kv.bytes.size() != n / bs * engine_.kv_block_bytes())
    why = "its size does not match its tokens";
  std::optional<std::uint32_t> hit;
  if (why.empty() && !(hit = blocks_.allocate(seq, kv.tokens, adapter, salt)))
    why = "the K/V pool is full";
  if (why.empty()) {
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
  if (!why.empty()) {
    ++counts_.refused;
    log::info("worker", "shipped K/V not used: recomputing", {{"tokens", n}, {"reason", why}});
    return 0;
  }
  const auto imported = static_cast<std::uint32_t>(n - *hit);
  counts_.imported_tokens += imported;
  return imported;
}

} // namespace lf::worker
