#include "gateway/zmq/access.hpp"

#include <type_traits>
#include <variant>

namespace lf::gateway {

auth::op_class op_class_of(const proto::client_decode_result& m) noexcept {
  return std::visit(
    [](const auto& msg) {
      using T = std::decay_t<decltype(msg)>;
      if constexpr (std::is_same_v<T, proto::adapters_msg>)
        return msg.op == "list" ? auth::op_class::user : auth::op_class::admin;
      else if constexpr (std::is_same_v<T, proto::ping_msg> || std::is_same_v<T, proto::decode_error>)
        return auth::op_class::open;
      else if constexpr (std::is_same_v<T, proto::submit_msg> || std::is_same_v<T, proto::cancel_msg>
                         || std::is_same_v<T, proto::credit_msg> || std::is_same_v<T, proto::stats_msg>)
        return auth::op_class::user;
      else
        return auth::op_class::admin;  // drain, undrain, and whatever changes the cluster next
    },
    m);
}

std::string op_name_of(const proto::client_decode_result& m) {
  return std::visit(
    [](const auto& msg) -> std::string {
      using T = std::decay_t<decltype(msg)>;
      if constexpr (std::is_same_v<T, proto::adapters_msg>)
        return "adapters." + msg.op;
      else if constexpr (std::is_same_v<T, proto::drain_msg>)
        return "drain " + msg.node;
      else if constexpr (std::is_same_v<T, proto::undrain_msg>)
        return "undrain " + msg.node;
      else if constexpr (std::is_same_v<T, proto::submit_msg>)
        return "submit";
      else if constexpr (std::is_same_v<T, proto::stats_msg>)
        return "stats";
      else
        return "message";
    },
    m);
}

auth::caller zmq_caller(const auth::key_table* keys, const std::string& key_name, bool local) {
  auth::caller c;
  c.local = local;
  if (key_name.empty())
    return c;
  c.name = key_name;
  c.tenant = key_name;
  if (const auto* k = keys != nullptr ? keys->find_name(key_name) : nullptr) {
    c.role = k->role;
    c.tenant = k->tenant;
  }
  return c;
}

} // namespace lf::gateway
