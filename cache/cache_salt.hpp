#pragma once
/// Which prefix-cache namespace a request's blocks live in (vLLM's cache_salt): the isolation
/// setting, a tenant's salt, and the one rule that picks a request's salt. Pure, header-only.
///
/// Why: a prefix-cache hit makes the first token come sooner, so a tenant that could hit another
/// tenant's blocks could learn, by timing, whether that tenant sent a given prompt. With
/// `tenant` isolation each named tenant reuses only its own blocks; the default tenant ""
/// (anonymous requests) keeps the shared namespace, as before tenants had keys.

#include <cstdint>
#include <optional>
#include <string_view>

#include "cache/block_hash.hpp"
#include "cache/ids.hpp"

namespace lf::cache {

/// Who may reuse whose prefix-cache blocks.
enum class prefix_isolation : std::uint8_t {
  tenant,  ///< each named tenant its own namespace; the default tenant "" the shared one
  shared,  ///< every request the shared namespace (any request may hit any other's blocks)
};

/// "tenant", "shared".
constexpr std::string_view to_string(prefix_isolation m) noexcept {
  return m == prefix_isolation::tenant ? "tenant" : "shared";
}

/// Parses to_string's spellings; std::nullopt otherwise.
inline std::optional<prefix_isolation> parse_prefix_isolation(std::string_view s) noexcept {
  if (s == "tenant")
    return prefix_isolation::tenant;
  if (s == "shared")
    return prefix_isolation::shared;
  return std::nullopt;
}

/// A tenant's salt: FNV-1a of its name, finalised by mix64, never no_salt. Deterministic across
/// processes, so a request moved to another worker (and K/V shipped with it on a drain) lands in
/// the same namespace there. Two tenants share a namespace only on a 64-bit collision of their
/// names' hashes; within a namespace reuse stays exact (block_manager compares keys).
inline cache_salt tenant_salt(std::string_view tenant) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : tenant) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h = mix64(h ^ tenant.size());
  return cache_salt{h == 0 ? 1 : h};
}

/// The salt of a request of `tenant` under `mode`: shared -> no_salt; tenant -> no_salt for the
/// default tenant "", else tenant_salt(tenant).
inline cache_salt request_salt(prefix_isolation mode, std::string_view tenant) noexcept {
  if (mode == prefix_isolation::shared || tenant.empty())
    return no_salt;
  return tenant_salt(tenant);
}

} // namespace lf::cache
