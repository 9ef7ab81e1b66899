// Credit-based streaming over the real socket: a client that never grants credits gets exactly
// its window of tokens and its request leaves the batch (the worker reports it paused) while
// another client's requests run to the end; grants resume it and it finishes with the text an
// unlimited run gives. The C++ client grants by itself as on_token returns.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "tests/integration/gateway_fixture.hpp"

using namespace lf;
using namespace std::chrono_literals;

namespace {

/// Sum of "worker.N.<field>" over the workers in `s`.
double workers_sum(const std::map<std::string, double>& s, const std::string& field) {
  double sum = 0;
  for (const auto& [k, v] : s)
    if (k.rfind("worker.", 0) == 0 && k.size() > field.size() + 1
        && k.compare(k.size() - field.size() - 1, std::string::npos, "." + field) == 0)
      sum += v;
  return sum;
}

/// Polls the stats until `pred` holds (bounded).
template <class Pred>
bool wait_stats(client::client& c, Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (auto s = c.stats(2s); s && pred(*s))
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_CASE("a client that stops granting credits pauses its request, not the others",
          "[gateway][model][credit]") {
  test::gateway_cluster gc;
  client::client reader(test::opts_for(gc.endpoint())), stalled(test::opts_for(gc.endpoint()));
  const auto want = reader.submit(test::greedy("Once upon a time", 40)).get();
  REQUIRE(want.ok());

  // Manual credits, never granted: 5 tokens, then the request waits off the batch.
  auto m = test::greedy("Once upon a time", 40);
  m.window = 5;
  std::atomic<int> got{0};
  std::promise<client::result> done;
  client::stream_callbacks cb;
  cb.manual_credit = true;
  cb.on_token = [&](const proto::token_msg&) { ++got; };
  cb.on_done = [&](const client::result& r) { done.set_value(r); };
  const auto id = stalled.submit(m, cb);
  REQUIRE(wait_stats(reader, [](const auto& s) { return workers_sum(s, "paused") == 1; }));
  CHECK(got == 5);
  CHECK(workers_sum(*reader.stats(2s), "running") == 0);

  // Others are served meanwhile, automatic credits included (window 4, 30 tokens).
  std::vector<std::future<client::result>> others;
  for (int i = 0; i < 6; ++i) {
    auto o = test::greedy("The quick brown fox", 30);
    if (i % 2 == 0)
      o.window = 4;
    others.push_back(reader.submit(o));
  }
  for (auto& f : others) {
    const auto r = f.get();
    CHECK(r.ok());
    CHECK(r.usage.completion_tokens == 30);
  }
  std::this_thread::sleep_for(50ms);
  CHECK(got == 5);

  // Grants: 10 more tokens, then the rest.
  REQUIRE(stalled.grant(id, 10));
  REQUIRE(wait_stats(reader, [&](const auto& s) { return got == 15 && workers_sum(s, "paused") == 1; }));
  REQUIRE(stalled.grant(id, 100));
  auto f = done.get_future();
  REQUIRE(f.wait_for(30s) == std::future_status::ready);
  const auto r = f.get();
  CHECK(r.ok());
  CHECK(r.text == want.text);
  CHECK(r.tokens == want.tokens);
  CHECK_FALSE(stalled.grant(id, 1));  // ended
  CHECK(wait_stats(reader, [](const auto& s) { return workers_sum(s, "paused") == 0; }));
}
