#pragma once
/// Moving a sequence's K/V between serving loops: exported when a drain cancels a request with
/// ship_kv, imported by the next worker's submit into its prefix cache, where admission finds it
/// (the request then computes only the rest). Every check of a blob that comes in is here: the
/// engine's format, whole blocks of the request's own tokens, the size, room in the pool. A blob
/// that fails one is refused with the reason (the request is recomputed, nothing else happens).
/// The loop thread's alone; no clock, no lock.

#include <cstdint>
#include <string>
#include <vector>

#include "cache/block_manager.hpp"
#include "cache/cache_salt.hpp"
#include "worker/request.hpp"

namespace lf::engine {
class step_engine;
}

namespace lf::worker {

/// What the porter has moved so far.
struct kv_port_counts {
  std::uint64_t exported_tokens = 0;  ///< tokens whose K/V left with a moved request
  std::uint64_t imported_tokens = 0;  ///< tokens whose K/V came in (not already in the prefix cache)
  std::uint64_t refused = 0;          ///< blobs that came in and could not be used
};

/// The K/V porter of one serving loop: its engine's K/V bytes and its block manager's blocks.
class kv_porter {
public:
  /// `engine` and `blocks` must outlive the porter.
  kv_porter(engine::step_engine& engine, cache::block_manager& blocks) : engine_(engine), blocks_(blocks) {}

  /// The K/V of `seq`'s computed whole blocks, `tokens` its tokens so far (the scheduler's);
  /// empty when the engine cannot move K/V, nothing whole is computed, or reading fails.
  kv_blob export_kv(cache::seq_id seq, const std::vector<std::int32_t>& tokens);

  /// Writes `kv` into the prefix cache as `adapter`'s blocks under `salt` (the namespace the
  /// scheduler will look in for this request), for a request whose prompt and resumed tokens are
  /// `tokens`. Returns the tokens imported (0 when refused; `why` then says why, else empty).
  /// Uses `seq` for the moment of the write and frees it again.
  std::uint32_t import_kv(cache::seq_id seq, cache::adapter_id adapter, cache::cache_salt salt,
                          const std::vector<std::int32_t>& tokens, const kv_blob& kv, std::string& why);

  /// So far.
  const kv_port_counts& counts() const noexcept { return counts_; }

private:
  engine::step_engine& engine_;
  cache::block_manager& blocks_;
  kv_port_counts counts_;
};

} // namespace lf::worker
