#pragma once
/// Tenants as the router sees them: how its admission queue orders requests of different
/// tenants, and each tenant's limits and share. Pure C++ (no CAF, no clock).
///
/// A request's tenant comes from the client (protocol field `tenant`, the OpenAI `user`, or the
/// name of its CURVE key, which takes precedence); "" is the unnamed default tenant. Tenants
/// without an entry of their own (the default tenant included) get `defaults`.

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "core/vtc.hpp"

namespace lf::router {

/// "No limit" for the counts below.
inline constexpr std::uint32_t no_limit = std::numeric_limits<std::uint32_t>::max();

/// One tenant's limits and share.
struct tenant_limits {
  /// Requests placed on workers at once; more wait in the admission queue (others go first).
  std::uint32_t max_inflight = no_limit;
  /// Requests waiting in the admission queue; a request that would exceed it is refused at once
  /// with `overloaded` naming the tenant. 0: a request that cannot be placed at once is refused.
  std::uint32_t max_queued = no_limit;
  /// Share of the service while backlogged (VTC weight); > 0.
  double weight = 1.0;
};

/// The router's tenant settings ([router] scheduling, [tenant_defaults], [tenants.NAME]).
struct tenancy_options {
  scheduling_policy scheduling = scheduling_policy::vtc;
  vtc_weights token_weights;                     ///< VTC's cost of a prompt and an output token
  tenant_limits defaults;                        ///< every tenant without an entry below
  std::map<std::string, tenant_limits> tenants;  ///< by name

  /// `tenant`'s limits: its entry, or `defaults`.
  const tenant_limits& limits_of(const std::string& tenant) const {
    auto it = tenants.find(tenant);
    return it == tenants.end() ? defaults : it->second;
  }
};

/// A tenant's name for messages and logs: the name in quotes, or "the default tenant".
std::string tenant_label(const std::string& tenant);

} // namespace lf::router
