#include "tools/soak/driver.hpp"

#include <algorithm>
#include <optional>
#include <thread>
#include <unordered_set>

#include <zmq.hpp>

#include "proto/protocol.hpp"
#include "tools/soak/frames.hpp"

namespace lf::soak {

namespace {

using clock = std::chrono::steady_clock;

/// One DEALER socket and the request it has in flight.
struct client_slot {
  std::unique_ptr<zmq::socket_t> sock;
  std::optional<std::size_t> live;          ///< plan index in flight
  clock::time_point sent_at{};
  std::optional<clock::time_point> cancel_due;  ///< after_delay
  std::unordered_set<std::uint64_t> sent_ids;   ///< every id this socket submitted
  std::unordered_map<std::uint64_t, clock::time_point> submitted_at;
};

double ms_since(clock::time_point t, clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - t).count();
}

/// The server message as an observed event; nullopt for stats, pong and id-less errors.
std::optional<std::pair<std::uint64_t, observed>> to_observed(const proto::server_decode_result& d) {
  observed e;
  std::optional<std::uint64_t> id;
  std::visit(
    [&](auto&& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, proto::accepted_msg>) {
        id = x.id.value();
        e.kind = event_kind::accepted;
      } else if constexpr (std::is_same_v<T, proto::token_msg>) {
        id = x.id.value();
        e.kind = event_kind::token;
        e.index = x.index;
        e.token = x.token;
        e.text = x.text;
      } else if constexpr (std::is_same_v<T, proto::done_msg>) {
        id = x.id.value();
        e.kind = event_kind::done;
        e.finish_reason = x.finish_reason;
        e.completion_tokens = x.usage.completion_tokens;
        e.resumed = x.usage.resumed;
        e.seed = x.seed;
      } else if constexpr (std::is_same_v<T, proto::error_msg>) {
        if (x.id)
          id = x.id->value();
        e.kind = event_kind::error;
        e.code = x.code;
        e.message = x.message;
      } else if constexpr (std::is_same_v<T, proto::cancelled_msg>) {
        id = x.id.value();
        e.kind = event_kind::cancelled;
      }
    },
    d);
  if (!id)
    return std::nullopt;
  return std::make_pair(*id, std::move(e));
}

std::string describe_frame(const proto::server_decode_result& d) {
  if (auto* e = std::get_if<proto::error_msg>(&d))
    return "error " + std::string(to_string(e->code)) + " without an id: " + e->message;
  if (auto* e = std::get_if<proto::decode_error>(&d))
    return "an undecodable frame: " + e->message;
  return "a stats, pong or drained reply nobody asked for";
}

} // namespace

driver::driver(driver_options o, const std::vector<planned_request>& plans)
    : opts_(std::move(o)), plans_(plans), logs_(plans.size()), gate_(plans.size()) {
  for (std::size_t i = 0; i < plans_.size(); ++i)
    if (!index_of_.emplace(plans_[i].id, i).second)
      throw std::invalid_argument("soak driver: request id " + std::to_string(plans_[i].id) + " twice");
  opts_.clients = std::max<std::uint32_t>(1, opts_.clients);
  opts_.threads = std::clamp<std::uint32_t>(opts_.threads, 1, opts_.clients);
}

std::optional<std::size_t> driver::claim() {
  auto i = next_.load();
  while (i < gate_.load())
    if (next_.compare_exchange_weak(i, i + 1))
      return i;
  return std::nullopt;
}

void driver::stray(std::string what) {
  std::lock_guard<std::mutex> lk(stray_m_);
  strays_.push_back(std::move(what));
}

std::vector<std::string> driver::strays() const {
  std::lock_guard<std::mutex> lk(stray_m_);
  return strays_;
}

bool driver::run() {
  const auto start = clock::now();
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < opts_.threads; ++t)
    threads.emplace_back([this, t, start] { run_thread(t, start); });
  for (auto& t : threads)
    t.join();
  duration_s_ = static_cast<double>(last_end_us_.load()) / 1e6;
  return progress_.ended.load() == plans_.size();
}

