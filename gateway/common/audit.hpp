#pragma once
/// The audit line both gateways write at their doors: who asked for what, from where, and what
/// came of it (core/access.hpp decides who may).

#include <string_view>

#include "core/access.hpp"

namespace lf::gateway {

/// The audit line (info, component "audit"): key name ("-" when anonymous), role, remote
/// address, door ("http" / "zmq"), operation, result ("ok", "unauthenticated", "forbidden", or
/// the error's code), and the reason when refused.
void audit(const auth::caller& c, std::string_view remote, std::string_view door, std::string_view op,
           std::string_view result, std::string_view why = {});

} // namespace lf::gateway
