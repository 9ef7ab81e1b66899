// Every actor message crosses CAF's binary serialization (what a message between nodes goes
// through) with every field set to a value other than its default, and comes back equal field by
// field: a field an inspect() leaves out comes back at its default and is named in the failure.
// LF_FIELDS lists each struct's fields as a structured binding, so a field added to a struct
// without being added here fails to compile (tests/support/field_check.hpp).
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include "actors/messages.hpp"
#include "actors/system_config.hpp"
#include "tests/support/field_check.hpp"

using namespace lf;
using namespace lf::actors;

namespace lf::test {

LF_FIELDS(output_constraint, kind, text);
LF_FIELDS(sampling_params, temperature, top_k, top_p, repetition_penalty, seed, max_tokens, stop, ignore_eos,
          logprobs, top_logprobs, logit_bias, constraint);
LF_FIELDS(token_logprobs, logprob, top_tokens, top_logprobs);
LF_FIELDS(request_draft, prompt, params, adapter, timeout_ms, ttft_ms, tenant, tenant_weight, speculative);
LF_FIELDS(histogram, bounds, counts, sum, count);
LF_FIELDS(serve_metrics, finished, errors, prompt_tokens, generation_tokens, cached_tokens, queue_seconds,
          ttft_seconds, tpot_seconds, e2e_seconds);
LF_FIELDS(worker::usage_counts, prompt_tokens, completion_tokens, cached_tokens);
LF_FIELDS(worker::request_timings, queue_ms, ttft_ms, total_ms);
LF_FIELDS(worker::kv_blob, format, tokens, bytes);
LF_FIELDS(cache::adapter_source, path, hash, rank, targets, bytes);
LF_FIELDS(cache::adapter_event, seq, op, name, version, source, at_ms);
LF_FIELDS(cache::adapter_record, name, latest, removed, source, updated_ms);

/// validated_request keeps its draft private: compared through the draft.
template <>
struct field_list<validated_request> {
  static constexpr bool known = true;
  static constexpr const char* names = "draft";
  static auto of(const validated_request& x) {
    return std::tie(validated_request_access::fields(const_cast<validated_request&>(x)));
  }
};

// client_messages.hpp
LF_FIELDS(generate_request, id, draft, window, continued);
LF_FIELDS(credit_request, id, tokens);
LF_FIELDS(cancel_request, id);
LF_FIELDS(token_event, id, token, text, index, has_logprobs, logprobs);
LF_FIELDS(done_event, id, finish_reason, text, tokens, usage, timings, worker, seed, resumed);
LF_FIELDS(error_event, id, code, message, retry_after_ms);
LF_FIELDS(event_batch, tokens, done, errors);
// worker_messages.hpp
LF_FIELDS(register_worker, name, context_window, vocab_size, total_blocks, block_size, max_seqs, adapters, join_token,
          registry);
LF_FIELDS(worker_submit, rid, id, req, timeout_ms, resume, kv, allowance);
LF_FIELDS(worker_credit, rid, allowance);
LF_FIELDS(worker_cancel, rid, ship_kv);
LF_FIELDS(worker_moved, wid, rid, kv);
LF_FIELDS(worker_token, wid, rid, ev);
LF_FIELDS(worker_done, wid, rid, ev);
LF_FIELDS(worker_failed, wid, rid, ev);
LF_FIELDS(worker_step, wid, tokens, done, failed, moved);
LF_FIELDS(request_ended, rids);
// stats_messages.hpp
LF_FIELDS(adapter_load_cost, name, loads, last_load_ms, bytes);
LF_FIELDS(worker::load_counts, waiting, running, waiting_tokens, running_tokens, free_blocks, total_blocks, finished,
          failed, cancelled, preemptions, paused, running_adapters, waiting_adapters);
// worker_load is a load_counts and more: a structured binding cannot take both, so its own fields
// are listed by hand (the load_counts part stays checked by the list above).
template <>
struct field_list<worker_load> {
  static constexpr bool known = true;
  static constexpr const char* names =
    "counts, wid, adapters, adapter_loads, servable, name, loads_by_adapter, adapter_slots_free, spec_proposed, "
    "spec_accepted, spec_rows, spec_emitted, spec_draft_tokens, spec_draft_ms, max_adapters";
  static auto of(const worker_load& x) {
    return std::tie(static_cast<const worker::load_counts&>(x), x.wid, x.adapters, x.adapter_loads, x.servable,
                    x.name, x.loads_by_adapter, x.adapter_slots_free, x.spec_proposed, x.spec_accepted, x.spec_rows,
                    x.spec_emitted, x.spec_draft_tokens, x.spec_draft_ms, x.max_adapters);
  }
};
LF_FIELDS(worker_metrics, wid, name, live, m, state);
LF_FIELDS(router_stats, workers, queued, inflight, accepted, overloaded, rejected, completed, failed, cancelled,
          timed_out, replaced, worker_lost, resumed, draining, accepting, kv_shipped, kv_shipped_tokens,
          adapter_prefetches, loads, metrics, prefix_blocks, prefix_resyncs, continued);
// adapter_messages.hpp
LF_FIELDS(adapter_command, op, name, path);
LF_FIELDS(adapter_reply, error, message, adapters, resident, seq);
LF_FIELDS(adapter_check, path, max_rank);
LF_FIELDS(adapter_checked, error, source);
LF_FIELDS(worker_adapters, events, whole_log);
LF_FIELDS(worker_prefetch, key);

} // namespace lf::test

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_message_round_trip {

namespace {

struct config : caf::actor_system_config {
  config() { add_lorafleet_types(*this); }
};

// -- samples: every field away from its default ---------------------------------------------------

request_draft draft() {
  request_draft d;
  d.prompt = {11, 12, 13};
  d.params.temperature = 0.7f;
  d.params.top_k = 40;
  d.params.top_p = 0.9f;
  d.params.repetition_penalty = 1.1f;
  d.params.seed = 7;
  d.params.max_tokens = 33;
  d.params.stop = {"\n\n", "END"};
  d.params.ignore_eos = true;
  d.params.logprobs = true;
  d.params.top_logprobs = 3;
  d.params.logit_bias = {{7, -100.0f}, {50256, 2.5f}};  // travels with a request resumed elsewhere
  d.params.constraint = {"json_schema", R"({"type":"string"})"};
  d.adapter = "styles/kjv@2";
  d.timeout_ms = 1500;
  d.ttft_ms = 300;
  d.tenant = "acme";
  d.tenant_weight = 2.5;
  d.speculative = 6;
  return d;
}

validated_request validated() {
  validated_request r;
  validated_request_access::fields(r) = draft();
  return r;
}

token_event token() {
  return {sink_request_id{4}, 99, "x", 2, true, {-0.25f, {5, 6}, {-0.5f, -1.5f}}};
}

done_event done() {
  return {sink_request_id{5}, "length", "abc", {7, 8}, {3, 2, 1}, {1.5, 2.5, 3.5}, worker_id{2}, 1234, 1};
}

error_event error() { return {sink_request_id{6}, serve_errc::overloaded, "busy", 250}; }

worker::kv_blob kv() { return {"bf16/16", {1, 2, 3}, std::string("\x01\x02\x03", 3)}; }

histogram filled(std::vector<double> bounds) {
  histogram h(std::move(bounds));
  for (std::size_t i = 0; i < h.counts.size(); ++i)
    h.counts[i] = i + 1;
  h.sum = 12.5;
  h.count = 9;
  return h;
}

worker_metrics metrics() {
  worker_metrics w;
  w.wid = worker_id{3};
  w.name = "node/0";
  w.live = false;
  w.state = worker_state::lost;
  w.m.finished = {{"eos", 2}, {"length", 1}};
  w.m.errors = {{"timeout", 4}};
  w.m.prompt_tokens = 10;
  w.m.generation_tokens = 20;
  w.m.cached_tokens = 5;
  w.m.queue_seconds = filled(latency_buckets());
  w.m.ttft_seconds = filled(ttft_buckets());
  w.m.tpot_seconds = filled(tpot_buckets());
  w.m.e2e_seconds = filled(latency_buckets());
  return w;
}

worker_load load() {
  worker_load l;
  l.wid = worker_id{3};
  l.waiting = 1;
  l.running = 2;
  l.waiting_tokens = 3;
  l.running_tokens = 4;
  l.free_blocks = 5;
  l.total_blocks = 6;
  l.finished = 7;
  l.failed = 8;
  l.cancelled = 9;
  l.adapters = {"a@1", "b@2"};
  l.preemptions = 10;
  l.adapter_loads = 11;
  l.servable = {"c"};
  l.name = "node/0";
  l.paused = 12;
  l.loads_by_adapter = {{"a@1", 2, 35.5, 4096}};
  l.adapter_slots_free = 13;
  l.spec_proposed = 40;
  l.spec_accepted = 30;
  l.spec_rows = 10;
  l.spec_emitted = 40;
  l.spec_draft_tokens = 24;
  l.spec_draft_ms = 12.5;
  l.running_adapters = {"a@1", "b@2"};
  l.waiting_adapters = {"c@1"};
  l.max_adapters = 8;
  return l;
}

router_stats stats() {
  router_stats s;
  s.workers = 1;
  s.queued = 2;
  s.inflight = 3;
  s.accepted = 4;
  s.overloaded = 5;
  s.rejected = 6;
  s.completed = 7;
  s.failed = 8;
  s.cancelled = 9;
  s.timed_out = 10;
  s.replaced = 11;
  s.worker_lost = 12;
  s.resumed = 13;
  s.draining = 14;
  s.accepting = 18;
  s.kv_shipped = 15;
  s.kv_shipped_tokens = 16;
  s.adapter_prefetches = 17;
  s.prefix_blocks = 18;
  s.prefix_resyncs = 19;
  s.continued = 20;
  s.loads = {load()};
  s.metrics = {metrics()};
  return s;
}

cache::adapter_source source() { return {"/adapters/kjv", 0xabcdef, 8, {"attn.c_attn", "mlp.c_fc"}, 65536}; }

cache::adapter_event event() { return {3, cache::adapter_op::update, "styles/kjv", 2, source(), 1700000000000}; }

/// `x` after a trip through a type-erased caf::message (its registered type id and name, as
/// between nodes), or straight through the serializer for types with no id of their own.
template <class T>
T round_trip(caf::actor_system& sys, const T& x) {
  std::vector<char> buf;
  caf::binary_serializer out{sys, buf};
  T y;
  if constexpr (caf::has_type_id<T>::value) {
    auto msg = caf::make_message(x);
    REQUIRE_FALSE(out(msg));
    caf::message back;
    caf::binary_deserializer in{sys, buf};  // reads what `buf` holds now
    REQUIRE_FALSE(in(back));
    REQUIRE(back.match_elements<T>());
    y = back.get_as<T>(0);
  } else {
    T copy = x;
    REQUIRE_FALSE(out(copy));
    caf::binary_deserializer in{sys, buf};
    REQUIRE_FALSE(in(y));
  }
  return y;
}

/// Checks that `x` has every field set and survives the round trip field by field.
template <class T>
void check(caf::actor_system& sys, const T& x) {
  CHECK(lf::test::unset_fields(x) == std::vector<std::string>{});
  CHECK(lf::test::differing(x, round_trip(sys, x)) == std::vector<std::string>{});
}

} // namespace

TEST_CASE("every actor message round-trips with every field set", "[messages][round_trip]") {
  config cfg;
  caf::actor_system sys{cfg};
  SECTION("client") {
    check(sys, generate_request{sink_request_id{42}, draft(), 8, {7, 8}});
    check(sys, credit_request{sink_request_id{42}, 16});
    check(sys, cancel_request{sink_request_id{42}});
    check(sys, token());
    check(sys, done());
    check(sys, error());
    check(sys, event_batch{{token(), token()}, {done()}, {error()}});
  }
  SECTION("router <-> worker") {
    check(sys, register_worker{"node/1", 1024, 50257, 512, 16, 32, {"a@1"}, "s3cret", {event()}});
    check(sys, worker_submit{route_id{8}, sink_request_id{42}, validated(), 250, {1, 2}, kv(), 20});
    check(sys, worker_credit{route_id{8}, 24});
    check(sys, worker_cancel{route_id{8}, true});
    check(sys, worker_moved{worker_id{2}, route_id{8}, kv()});
    check(sys, worker_token{worker_id{2}, route_id{8}, token()});
    check(sys, worker_done{worker_id{2}, route_id{8}, done()});
    check(sys, worker_failed{worker_id{2}, route_id{8}, error()});
    check(sys, worker_step{worker_id{2},
                           {worker_token{worker_id{2}, route_id{8}, token()}, worker_token{worker_id{2}, route_id{9}, token()}},
                           {worker_done{worker_id{2}, route_id{8}, done()}},
                           {worker_failed{worker_id{2}, route_id{10}, error()}},
                           {worker_moved{worker_id{2}, route_id{11}, kv()}}});
    check(sys, request_ended{{route_id{8}, route_id{9}}});
  }
  SECTION("stats") {
    check(sys, adapter_load_cost{"a@1", 2, 35.5, 4096});
    check(sys, load());
    check(sys, metrics());
    check(sys, stats());
  }
  SECTION("adapters") {
    check(sys, adapter_command{"add", "styles/kjv", "/adapters/kjv"});
    cache::adapter_record rec{"styles/kjv", 2, true, source(), 1700000000000};
    check(sys, adapter_reply{serve_errc::unknown_adapter, "gone", {rec}, {3}, 9});
    check(sys, adapter_check{"/adapters/kjv", 64});
    check(sys, adapter_checked{"rank too large", source()});
    check(sys, worker_adapters{{event()}, true});
    check(sys, worker_prefetch{"styles/kjv@2"});
  }
}

TEST_CASE("a seedless request stays seedless across nodes", "[messages][round_trip]") {
  config cfg;
  caf::actor_system sys{cfg};
  auto r = generate_request{sink_request_id{1}, draft(), 0, {}};
  r.draft.params.seed.reset();
  CHECK_FALSE(round_trip(sys, r).draft.params.seed);
}

} // namespace test_message_round_trip
