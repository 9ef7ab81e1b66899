#include "gateway/common/router_link_book.hpp"

#include <stdexcept>

namespace lf::gateway {

router_link_book::router_link_book(std::size_t routers) : slots_(routers) {}

void router_link_book::router_up(std::size_t r) { slots_.at(r).live = true; }

std::vector<link_stream_id> router_link_book::router_down(std::size_t r, link_clock::time_point now) {
  auto& sl = slots_.at(r);
  sl.live = false;
  sl.accepting = 0;
  std::vector<link_stream_id> out;
  for (auto& [id, s] : streams_)
    if (s.router == r) {
      detach(s);
      s.waiting_since = now;
      out.push_back(id);
    }
  return out;
}

void router_link_book::router_accepting(std::size_t r, std::uint32_t accepting) { slots_.at(r).accepting = accepting; }

std::optional<std::size_t> router_link_book::pick(std::optional<std::size_t> except) {
  std::optional<std::size_t> best;
  auto better = [&](std::size_t a, std::size_t b) {  // is a better than b?
    const bool wa = slots_[a].accepting > 0, wb = slots_[b].accepting > 0;
    if (wa != wb)
      return wa;
    return slots_[a].streams < slots_[b].streams;
  };
  const auto n = slots_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const auto r = (turn_ + k) % n;
    if (!slots_[r].live || (except && *except == r))
      continue;
    if (!best || better(r, *best))
      best = r;
  }
  if (best)
    turn_ = (*best + 1) % n;
  return best;
}

link_stream_id router_link_book::open(request_draft draft, std::uint32_t window, std::size_t r,
                                      link_clock::time_point now, std::vector<std::int32_t> continued) {
  if (!draft.params.seed)
    throw std::invalid_argument("router_link_book::open: the draft needs its seed");
  const auto id = next_id_++;
  auto& s = streams_[id];
  s.id = id;
  s.draft = std::move(draft);
  s.credits = credit_window(window);
  s.tokens = std::move(continued);
  s.router = r;
  s.opened = now;
  ++slots_.at(r).streams;
  return id;
}

const link_stream* router_link_book::find(link_stream_id id) const {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : &it->second;
}

bool router_link_book::token(link_stream_id id, std::size_t r, std::uint32_t index, std::int32_t token) {
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.router != r || index != it->second.tokens.size())
    return false;
  it->second.tokens.push_back(token);
  return true;
}

bool router_link_book::carried_by(link_stream_id id, std::size_t r) const {
  auto it = streams_.find(id);
  return it != streams_.end() && it->second.router == r;
}

std::uint32_t router_link_book::grant(link_stream_id id, std::uint32_t tokens) {
  auto it = streams_.find(id);
  if (it == streams_.end())
    return 0;
  it->second.credits.grant(tokens);
  return it->second.credits.bound();
}

void router_link_book::wait(link_stream_id id, link_clock::time_point now) {
  auto it = streams_.find(id);
  if (it == streams_.end())
    return;
  detach(it->second);
  it->second.waiting_since = now;
}

std::variant<link_continuation, link_expired> router_link_book::continue_on(link_stream_id id, std::size_t r,
                                                                          link_clock::time_point now) {
  auto& s = streams_.at(id);
  link_continuation c;
  c.draft = s.draft;
  if (s.draft.timeout_ms > 0) {
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(now - s.opened).count();
    if (spent >= static_cast<std::int64_t>(s.draft.timeout_ms))
      return link_expired{};
    c.draft.timeout_ms = static_cast<std::uint32_t>(s.draft.timeout_ms - spent);
  }
  c.window = s.credits.bound();
  c.continued = s.tokens;
  detach(s);
  s.router = r;
  s.waiting_since.reset();
  ++slots_.at(r).streams;
  ++s.continuations;
  ++continuations_;
  return c;
}

void router_link_book::close(link_stream_id id) {
  auto it = streams_.find(id);
  if (it == streams_.end())
    return;
  detach(it->second);
  streams_.erase(it);
}

std::vector<link_stream_id> router_link_book::waiting() const {
  std::vector<link_stream_id> out;
  for (const auto& [id, s] : streams_)
    if (!s.router)
      out.push_back(id);
  return out;
}

std::vector<link_stream_id> router_link_book::waited_past(std::chrono::milliseconds limit,
                                                          link_clock::time_point now) const {
  std::vector<link_stream_id> out;
  for (const auto& [id, s] : streams_)
    if (!s.router && s.waiting_since && now - *s.waiting_since >= limit)
      out.push_back(id);
  return out;
}

void router_link_book::detach(link_stream& s) {
  if (s.router) {
    auto& sl = slots_.at(*s.router);
    if (sl.streams > 0)
      --sl.streams;
  }
  s.router.reset();
}

} // namespace lf::gateway
