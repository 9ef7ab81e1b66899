// Every wire message encodes and decodes back with every field set to a value other than its
// default, compared field by field (not with the codec's own operator==): a field an encoder
// leaves out comes back at its default and is named in the failure; a field added to a struct
// without being listed below fails to compile (LF_FIELDS, tests/support/field_check.hpp). An
// encoder whose hand-counted map header disagrees with the keys it writes throws.
#include <catch2/catch.hpp>

#include "tests/support/field_check.hpp"
#include "tests/unit/proto/frame_builder.hpp"

using namespace lf;
using namespace lf::proto;

namespace lf::test {

LF_FIELDS(chat_message, role, content);
LF_FIELDS(submit_msg, id, prompt, messages, adapter, temperature, top_k, top_p, repetition_penalty, seed,
          max_tokens, stop, ignore_eos, stream, deadline_ms, window, ttft_ms, tenant, speculative);
LF_FIELDS(cancel_msg, id);
LF_FIELDS(credit_msg, id, tokens);
LF_FIELDS(drain_msg, node);
LF_FIELDS(undrain_msg, node);
LF_FIELDS(adapters_msg, op, name, path);
LF_FIELDS(accepted_msg, id);
LF_FIELDS(token_msg, id, text, token, index);
LF_FIELDS(usage_info, prompt_tokens, completion_tokens, cached_tokens, resumed);
LF_FIELDS(timing_info, queue_ms, ttft_ms, total_ms);
LF_FIELDS(done_msg, id, finish_reason, usage, timings, text, seed);
LF_FIELDS(error_msg, id, code, message, retry_after_ms);
LF_FIELDS(cancelled_msg, id);
LF_FIELDS(stats_reply, values);
LF_FIELDS(drained_msg, node, workers, moved);
LF_FIELDS(undrained_msg, node, workers);
LF_FIELDS(adapter_row, name, version, removed, path, hash, rank, targets, bytes, updated_ms, resident);
LF_FIELDS(adapters_result, error, message, seq, adapters);

} // namespace lf::test

namespace {

/// A submit with every field set; `chat` chooses messages over prompt (a submit has one of them).
submit_msg submit(bool chat) {
  submit_msg m;
  m.id = client_request_id{77};
  if (chat)
    m.messages = {{chat_role::system, "be terse"}, {chat_role::assistant, "ok"}};
  else
    m.prompt = "Once upon a time";
  m.adapter = "styles/kjv@2";
  m.temperature = 0.5f;
  m.top_k = 40;
  m.top_p = 0.9f;
  m.repetition_penalty = 1.2f;
  m.seed = 99;
  m.max_tokens = 64;
  m.stop = {"\n\n", "END"};
  m.ignore_eos = true;
  m.stream = false;
  m.deadline_ms = 5000;
  m.window = 32;
  m.ttft_ms = 400;
  m.tenant = "acme";
  m.speculative = 4;
  return m;
}

template <class T>
void client_trip(const T& m, std::vector<std::string> unset = {}) {
  CHECK(lf::test::unset_fields(m) == unset);
  const auto back = lf::test::expect_message<T>(decode_client(encode(m)));
  CHECK(lf::test::differing(m, back) == std::vector<std::string>{});
}

template <class T>
void server_trip(const T& m) {
  CHECK(lf::test::unset_fields(m) == std::vector<std::string>{});
  const auto back = lf::test::expect_message<T>(decode_server(encode(m)));
  CHECK(lf::test::differing(m, back) == std::vector<std::string>{});
}

} // namespace

TEST_CASE("every client message round-trips with every field set", "[protocol][round_trip]") {
  client_trip(submit(false), {"messages"});
  client_trip(submit(true), {"prompt"});
  client_trip(cancel_msg{client_request_id{3}});
  client_trip(credit_msg{client_request_id{3}, 12});
  client_trip(drain_msg{"node-a/1"});
  client_trip(undrain_msg{"node-a/1"});
  client_trip(adapters_msg{"add", "styles/kjv", "/adapters/kjv"});
  // No fields: the type alone must survive.
  lf::test::expect_message<stats_msg>(decode_client(encode(stats_msg{})));
  lf::test::expect_message<ping_msg>(decode_client(encode(ping_msg{})));
}

TEST_CASE("every server message round-trips with every field set", "[protocol][round_trip]") {
  server_trip(accepted_msg{client_request_id{3}});
  server_trip(token_msg{client_request_id{3}, " the", 262, 5});
  server_trip(done_msg{client_request_id{3}, "length", {10, 20, 4, 1}, {1.5, 2.25, 30.125}, "a whole text", 4242});
  server_trip(error_msg{client_request_id{3}, serve_errc::overloaded, "busy", 250});
  server_trip(cancelled_msg{client_request_id{3}});
  server_trip(stats_reply{{{"router.accepted", 12}, {"router.queued", 0.5}}});
  server_trip(drained_msg{"node-a", 2, 7});
  server_trip(undrained_msg{"node-a", 2});
  server_trip(error_msg{client_request_id{4}, serve_errc::no_workers, "no worker takes requests", 1000});
  adapter_row row{"styles/kjv", 2, true, "/adapters/kjv", "0123456789abcdef", 8, "attn.c_attn,mlp.c_fc",
                  65536, 1700000000000, 3};
  server_trip(adapters_result{serve_errc::unknown_adapter, "gone", 9, {row}});
  lf::test::expect_message<pong_msg>(decode_server(encode(pong_msg{})));
}
