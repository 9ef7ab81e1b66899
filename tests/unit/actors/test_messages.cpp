// Messages survive serialization (what crossing nodes needs), and serve_errc works as a CAF
// error category.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include "actors/messages.hpp"
#include "actors/system_config.hpp"

using namespace lf;
using namespace lf::actors;

namespace {

struct config : caf::actor_system_config {
  config() { add_lorafleet_types(*this); }
};

template <class T>
T round_trip(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer out{sys, buf};
  REQUIRE_FALSE(out(x));
  T y;
  caf::binary_deserializer in{sys, buf};
  REQUIRE_FALSE(in(y));
  return y;
}

generate_request sample_request() {
  generate_request r;
  r.id = sink_request_id{42};
  r.draft.prompt = {1, 2, 3};
  r.draft.adapter = "styles/kjv";
  auto& p = r.draft.params;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  p.seed = 7;
  p.max_tokens = 33;
  p.stop = {"\n\n", "END"};
  p.ignore_eos = true;
  r.draft.timeout_ms = 1500;
  return r;
}

/// Checks every field of sample_request()'s draft against `d`.
void check_sample(const request_draft& d) {
  CHECK(d.prompt == std::vector<std::int32_t>{1, 2, 3});
  CHECK(d.adapter == "styles/kjv");
  const auto& p = d.params;
  CHECK(p.temperature == 0.7f);
  CHECK(p.top_k == 40);
  CHECK(p.top_p == 0.9f);
  CHECK(p.repetition_penalty == 1.1f);
  CHECK(p.seed == std::optional<std::uint64_t>(7));
  CHECK(p.max_tokens == 33);
  CHECK(p.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(p.ignore_eos);
  CHECK(d.timeout_ms == 1500);
}

} // namespace

TEST_CASE("messages round-trip through CAF's binary serializer", "[messages]") {
  config cfg;
  caf::actor_system sys{cfg};

  auto r = round_trip(sys, sample_request());
  CHECK(r.id == sink_request_id{42});
  check_sample(r.draft);

  // A request without a seed keeps having none.
  auto unseeded = sample_request();
  unseeded.draft.params.seed.reset();
  CHECK_FALSE(round_trip(sys, unseeded).draft.params.seed);

  // The validated request a worker gets crosses nodes with every field.
  request_limits lim;
  lim.context_window = 64;
  lim.vocab_size = 100;
  auto sub = round_trip(sys, worker_submit{route_id{8}, sink_request_id{42},
                                           validate_or_throw(sample_request().draft, lim), 250, {}, {}});
  CHECK(sub.rid == route_id{8});
  CHECK(sub.id == sink_request_id{42});
  CHECK(sub.timeout_ms == 250);
  check_sample({sub.req.prompt(), sub.req.params(), sub.req.adapter(), sub.req.timeout_ms()});

  done_event d{sink_request_id{5}, "length", "abc", {7, 8}, {3, 2, 1}, {1.5, 2.5, 3.5}, worker_id{2}};
  auto d2 = round_trip(sys, worker_done{worker_id{2}, route_id{9}, d});
  CHECK(d2.wid == worker_id{2});
  CHECK(d2.rid == route_id{9});
  CHECK(d2.ev.finish_reason == "length");
  CHECK(d2.ev.text == "abc");
  CHECK(d2.ev.tokens == std::vector<std::int32_t>{7, 8});
  CHECK(d2.ev.usage.prompt_tokens == 3);
  CHECK(d2.ev.usage.cached_tokens == 1);
  CHECK(d2.ev.timings.ttft_ms == 2.5);
  CHECK(d2.ev.worker == worker_id{2});

  auto e = round_trip(sys, error_event{sink_request_id{6}, serve_errc::overloaded, "busy", 250});
  CHECK(e.code == serve_errc::overloaded);
  CHECK(e.message == "busy");
  CHECK(e.retry_after_ms == 250);

  auto t = round_trip(sys, worker_token{worker_id{1}, route_id{3}, token_event{sink_request_id{4}, 99, "x", 2, false, {}}});
  CHECK(t.ev.token == 99);
  CHECK(t.ev.index == 2);

  worker_load l;
  l.wid = worker_id{3};
  l.free_blocks = 10;
  l.adapters = {"a", "b"};
  router_stats s;
  s.workers = 2;
  s.loads = {l};
  auto s2 = round_trip(sys, s);
  REQUIRE(s2.loads.size() == 1);
  CHECK(s2.loads[0].wid == worker_id{3});
  CHECK(s2.loads[0].adapters == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a caf::message of lorafleet types serializes by registered name", "[messages]") {
  config cfg;
  caf::actor_system sys{cfg};
  // Serializing a type-erased message needs the types registered under their names: this is
  // what the middleman does with every message that crosses nodes.
  request_limits lim;
  lim.context_window = 64;
  lim.vocab_size = 100;
  auto msg = caf::make_message(
    worker_submit{route_id{11}, sink_request_id{3}, validate_or_throw(sample_request().draft, lim), 900, {}, {}});
  std::vector<char> buf;
  caf::binary_serializer out{sys, buf};
  REQUIRE_FALSE(out(msg));
  caf::message back;
  caf::binary_deserializer in{sys, buf};
  REQUIRE_FALSE(in(back));
  REQUIRE(back.match_elements<worker_submit>());
  auto& ws = back.get_as<worker_submit>(0);
  CHECK(ws.rid == route_id{11});
  CHECK(ws.timeout_ms == 900);
  CHECK(ws.req.params().stop.size() == 2);
  CHECK(ws.req.prompt().size() == 3);
}

TEST_CASE("serve_errc is a CAF error category", "[messages]") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::error err = make_serve_error(serve_errc::overloaded, "queue full");
  CHECK(err.category() == caf::atom("serve"));
  CHECK(serve_code_of(err) == serve_errc::overloaded);
  CHECK(sys.render(err) == "serve: overloaded (queue full)");
  CHECK(serve_code_of(caf::error{}) == serve_errc::none);
  CHECK(serve_code_of(caf::make_error(caf::sec::request_timeout)) == serve_errc::internal);
  caf::result<int> res{serve_errc::timeout};
  CHECK(serve_code_of(res.err) == serve_errc::timeout);
}