void driver::run_thread(std::uint32_t t, clock::time_point start) {
  zmq::context_t ctx{1};
  std::vector<client_slot> slots;
  for (std::uint32_t c = t; c < opts_.clients; c += opts_.threads) {
    client_slot s;
    s.sock = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
    s.sock->set(zmq::sockopt::linger, 0);
    s.sock->set(zmq::sockopt::rcvhwm, 0);  // never drop what the server sends
    s.sock->set(zmq::sockopt::sndhwm, 0);
    s.sock->connect(opts_.endpoint);
    slots.push_back(std::move(s));
  }
  auto send = [](client_slot& s, const std::string& frame) { s.sock->send(zmq::buffer(frame), zmq::send_flags::none); };
  auto cancel = [&](client_slot& s, std::size_t i, clock::time_point now) {
    auto& log = logs_[i];
    if (log.cancel_sent)
      return;
    log.cancel_sent = true;
    log.cancel_at_ms = ms_since(s.sent_at, now);
    send(s, cancel_frame(plans_[i].id));
  };
  std::optional<clock::time_point> quiet_since;
  const auto give_up = start + opts_.limit;
  std::vector<zmq::pollitem_t> items;
  for (auto& s : slots)
    items.push_back({static_cast<void*>(*s.sock), 0, ZMQ_POLLIN, 0});
  while (true) {
    auto now = clock::now();
    bool any_live = false;
    for (auto& s : slots) {
      if (!s.live) {
        if (const auto claimed = claim()) {
          const auto i = *claimed;
          const auto& p = plans_[i];
          s.live = i;
          s.sent_at = now;
          s.sent_ids.insert(p.id);
          s.submitted_at[p.id] = now;
          s.cancel_due.reset();
          logs_[i].submitted = true;
          send(s, submit_frame(p));
          ++progress_.sent;
          if (p.cancel == cancel_mode::before_accept)
            cancel(s, i, now);
          else if (p.cancel == cancel_mode::after_delay)
            s.cancel_due = now + std::chrono::milliseconds(p.cancel_after_ms);
        }
      }
      any_live |= s.live.has_value();
    }
    if (!any_live && next_.load() >= plans_.size()) {
      if (!quiet_since)
        quiet_since = now;
      if (now - *quiet_since >= opts_.settle)
        return;
    }
    if (now > give_up + opts_.settle)
      return;
    auto wait = std::chrono::milliseconds(20);
    for (auto& s : slots)
      if (s.cancel_due)
        wait = std::min(wait, std::max(std::chrono::milliseconds(0),
                                       std::chrono::duration_cast<std::chrono::milliseconds>(*s.cancel_due - now)));
    zmq::poll(items.data(), items.size(), wait);
    now = clock::now();
    for (std::size_t k = 0; k < slots.size(); ++k) {
      auto& s = slots[k];
      if (s.live && s.cancel_due && now >= *s.cancel_due) {
        s.cancel_due.reset();
        cancel(s, *s.live, now);
      }
      if (!(items[k].revents & ZMQ_POLLIN))
        continue;
      zmq::message_t msg;
      while (s.sock->recv(msg, zmq::recv_flags::dontwait)) {
        const auto d = proto::decode_server(std::string_view(static_cast<const char*>(msg.data()), msg.size()));
        auto ev = to_observed(d);
        if (!ev) {
          stray("client " + std::to_string(k * opts_.threads + t) + ": " + describe_frame(d));
          continue;
        }
        auto& [id, e] = *ev;
        auto it = index_of_.find(id);
        if (it == index_of_.end() || !s.sent_ids.count(id)) {
          stray("client " + std::to_string(k * opts_.threads + t) + ": a " + std::string(to_string(e.kind))
                + " for request " + std::to_string(id) + ", which it never sent");
          continue;
        }
        const auto i = it->second;
        const auto& p = plans_[i];
        auto& log = logs_[i];
        e.at_ms = ms_since(s.submitted_at[id], now);
        const bool was_live = s.live == i && !log.terminal();
        const auto kind = e.kind;
        const auto index = e.index;
        log.events.push_back(std::move(e));
        if (!was_live)
          continue;  // recorded: the checker reports it
        if (kind == event_kind::token) {
          ++progress_.tokens;
          const auto n = index + 1;
          if ((p.cancel == cancel_mode::after_tokens && n == p.cancel_after_tokens)
              || (p.cancel == cancel_mode::near_end && p.max_tokens >= 2 && index + 2 == static_cast<std::uint32_t>(p.max_tokens)))
            cancel(s, i, now);
        } else if (kind == event_kind::done || kind == event_kind::error || kind == event_kind::cancelled) {
          ++(kind == event_kind::done ? progress_.done : kind == event_kind::cancelled ? progress_.cancelled : progress_.errors);
          ++progress_.ended;
          if (kind == event_kind::done && p.cancel == cancel_mode::after_end)
            cancel(s, i, now);
          s.live.reset();
          s.cancel_due.reset();
          const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - start).count();
          auto prev = last_end_us_.load();
          while (prev < us && !last_end_us_.compare_exchange_weak(prev, us)) {
          }
        }
      }
    }
  }
}

} // namespace lf::soak
