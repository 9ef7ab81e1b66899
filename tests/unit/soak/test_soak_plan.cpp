// The soak's plan (reproducible, the asked mix, every request within the window), its frames,
// the fault sequence (one fault at a time, only on a whole cluster) and the RSS bound.
#include <catch2/catch.hpp>

#include <map>

#include <unistd.h>

#include "proto/protocol.hpp"
#include "tools/soak/fault_sequence.hpp"
#include "tools/soak/frames.hpp"
#include "tools/soak/plan.hpp"
#include "tools/soak/report.hpp"
#include "tools/soak/rss.hpp"

using namespace lf;
using namespace lf::soak;
using namespace std::chrono_literals;

namespace {

/// One "w" per token: the plan's window arithmetic can be checked on the prompt's length.
std::string words(std::uint32_t n, std::uint64_t) {
  std::string s;
  for (std::uint32_t i = 0; i < n; ++i)
    s += " w";
  return s;
}

plan_settings settings() {
  plan_settings s;
  s.requests = 4000;
  s.seed = 5;
  s.adapters = {"bible", "fortunes", "shakespeare"};
  s.context_window = 256;
  s.max_tokens_limit = 1024;
  return s;
}

} // namespace

TEST_CASE("plans are reproducible, mix what they should and fit the context window", "[soak]") {
  const auto a = plan_requests(settings(), words);
  const auto b = plan_requests(settings(), words);
  REQUIRE(a.size() == 4000);
  std::map<std::string, int> adapters, sampling, cancels, invalid;
  int long_ones = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& r = a[i];
    CHECK(r.id == i + 1);
    CHECK(r.prompt == b[i].prompt);
    CHECK(r.max_tokens == b[i].max_tokens);
    CHECK(r.seed == b[i].seed);
    ++adapters[r.adapter];
    ++sampling[std::string(to_string(r.sampling))];
    ++cancels[std::string(to_string(r.cancel))];
    ++invalid[std::string(to_string(r.invalid))];
    if (r.invalid != invalid_kind::none) {
      CHECK(r.cancel == cancel_mode::none);
      continue;
    }
    const auto prompt_tokens = r.prompt.size() / 2;
    CHECK(r.max_tokens >= 1);
    CHECK(prompt_tokens + static_cast<std::size_t>(r.max_tokens) <= 256 - 8);
    CHECK(r.seed.has_value() == (r.sampling == sampling_mode::seeded));
    CHECK((r.temperature == 0) == (r.sampling == sampling_mode::greedy));
    long_ones += r.max_tokens > 32;
    if (r.cancel == cancel_mode::after_tokens)
      CHECK(r.cancel_after_tokens <= static_cast<std::uint32_t>(std::max(1, r.max_tokens / 2)));
  }
  CHECK(adapters.size() == 5);           // base + three adapters + the unknown one
  CHECK(adapters[""] > 1200);
  CHECK(sampling.size() == 3);
  CHECK(sampling["unseeded"] > 800);
  CHECK(cancels.size() == 6);            // none + five ways
  CHECK(4000 - cancels["none"] - cancels["after_end"] == Approx(320).margin(80));  // ~10% cancelled
  CHECK(invalid.size() == 7);            // none + six ways
  CHECK(4000 - invalid["none"] == Approx(200).margin(60));  // ~5% invalid
  CHECK(long_ones > 600);
  auto other = settings();
  other.seed = 6;
  CHECK(plan_requests(other, words)[0].prompt != a[0].prompt);
}

TEST_CASE("invalid requests are invalid in the way they say", "[soak]") {
  for (const auto& r : plan_requests(settings(), words)) {
    switch (r.invalid) {
      case invalid_kind::zero_max_tokens: CHECK(r.max_tokens == 0); break;
      case invalid_kind::over_max_tokens: CHECK(r.max_tokens == 1025); break;
      case invalid_kind::top_p_zero: CHECK(r.top_p == 0); break;
      case invalid_kind::unknown_adapter: CHECK(r.adapter == "no-such-adapter"); break;
      case invalid_kind::prompt_too_long: CHECK(r.prompt.size() / 2 > 256); break;
      default: break;
    }
  }
  auto tiny = settings();
  tiny.context_window = 64;
  CHECK_THROWS_WITH(plan_requests(tiny, words), Catch::Contains("context window of 64"));
}

