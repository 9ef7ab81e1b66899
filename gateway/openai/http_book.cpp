#include "gateway/openai/http_book.hpp"

namespace lf::gateway {

const std::vector<actors::sink_request_id>& http_book::add(std::uint64_t hid, http_entry e, std::size_t choices) {
  e.choices.clear();
  for (std::size_t c = 0; c < choices; ++c) {
    const actors::sink_request_id g{next_gid_++};
    e.choices.push_back(g);
    by_choice_[g.value()] = {hid, c};
  }
  return entries_.insert_or_assign(hid, std::move(e)).first->second.choices;
}

std::optional<choice_ref> http_book::lookup(actors::sink_request_id g) {
  auto it = by_choice_.find(g.value());
  if (it == by_choice_.end())
    return std::nullopt;
  const auto [hid, choice] = it->second;
  auto e = entries_.find(hid);
  if (e == entries_.end())
    return std::nullopt;
  return choice_ref{hid, choice, &e->second};
}

bool http_book::end_choice(actors::sink_request_id g) { return by_choice_.erase(g.value()) > 0; }

std::vector<actors::sink_request_id> http_book::finish(std::uint64_t hid) {
  std::vector<actors::sink_request_id> live;
  auto it = entries_.find(hid);
  if (it == entries_.end())
    return live;
  for (auto g : it->second.choices)
    if (by_choice_.erase(g.value()))
      live.push_back(g);
  entries_.erase(it);
  return live;
}

http_entry* http_book::find(std::uint64_t hid) {
  auto it = entries_.find(hid);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::uint64_t> http_book::all() const {
  std::vector<std::uint64_t> out;
  out.reserve(entries_.size());
  for (const auto& [hid, e] : entries_)
    out.push_back(hid);
  return out;
}

} // namespace lf::gateway
