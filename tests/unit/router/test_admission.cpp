// The bounded admission queue and the router's request checks.
#include <catch2/catch.hpp>

#include "router/admission_queue.hpp"
#include "actors/ids.hpp"
#include "router/request_checks.hpp"

using namespace lf::router;
using lf::actors::route_id;
using lf::actors::worker_id;
using lf::serve_errc;

TEST_CASE("admission queue: FIFO, bounded, refuses duplicates", "[admission]") {
  admission_queue<route_id> q(3);
  CHECK(q.push(route_id{1}));
  CHECK(q.push(route_id{2}));
  CHECK_FALSE(q.push(route_id{2}));
  CHECK(q.push(route_id{3}));
  CHECK(q.full());
  CHECK_FALSE(q.push(route_id{4}));  // full: the router answers overloaded
  CHECK(q.size() == 3);
  CHECK(q.pop() == route_id{1});
  CHECK(q.push(route_id{4}));
  CHECK(q.pop() == route_id{2});
  CHECK(q.pop() == route_id{3});
  CHECK(q.pop() == route_id{4});
  CHECK_FALSE(q.pop());
  CHECK(q.empty());
}

TEST_CASE("admission queue: push_front ignores the bound, remove works anywhere", "[admission]") {
  admission_queue<route_id> q(2);
  q.push(route_id{10});
  q.push(route_id{11});
  // Taken back from a dead worker: first in line even though the queue is full.
  CHECK(q.push_front(route_id{5}));
  CHECK(q.size() == 3);
  CHECK(q.front() == route_id{5});
  CHECK(q.remove(route_id{10}));  // cancelled while queued
  CHECK_FALSE(q.remove(route_id{10}));
  CHECK_FALSE(q.contains(route_id{10}));
  CHECK(q.pop() == route_id{5});
  CHECK(q.pop() == route_id{11});
}

TEST_CASE("adapter names: relative paths of safe characters only", "[checks]") {
  for (auto ok : {"shakespeare", "styles/kjv", "a-b_c.d", "v1.2/x", "A9"})
    CHECK(valid_adapter_name(ok));
  using namespace std::literals;
  for (auto bad : {""sv, "/abs"sv, "trail/"sv, "a//b"sv, ".hidden"sv, "a/../b"sv, ".."sv, "a/.b"sv,
                   "sp ace"sv, "back\\slash"sv, "nul\0x"sv, "semi;colon"sv, "ü"sv})
    CHECK_FALSE(valid_adapter_name(bad));
  CHECK(valid_adapter_name(std::string(max_adapter_name_length, 'a')));
  CHECK_FALSE(valid_adapter_name(std::string(max_adapter_name_length + 1, 'a')));
}

TEST_CASE("request checks: each failure names its code", "[checks]") {
  request_limits lim;
  lim.context_window = 64;
  lim.vocab_size = 100;
  lim.max_prompt_bytes = 1000;
  lf::sampling_params p;
  p.max_tokens = 8;

  CHECK_FALSE(check_request({}, "hello", p, "", lim));
  CHECK_FALSE(check_request({1, 2, 3}, "", p, "styles/kjv", lim));

  auto code = [&](std::vector<std::int32_t> toks, std::string text, lf::sampling_params sp,
                  std::string adapter) {
    auto f = check_request(toks, text, sp, adapter, lim);
    REQUIRE(f);
    CHECK_FALSE(f->message.empty());
    return f->code;
  };
  CHECK(code({}, "", p, "") == serve_errc::invalid_request);
  CHECK(code({}, std::string(1001, 'x'), p, "") == serve_errc::prompt_too_long);
  CHECK(code({1, 100}, "", p, "") == serve_errc::invalid_request);  // id outside the vocabulary
  CHECK(code({1, -1}, "", p, "") == serve_errc::invalid_request);
  auto bad = p;
  bad.temperature = -1;
  CHECK(code({1}, "", bad, "") == serve_errc::invalid_request);
  bad = p;
  bad.max_tokens = 0;
  CHECK(code({1}, "", bad, "") == serve_errc::invalid_request);
  CHECK(code({1}, "", p, "../etc") == serve_errc::invalid_request);
  // 60 prompt tokens + 8 > 64
  CHECK(code(std::vector<std::int32_t>(60, 1), "", p, "") == serve_errc::prompt_too_long);
  // A text prompt is at least one token: max_tokens 64 cannot fit.
  auto big = p;
  big.max_tokens = 64;
  CHECK(code({}, "x", big, "") == serve_errc::prompt_too_long);
  // Unknown context (no worker yet): only the worker can tell.
  lim.context_window = 0;
  CHECK_FALSE(check_request(std::vector<std::int32_t>(60, 1), "", p, "", lim));
}