TEST_CASE("frames: a plan's submit decodes back, a bad field type is refused with its id", "[soak]") {
  planned_request r;
  r.id = 42;
  r.prompt = "Hello";
  r.adapter = "bible";
  r.temperature = 0.8f;
  r.seed = 9;
  r.max_tokens = 12;
  auto d = proto::decode_client(submit_frame(r));
  REQUIRE(std::holds_alternative<proto::submit_msg>(d));
  const auto& m = std::get<proto::submit_msg>(d);
  CHECK(m.id.value() == 42);
  CHECK(m.adapter == "bible");
  CHECK(m.seed == std::optional<std::uint64_t>(9));
  CHECK(m.stream);
  r.invalid = invalid_kind::bad_field_type;
  auto bad = proto::decode_client(submit_frame(r));
  REQUIRE(std::holds_alternative<proto::decode_error>(bad));
  CHECK(std::get<proto::decode_error>(bad).id == std::optional<proto::client_request_id>(proto::client_request_id{42}));
  CHECK_THAT(std::get<proto::decode_error>(bad).message, Catch::Contains("temperature"));
  auto c = proto::decode_client(cancel_frame(42));
  REQUIRE(std::holds_alternative<proto::cancel_msg>(c));
}

TEST_CASE("replays keep the request, take the served seed, drop the cancel", "[soak]") {
  planned_request r;
  r.id = 3;
  r.sampling = sampling_mode::unseeded;
  r.temperature = 1;
  r.cancel = cancel_mode::near_end;
  CHECK_FALSE(r.reproducible());
  const auto p = replay_of(r, 1234, 1000);
  CHECK(p.id == 1000);
  CHECK(p.seed == std::optional<std::uint64_t>(1234));
  CHECK(p.cancel == cancel_mode::none);
  CHECK(p.reproducible());
  planned_request g;
  CHECK_FALSE(replay_of(g, 77, 1).seed.has_value());  // greedy stays seedless
}

TEST_CASE("faults: one at a time, each on a whole cluster, a stopped node is resumed after its hold", "[soak]") {
  auto faults = plan_faults({"w1", "w2"}, 500ms, 3000ms, true);
  REQUIRE(faults.size() == 3);
  CHECK(faults[1].hold == 5000ms);
  CHECK_THROWS(plan_faults({"w1"}, 500ms, 3000ms, true));
  CHECK(plan_faults({"w1", "w2"}, 500ms, 3000ms, false).size() == 2);

  fault_sequence seq(faults, 1000, 4);
  CHECK_FALSE(seq.next(1, 149, 64, 4u));           // 15% not reached
  auto st = seq.next(2, 150, 64, 4u);
  REQUIRE(st);
  CHECK(st->f->kind == fault_kind::kill);
  CHECK(seq.busy());
  CHECK_FALSE(seq.next(2.5, 300, 64, 4u));         // not noticed yet: not recovered
  CHECK_FALSE(seq.next(3, 460, 64, 2u));           // dropped
  CHECK_FALSE(seq.next(5, 470, 64, 4u));           // back: recovered
  CHECK(seq.records()[0].recovered_s == 5);
  CHECK(seq.records()[0].live_at_fire == 64);
  CHECK_FALSE(seq.busy());
  st = seq.next(6, 480, 64, 4u);
  REQUIRE(st);
  CHECK(st->f->kind == fault_kind::stop);
  CHECK(seq.stopped_node() == std::optional<std::string>("w2"));
  CHECK_FALSE(seq.next(9, 500, 64, 2u));           // held for 5 s
  st = seq.next(11, 520, 64, 2u);
  REQUIRE(st);
  CHECK(st->what == fault_step::action::resume);
  CHECK_FALSE(seq.stopped_node());
  CHECK_FALSE(seq.next(12, 800, 64, 3u));          // the drain waits for the whole cluster
  CHECK_FALSE(seq.next(13, 800, 64, 4u));          // recovered from the stop
  st = seq.next(14, 800, 64, std::nullopt);        // the gateway did not answer: wait
  CHECK_FALSE(st);
  st = seq.next(15, 800, 64, 4u);
  REQUIRE(st);
  CHECK(st->f->kind == fault_kind::drain);
  CHECK_FALSE(seq.next(15.5, 810, 64, 4u));
  CHECK(seq.finished());
  CHECK_FALSE(seq.failed());

  fault_sequence stuck(plan_faults({"w1", "w2"}, 500ms, 3000ms, false), 10, 4, 60);
  REQUIRE(stuck.next(0, 5, 64, 4u));
  CHECK_FALSE(stuck.next(30, 6, 64, 2u));
  CHECK_FALSE(stuck.next(61, 7, 64, 2u));
  CHECK(stuck.failed());
  CHECK(stuck.finished());
}

