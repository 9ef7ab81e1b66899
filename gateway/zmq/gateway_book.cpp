#include "gateway/zmq/gateway_book.hpp"

namespace lf::gateway {

std::variant<gateway_id, add_refusal> gateway_book::add(const std::string& identity,
                                                        proto::client_request_id id, bool stream) {
  auto& conn = by_conn_[identity];
  if (conn.count(id.value()))
    return add_refusal::duplicate_id;
  if (conn.size() >= max_per_conn_)
    return add_refusal::too_many_requests;
  const auto g = next_++;
  conn.emplace(id.value(), g);
  gateway_entry e;
  e.identity = identity;
  e.client_id = id;
  e.stream = stream;
  entries_.emplace(g, std::move(e));
  return gateway_id{g};
}

gateway_entry* gateway_book::find(gateway_id g) {
  auto it = entries_.find(g.value());
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<gateway_id> gateway_book::lookup(const std::string& identity,
                                               proto::client_request_id id) const {
  auto c = by_conn_.find(identity);
  if (c == by_conn_.end())
    return std::nullopt;
  auto it = c->second.find(id.value());
  if (it == c->second.end())
    return std::nullopt;
  return gateway_id{it->second};
}

void gateway_book::end(gateway_id g) {
  auto it = entries_.find(g.value());
  if (it == entries_.end())
    return;
  auto c = by_conn_.find(it->second.identity);
  if (c != by_conn_.end()) {
    c->second.erase(it->second.client_id.value());
    if (c->second.empty())
      by_conn_.erase(c);
  }
  entries_.erase(it);
}

std::vector<gateway_id> gateway_book::drop_connection(const std::string& identity) {
  std::vector<gateway_id> out;
  auto c = by_conn_.find(identity);
  if (c == by_conn_.end())
    return out;
  for (auto [client, g] : c->second) {
    out.push_back(gateway_id{g});
    entries_.erase(g);
  }
  by_conn_.erase(c);
  return out;
}

std::vector<gateway_id> gateway_book::all() const {
  std::vector<gateway_id> out;
  for (const auto& [g, e] : entries_)
    out.push_back(gateway_id{g});
  return out;
}

std::size_t gateway_book::live_for(const std::string& identity) const {
  auto c = by_conn_.find(identity);
  return c == by_conn_.end() ? 0 : c->second.size();
}

} // namespace lf::gateway
