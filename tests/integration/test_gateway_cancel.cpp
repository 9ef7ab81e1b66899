// Cancels racing their requests over the real socket: a cancel before the submit, right after it
// (before `accepted`), on the first token, on the last token (racing `done`), right after the
// terminal reply, and for ids never used. Every request gets exactly one terminal reply, and
// nothing at all arrives for an id after it (docs/protocol.md, "Request life").
#include "tests/integration/gateway_fixture.hpp"

#include <sstream>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

/// When the test cancels a request.
enum class cancel_at { before_submit, after_submit, first_token, last_token, after_terminal, never };
constexpr int plans = 6;

const char* to_string(cancel_at c) {
  switch (c) {
    case cancel_at::before_submit: return "before_submit";
    case cancel_at::after_submit: return "after_submit";
    case cancel_at::first_token: return "first_token";
    case cancel_at::last_token: return "last_token";
    case cancel_at::after_terminal: return "after_terminal";
    case cancel_at::never: return "never";
  }
  return "?";
}

cancel_at plan_of(std::uint64_t id) { return static_cast<cancel_at>(id % plans); }

/// The wire name of a server message.
std::string type_of(const proto::server_message& m) {
  static const char* names[] = {"accepted", "token", "done", "error", "cancelled", "stats", "pong"};
  return names[m.index()];
}

/// What one request id received.
struct record {
  std::string terminal;             ///< the first terminal reply's type; empty while live
  std::vector<std::string> after;   ///< everything that arrived after it
};

} // namespace

TEST_CASE("cancels racing their requests: one terminal reply each, nothing after it, "
          "cancels of unknown ids ignored",
          "[gateway][model]") {
  gateway_cluster gc;
  raw_client raw(gc.endpoint());
  constexpr std::uint64_t n = 120;
  constexpr int max_tokens = 32;
  constexpr std::uint64_t never_used = 1'000'000;
  auto cancel = [&](std::uint64_t id) {
    raw.send(proto::encode(proto::cancel_msg{proto::client_request_id{id}}));
  };

  cancel(never_used);  // before anything: no reply
  for (std::uint64_t id = 1; id <= n; ++id) {
    const auto plan = plan_of(id);
    if (plan == cancel_at::before_submit)
      cancel(id);  // not live yet: ignored, and not remembered
    raw.send(proto::encode(greedy(prompts()[id % prompts().size()], max_tokens, proto::client_request_id{id})));
    if (plan == cancel_at::after_submit)
      cancel(id);  // reaches the gateway before any `accepted` can have been sent
    if (id % 10 == 0)
      cancel(never_used + id);
  }

  std::map<std::uint64_t, record> seen;
  std::vector<std::string> stray;  // id-less replies other than stats/pong, replies to unused ids
  std::size_t ended = 0;
  bool fenced = false;
  auto take = [&](const proto::server_message& m) {
    const auto rid = proto::request_of(m);
    if (!rid) {
      if (std::holds_alternative<proto::stats_reply>(m))
        fenced = true;
      else if (!std::holds_alternative<proto::pong_msg>(m))
        stray.push_back(type_of(m) + " without id");
      return;
    }
    const auto id = rid->value();
    if (id == 0 || id > n) {
      stray.push_back(type_of(m) + " for unused id " + std::to_string(id));
      return;
    }
    auto& r = seen[id];
    if (!r.terminal.empty()) {
      r.after.push_back(type_of(m));
      return;
    }
    if (proto::is_terminal(m)) {
      r.terminal = type_of(m);
      ++ended;
      if (plan_of(id) == cancel_at::after_terminal) {
        cancel(id);
        cancel(id);
      }
    } else if (const auto* t = std::get_if<proto::token_msg>(&m)) {
      if ((plan_of(id) == cancel_at::first_token && t->index == 0)
          || (plan_of(id) == cancel_at::last_token && t->index + 1 == static_cast<std::uint32_t>(max_tokens)))
        cancel(id);
    }
  };

  const auto until = std::chrono::steady_clock::now() + 120s;
  while (ended < n && std::chrono::steady_clock::now() < until)
    if (auto m = raw.recv_decoded(500ms))
      take(*m);
  REQUIRE(ended == n);
  // A fence: the gateway actor answers `stats` after handling every frame sent before it, and the
  // router answers after every cancel sent before it. Then a quiet window for anything later.
  cancel(never_used + 1);
  raw.send(proto::encode(proto::stats_msg{}));
  const auto fence_until = std::chrono::steady_clock::now() + 10s;
  while (!fenced && std::chrono::steady_clock::now() < fence_until)
    if (auto m = raw.recv_decoded(500ms))
      take(*m);
  CHECK(fenced);
  while (auto m = raw.recv_decoded(300ms))
    take(*m);

  std::ostringstream problems;
  std::map<cancel_at, std::map<std::string, int>> outcomes;
  for (std::uint64_t id = 1; id <= n; ++id) {
    const auto& r = seen[id];
    const auto plan = plan_of(id);
    ++outcomes[plan][r.terminal];
    for (const auto& a : r.after)
      problems << "id " << id << " (" << to_string(plan) << "): " << a << " after " << r.terminal << "\n";
    const bool may_cancel = plan == cancel_at::after_submit || plan == cancel_at::first_token
                            || plan == cancel_at::last_token;
    if (r.terminal != "done" && !(may_cancel && r.terminal == "cancelled"))
      problems << "id " << id << " (" << to_string(plan) << "): ended with " << r.terminal << "\n";
  }
  for (const auto& s : stray)
    problems << s << "\n";
  INFO(problems.str());
  CHECK(problems.str().empty());
  // The early cancels took effect (most 32-token requests are still running when they arrive).
  INFO("after_submit: " << outcomes[cancel_at::after_submit]["cancelled"] << " cancelled");
  CHECK(outcomes[cancel_at::after_submit]["cancelled"] > 0);
  // The connection is still served.
  raw.send(proto::encode(greedy("Hi", 2, proto::client_request_id{n + 1})));
  CHECK(raw.wait_for_type<proto::done_msg>(30s));
}