TEST_CASE("a split front's first router replica is killed at half the run and is back after its hold",
          "[soak]") {
  auto faults = plan_faults({"w1", "w2"}, 500ms, 3000ms, false, {"ra", "rb"});
  REQUIRE(faults.size() == 3);
  CHECK(faults[2].kind == fault_kind::kill_router);
  CHECK(faults[2].node == "ra");
  CHECK(faults[2].at == 0.5);
  CHECK(faults[2].hold == 6000ms);
  CHECK(to_string(fault_kind::kill_router) == "kill_router");
  CHECK(plan_faults({"w1", "w2"}, 500ms, 3000ms, false, {"ra"}).size() == 2);  // one router: no router fault
  fault_sequence seq({faults[2]}, 100, 2);
  auto st = seq.next(10, 50, 30, 2u);
  REQUIRE(st);
  CHECK(st->f->kind == fault_kind::kill_router);
  CHECK_FALSE(seq.next(12, 60, 30, 2u));  // the other replica answers with every worker: not yet
  CHECK_FALSE(seq.finished());
  CHECK_FALSE(seq.next(16, 70, 30, 1u));  // its hold passed, a worker not registered again
  CHECK_FALSE(seq.finished());
  CHECK_FALSE(seq.next(16.5, 71, 30, 2u));
  CHECK(seq.finished());
  CHECK_FALSE(seq.failed());
  CHECK(seq.records()[0].recovered_s == 16.5);
}

TEST_CASE("RSS: VmRSS is read from /proc status text, growth past the bound is reported", "[soak]") {
  CHECK(parse_vm_rss_kib("Name:\tlorafleet\nVmPeak:\t  900 kB\nVmRSS:\t   51234 kB\nThreads: 9\n")
        == std::optional<std::uint64_t>(51234));
  CHECK_FALSE(parse_vm_rss_kib("Name:\tkthreadd\nThreads: 1\n"));
  CHECK_FALSE(parse_vm_rss_kib("VmRSS: lots\n"));
  CHECK(read_rss_kib(::getpid()).value_or(0) > 0);
  rss_bound b{25, 64};
  CHECK(b.limit_kib(100 * 1024) == 164 * 1024);   // 64 MiB beats 25%
  CHECK(b.limit_kib(1024 * 1024) == 1280 * 1024); // 25% beats 64 MiB
  std::vector<node_memory> nodes{{"head", 1, 1, 100 * 1024, 150 * 1024, 0},
                                 {"w1", 2, 3, 100 * 1024, 200 * 1024, 0},
                                 {"w2", 4, 4, std::nullopt, 10, 0}};
  const auto v = check_memory(nodes, b);
  REQUIRE(v.size() == 2);
  CHECK_THAT(v[0], Catch::Contains("w1: RSS grew from 100.0 MiB to 200.0 MiB, past the bound of 164.0 MiB"));
  CHECK_THAT(v[1], Catch::Contains("w2: no RSS sample at warm-up"));
}
