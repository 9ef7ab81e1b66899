// The soak's checker over made-up logs: a clean stream passes; a duplicate token, a gap, a second
// terminal, a message after the terminal, a wrong error, worker_lost and a differing replay are
// each caught and named.
#include <catch2/catch.hpp>

#include "tools/soak/check.hpp"

using namespace lf;
using namespace lf::soak;

namespace {

planned_request greedy(int max_tokens) {
  planned_request r;
  r.id = 7;
  r.prompt = "Once upon a time";
  r.max_tokens = max_tokens;
  return r;
}

observed tok(std::uint32_t index, std::int32_t token, std::string text = "x") {
  observed e;
  e.kind = event_kind::token;
  e.index = index;
  e.token = token;
  e.text = std::move(text);
  e.at_ms = 10.0 + index;
  return e;
}

observed of(event_kind k) {
  observed e;
  e.kind = k;
  return e;
}

observed done(std::uint32_t n, std::uint32_t resumed = 0) {
  auto e = of(event_kind::done);
  e.finish_reason = "length";
  e.completion_tokens = n;
  e.resumed = resumed;
  e.seed = 99;
  e.at_ms = 50;
  return e;
}

observed error(serve_errc c) {
  auto e = of(event_kind::error);
  e.code = c;
  e.message = "why";
  return e;
}

/// accepted, tokens 0..n-1 (token id 100 + i), done.
request_log clean(std::uint32_t n, std::uint32_t resumed = 0) {
  request_log l;
  l.submitted = true;
  l.events.push_back(of(event_kind::accepted));
  for (std::uint32_t i = 0; i < n; ++i)
    l.events.push_back(tok(i, static_cast<std::int32_t>(100 + i)));
  l.events.push_back(done(n, resumed));
  return l;
}

bool mentions(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("a clean stream passes and its text, tokens and TTFT are read back", "[soak]") {
  const auto r = greedy(4);
  const auto l = clean(4);
  CHECK(check_request(r, l).empty());
  CHECK(l.text() == "xxxx");
  CHECK(l.tokens() == std::vector<std::int32_t>{100, 101, 102, 103});
  CHECK(l.ttft_ms() == 10.0);
  REQUIRE(l.terminal());
  CHECK(l.terminal()->kind == event_kind::done);
}

TEST_CASE("a duplicated token, a gap and a second accepted are caught", "[soak]") {
  const auto r = greedy(4);
  auto dup = clean(4);
  dup.events.insert(dup.events.begin() + 3, tok(1, 101));  // index 1 twice
  auto v = check_request(r, dup);
  CHECK(mentions(v, "token index 1 where 2 was due (a duplicate)"));
  CHECK(mentions(v, "done says 4 completion tokens, 5 were streamed"));

  auto restarted = clean(4);  // a resumption that starts over: 0, 1, 0, 1, 2, 3
  restarted.events.insert(restarted.events.begin() + 3, {tok(0, 100), tok(1, 101)});
  v = check_request(greedy(6), restarted);
  CHECK(mentions(v, "token index 0 where 2 was due (a duplicate); 3 more tokens out of place"));

  auto gap = clean(4);
  gap.events.erase(gap.events.begin() + 2);  // index 1 missing
  CHECK(mentions(check_request(r, gap), "(a gap)"));

  auto twice = clean(4);
  twice.events.insert(twice.events.begin() + 2, of(event_kind::accepted));
  CHECK(mentions(check_request(r, twice), "accepted twice"));
}

TEST_CASE("a second terminal or anything after the terminal is caught", "[soak]") {
  const auto r = greedy(2);
  auto second = clean(2);
  second.events.push_back(of(event_kind::cancelled));
  CHECK(mentions(check_request(r, second), "1 message(s) after its terminal reply, the first: cancelled"));
  auto late_token = clean(2);
  late_token.events.push_back(tok(2, 5));
  CHECK(mentions(check_request(r, late_token), "after its terminal reply, the first: token index 2"));
  request_log none;
  none.submitted = true;
  none.events.push_back(of(event_kind::accepted));
  CHECK(mentions(check_request(r, none), "no terminal reply"));
  request_log unsent;
  CHECK(mentions(check_request(r, unsent), "never sent"));
}

TEST_CASE("valid requests must end done, worker_lost and any other error are violations", "[soak]") {
  const auto r = greedy(4);
  auto lost = clean(2);
  lost.events.back() = error(serve_errc::worker_lost);
  CHECK(mentions(check_request(r, lost), "ended with error worker_lost"));
  auto overloaded = request_log{true, false, 0, {error(serve_errc::overloaded)}};
  CHECK(mentions(check_request(r, overloaded), "overloaded"));
  // Finishing for length short of max_tokens, or at end-of-text while ignoring it.
  CHECK(mentions(check_request(greedy(5), clean(4)), "finished for length after 4 of 5 tokens"));
  auto eos = clean(4);
  eos.events.back().finish_reason = "eos";
  CHECK(mentions(check_request(r, eos), "end-of-text"));
}

TEST_CASE("cancels: cancelled or done when racing the end, before acceptance only cancelled", "[soak]") {
  auto r = greedy(8);
  r.cancel = cancel_mode::near_end;
  auto won_race = clean(8);
  won_race.cancel_sent = true;
  CHECK(check_request(r, won_race).empty());
  request_log cancelled{true, true, 5, {of(event_kind::accepted), tok(0, 1), of(event_kind::cancelled)}};
  CHECK(check_request(r, cancelled).empty());
  cancelled.cancel_sent = false;
  CHECK(mentions(check_request(r, cancelled), "the client sent no cancel"));
  r.cancel = cancel_mode::before_accept;
  CHECK(mentions(check_request(r, won_race), "cancelled before it was accepted, but ended done"));
}

TEST_CASE("invalid requests must get their own error and nothing else", "[soak]") {
  auto r = greedy(8);
  r.invalid = invalid_kind::unknown_adapter;
  CHECK(check_request(r, request_log{true, false, 0, {error(serve_errc::unknown_adapter)}}).empty());
  CHECK(mentions(check_request(r, request_log{true, false, 0, {error(serve_errc::invalid_request)}}),
                 "should end with error unknown_adapter"));
  CHECK(mentions(check_request(r, clean(8)), "should end with error unknown_adapter, ended with done"));
  r.invalid = invalid_kind::bad_field_type;
  CHECK(r.expected() == serve_errc::invalid_request);
}

TEST_CASE("replays: equal streams agree, a different token or text is named with its index", "[soak]") {
  const auto r = greedy(4);
  CHECK(compare_replay(r, clean(4, 1), clean(4)).empty());
  auto other = clean(4);
  other.events[3].token = 555;  // index 2
  CHECK(mentions(compare_replay(r, clean(4, 1), other), "differ from the replay's at index 2: 102 vs 555"));
  auto shorter = clean(3);
  CHECK(mentions(compare_replay(r, clean(4, 1), shorter), "at index 3: 103 vs (end)"));
  auto text = clean(4);
  text.events[1].text = "y";
  CHECK(mentions(compare_replay(r, clean(4, 1), text), "its text differs from the replay's from byte 0: \"xxxx\" vs \"yxxx\""));
  auto failed = request_log{true, false, 0, {error(serve_errc::internal)}};
  CHECK(mentions(compare_replay(r, clean(4, 1), failed), "its replay ended with error internal"));
}

TEST_CASE("counts and replay picks: every resumed request and a spread of controls", "[soak]") {
  std::vector<planned_request> plans;
  std::vector<request_log> logs;
  for (int i = 0; i < 10; ++i) {
    auto r = greedy(3);
    r.id = static_cast<std::uint64_t>(i + 1);
    plans.push_back(r);
    logs.push_back(clean(3, i == 4 || i == 7 ? 1 : 0));
  }
  logs[9].events.back() = error(serve_errc::timeout);
  logs[8].events.back() = of(event_kind::cancelled);
  const auto c = count_run(plans, logs);
  CHECK(c.done == 8);
  CHECK(c.cancelled == 1);
  CHECK(c.errors == 1);
  CHECK(c.errors_by_code.at("timeout") == 1);
  CHECK(c.resumed == 2);
  CHECK(c.tokens == 30);
  CHECK(c.ttft_ms.size() == 8);
  const auto picks = pick_replays(plans, logs, 3);
  REQUIRE(picks.size() == 5);
  CHECK(picks[0] == 4);
  CHECK(picks[1] == 7);
  for (std::size_t k = 2; k < picks.size(); ++k) {
    CHECK(picks[k] != 4);
    CHECK(picks[k] != 7);
    CHECK(picks[k] < 8);  // only requests that ended done
  }
}
