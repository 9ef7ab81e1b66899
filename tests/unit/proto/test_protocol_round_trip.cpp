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
          max_tokens, stop, ignore_eos, stream, deadline_ms, window, ttft_ms, tenant, logit_bias, logprobs,
          top_logprobs, constraint_kind, constraint, speculative, continued);
LF_FIELDS(token_logprobs, logprob, top_tokens, top_logprobs);
LF_FIELDS(cancel_msg, id);
LF_FIELDS(credit_msg, id, tokens);
LF_FIELDS(drain_msg, node);
LF_FIELDS(undrain_msg, node);
LF_FIELDS(adapters_msg, op, name, path);
LF_FIELDS(accepted_msg, id);
LF_FIELDS(token_msg, id, text, token, index, logprobs);
LF_FIELDS(usage_info, prompt_tokens, completion_tokens, cached_tokens, resumed);
LF_FIELDS(timing_info, queue_ms, ttft_ms, total_ms);
LF_FIELDS(done_msg, id, finish_reason, usage, timings, text, seed, tokens, logprobs);
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
  m.logit_bias = {{0, -100.0f}, {50256, 99.5f}};
  m.logprobs = true;
  m.top_logprobs = 5;
  m.constraint_kind = "regex";
  m.constraint = "[a-z]+ \\d{2}";
  m.speculative = 4;
  m.continued = {464, 2068, 7586};
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
  const token_logprobs lp{-0.5f, {262, 13}, {-0.25f, -3.0f}};
  server_trip(token_msg{client_request_id{3}, " the", 262, 5, lp});
  server_trip(done_msg{client_request_id{3}, "length", {10, 20, 4, 1}, {1.5, 2.25, 30.125}, "a whole text", 4242,
                       {262, 13}, {lp, token_logprobs{-1.0f, {13}, {-1.0f}}}});
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

TEST_CASE("logit_bias keys may be integers or their decimal digits, bad ones are refused by name", "[protocol]") {
  using namespace lf::test;
  // A map with integer keys, which frame_builder's string-keyed fields cannot write.
  const auto int_keyed = [](std::vector<std::pair<std::int64_t, value>> kv) -> value {
    return [kv](packer& p) {
      p.pack_map(static_cast<std::uint32_t>(kv.size()));
      for (const auto& [k, v] : kv) {
        p.pack_int64(k);
        v(p);
      }
    };
  };
  auto f = submit_fields();
  f.set("logit_bias", int_keyed({{13, f64(-2.5)}, {50256, i64(-100)}}));
  auto m = expect_message<submit_msg>(decode_client(f.bytes()));
  CHECK(m.logit_bias == std::map<std::int32_t, float>{{13, -2.5f}, {50256, -100.0f}});
  f.set("logit_bias", fields{{"13", f64(1.5)}}.as_value());
  CHECK(expect_message<submit_msg>(decode_client(f.bytes())).logit_bias.at(13) == 1.5f);
  f.set("logit_bias", fields{{"x1", f64(1.5)}}.as_value());
  CHECK_THAT(client_error(f), Catch::Contains("logit_bias keys must be token ids"));
  f.set("logit_bias", int_keyed({{-1, f64(1.5)}}));
  CHECK_THAT(client_error(f), Catch::Contains("logit_bias key"));
  f.set("logit_bias", fields{{"1", str("big")}}.as_value());
  CHECK_THAT(client_error(f), Catch::Contains("logit_bias values must be a number"));
  f.set("logit_bias", int_keyed({{1, f64(1)}}) );
  f.add("logit_bias", int_keyed({{1, f64(1)}}));
  CHECK(std::holds_alternative<decode_error>(decode_client(f.bytes())));  // duplicate field
  std::vector<std::pair<std::int64_t, value>> many;
  for (int i = 0; i < 301; ++i)
    many.emplace_back(i, f64(0.5));
  auto g = submit_fields();
  g.set("logit_bias", int_keyed(many));
  CHECK_THAT(client_error(g), Catch::Contains("at most 300 entries"));
  g.set("logit_bias", int_keyed({})).set("top_logprobs", i64(21));
  CHECK_THAT(client_error(g), Catch::Contains("top_logprobs"));
  // The range of a bias is the router's rule (validate_request), like every sampling value.
  g.set("top_logprobs", i64(2)).set("logprobs", boolean(true)).set("logit_bias", int_keyed({{3, f64(150.5)}}));
  const auto ok = expect_message<submit_msg>(decode_client(g.bytes()));
  CHECK(to_sampling_params(ok).logit_bias.at(3) == 150.5f);
  CHECK(to_sampling_params(ok).logprobs);
  CHECK(to_sampling_params(ok).top_logprobs == 2);
  CHECK(lf::validate(to_sampling_params(ok)).value_or("").find("logit_bias[3]") == 0);
}

TEST_CASE("a submit's constraint is compiled at decode: one that cannot is refused by name", "[protocol]") {
  auto m = submit(false);
  m.constraint_kind = "json_schema";
  m.constraint = R"({"type":"string","format":"email"})";
  const auto r = decode_client(encode(m));
  const auto* e = std::get_if<decode_error>(&r);
  REQUIRE(e != nullptr);
  CHECK(e->code == lf::serve_errc::invalid_request);
  CHECK_THAT(e->message, Catch::Contains("unsupported keyword `format`"));
  m.constraint_kind = "";
  CHECK(std::holds_alternative<decode_error>(decode_client(encode(m))));  // text without a kind
  m.constraint_kind = "json_object";
  m.constraint = "";
  CHECK_FALSE(std::holds_alternative<decode_error>(decode_client(encode(m))));
}
