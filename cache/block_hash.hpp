#pragma once
/// Hash of a full KV block's prefix-cache key: (parent block's hash, adapter, the block's tokens).
/// Chaining the parent's hash makes the value depend on the whole prefix, so equal hashes mean
/// "probably the same prefix". The index never trusts the hash alone: see block_manager.
/// A salt (cache_salt) enters through the first block's parent hash (`salted_root`), so it
/// reaches every block of the chain without changing `block_hasher`.

#include <cstdint>

#include "cache/ids.hpp"

namespace lf::cache {

/// Computes a block key's hash. Must be a pure function of its arguments.
using block_hasher = std::uint64_t (*)(std::uint64_t parent_hash, adapter_id adapter,
                                       const std::int32_t* tokens, std::uint32_t num_tokens);

/// The "parent hash" of a sequence's first block.
inline constexpr std::uint64_t root_block_hash = 0x6a09e667f3bcc909ULL;

/// splitmix64's finaliser: a bijection on 64 bits with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// The parent hash of a first block under `salt`: root_block_hash for no_salt, so unsalted
/// hashes are those of a build without salts.
constexpr std::uint64_t salted_root(cache_salt salt) noexcept {
  return salt == no_salt ? root_block_hash : mix64(root_block_hash ^ mix64(salt.value()));
}

/// Default block hasher. Deterministic across processes and runs (no per-process seed), so
/// hashes could be compared between workers; each step is a bijection of the running state, so two
/// keys that differ in a single token never collide.
inline std::uint64_t default_block_hash(std::uint64_t parent_hash, adapter_id adapter,
                                        const std::int32_t* tokens,
                                        std::uint32_t num_tokens) noexcept {
  constexpr std::uint64_t step = 0x9e3779b97f4a7c15ULL;
  std::uint64_t h = mix64(parent_hash + step);
  h = mix64((h ^ adapter.value()) + step);
  h = mix64((h ^ num_tokens) + step);
  for (std::uint32_t i = 0; i < num_tokens; ++i)
    h = mix64((h ^ static_cast<std::uint32_t>(tokens[i])) + step);
  return h;
}

} // namespace lf::cache
