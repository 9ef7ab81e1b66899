/// Malformed frames: not msgpack, not one map, wrong envelope, missing/unknown/duplicate fields,
/// wrong types, invalid UTF-8. Each must come back as a decode_error naming the problem, with the
/// request id when the frame had a readable one.

#include <catch2/catch.hpp>

#include <random>

#include "core/utf8.hpp"
#include "tests/unit/proto/frame_builder.hpp"

using namespace lf::proto;
using namespace lf::test;
using Catch::Contains;

TEST_CASE("random bytes are rejected", "[protocol][reject]") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (auto& c : bytes)
      c = static_cast<char>(rng());
    const auto c = decode_client(bytes);
    const auto s = decode_server(bytes);
    REQUIRE(std::holds_alternative<decode_error>(c));
    REQUIRE(std::holds_alternative<decode_error>(s));
    CHECK(lf::is_valid_utf8(std::get<decode_error>(c).message));
  }
  CHECK_THAT(expect_error(decode_client("")).message, Contains("empty frame"));
  CHECK_THAT(expect_error(decode_client("\xc1")).message, Contains("malformed msgpack"));
}

TEST_CASE("every truncation of a valid frame is rejected", "[protocol][reject]") {
  submit_msg m;
  m.id = client_request_id{1};
  m.messages = {{chat_role::user, "hello"}};
  m.stop = {"x"};
  const auto bytes = encode(m);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    REQUIRE(std::holds_alternative<decode_error>(decode_client(bytes.substr(0, n))));
  CHECK_THAT(expect_error(decode_client(bytes.substr(0, bytes.size() - 1))).message,
             Contains("truncated"));
}

TEST_CASE("trailing bytes after the map are rejected", "[protocol][reject]") {
  const auto one = encode(ping_msg{});
  CHECK_THAT(expect_error(decode_client(one + '\xc0')).message, Contains("1 trailing bytes"));
  CHECK_THAT(expect_error(decode_client(one + one)).message, Contains("trailing bytes"));
  CHECK_THAT(expect_error(decode_server(encode(pong_msg{}) + "abc")).message,
             Contains("3 trailing bytes"));
}

TEST_CASE("the top level must be a map", "[protocol][reject]") {
  msgpack::sbuffer buf;
  packer p(buf);
  p.pack_array(2);
  p.pack_uint64(1);
  p.pack_uint64(2);
  CHECK_THAT(expect_error(decode_client(std::string(buf.data(), buf.size()))).message,
             Contains("must be one msgpack map (got array)"));
  CHECK_THAT(expect_error(decode_client("\x2a")).message, Contains("(got int)"));
  CHECK_THAT(expect_error(decode_client("\xa2hi")).message, Contains("(got str)"));
  CHECK_THAT(expect_error(decode_server("\xc0")).message, Contains("(got nil)"));
}

TEST_CASE("envelope: version and type", "[protocol][reject]") {
  CHECK_THAT(client_error(submit_fields().erase("v")), Contains("missing required field 'v'"));
  CHECK_THAT(client_error(submit_fields().set("v", u64(2))),
             Contains("unsupported protocol version 2"));
  CHECK_THAT(client_error(submit_fields().set("v", str("1"))),
             Contains("unsupported protocol version str"));
  CHECK_THAT(client_error(submit_fields().erase("type")), Contains("missing required field 'type'"));
  CHECK_THAT(client_error(submit_fields().set("type", u64(1))), Contains("type must be a string"));
  CHECK_THAT(client_error(submit_fields().set("type", str("frobnicate"))),
             Contains("unknown message type 'frobnicate'"));
  // A server message sent by a client, and the other way round.
  CHECK_THAT(expect_error(decode_client(encode(accepted_msg{client_request_id{1}}))).message,
             Contains("unknown message type 'accepted'"));
  CHECK_THAT(expect_error(decode_server(encode(ping_msg{}))).message,
             Contains("unknown message type 'ping'"));
}

TEST_CASE("the request id is reported when it could be read", "[protocol][reject]") {
  CHECK(expect_error(decode_client(submit_fields().set("max_tokens", u64(1ull << 40)).bytes())).id
        == client_request_id{5});
  CHECK(expect_error(decode_client(submit_fields().set("v", u64(9)).bytes())).id
        == client_request_id{5});
  CHECK(expect_error(decode_client(submit_fields().set("bogus", u64(1)).bytes())).id
        == client_request_id{5});
  CHECK_FALSE(expect_error(decode_client(submit_fields().set("id", str("5")).bytes())).id);
  CHECK_FALSE(expect_error(decode_client("\x90")).id);
}

TEST_CASE("required fields must be present", "[protocol][reject]") {
  CHECK_THAT(client_error(submit_fields().erase("id")),
             Contains("missing required field 'id' in submit message"));
  CHECK_THAT(client_error(fields{{"v", u64(1)}, {"type", str("cancel")}}),
             Contains("missing required field 'id' in cancel message"));
  CHECK_THAT(client_error(submit_fields().set("id", nil())), Contains("id must be an unsigned"));
  const auto token = fields{{"v", u64(1)}, {"type", str("token")}, {"id", u64(1)}, {"text", str("")}};
  CHECK_THAT(expect_error(decode_server(token.bytes())).message,
             Contains("missing required field 'token'"));
}

TEST_CASE("unknown and duplicate fields are rejected", "[protocol][reject]") {
  CHECK_THAT(client_error(submit_fields().set("temprature", f64(0.5))),
             Contains("unknown field 'temprature' in submit message"));
  CHECK_THAT(client_error(fields{{"v", u64(1)}, {"type", str("ping")}, {"id", u64(1)}}),
             Contains("unknown field 'id' in ping message"));
  CHECK_THAT(client_error(submit_fields().erase("prompt").set(
               "messages", array({fields{{"role", str("user")}, {"content", str("x")},
                                         {"name", str("bob")}}.as_value()}))),
             Contains("unknown field 'messages[0].name' in messages[0]"));
  CHECK_THAT(client_error(submit_fields().add("prompt", str("again"))),
             Contains("duplicate field 'prompt'"));
  // Field names are echoed escaped, so the message stays printable ASCII.
  const auto e = client_error(submit_fields().set("\xff\n", u64(1)));
  CHECK_THAT(e, Contains("unknown field '\\xff\\x0a'"));
  // Keys must be strings.
  msgpack::sbuffer buf;
  packer p(buf);
  p.pack_map(1);
  p.pack_uint64(1);
  p.pack_uint64(1);
  CHECK_THAT(expect_error(decode_client(std::string(buf.data(), buf.size()))).message,
             Contains("field names in frame must be strings (got int)"));
  auto many = submit_fields();
  for (int i = 0; i < 40; ++i)
    many.set("f" + std::to_string(i), u64(1));
  CHECK_THAT(client_error(many), Contains("at most 32 are allowed"));
}

TEST_CASE("wrong field types are rejected", "[protocol][reject]") {
  CHECK_THAT(client_error(submit_fields().set("prompt", u64(1))), Contains("prompt must be a string (got int)"));
  CHECK_THAT(client_error(submit_fields().set("prompt", bin(""))), Contains("prompt must be a string (got bin)"));
  CHECK_THAT(client_error(submit_fields().set("prompt", bin("abc"))), Contains("binary values"));
  CHECK_THAT(client_error(submit_fields().set("stream", str("yes"))), Contains("stream must be a boolean (got str)"));
  CHECK_THAT(client_error(submit_fields().set("stop", str("END"))), Contains("stop must be an array (got str)"));
  CHECK_THAT(client_error(submit_fields().set("stop", array({u64(1)}))), Contains("stop[0] must be a string (got int)"));
  CHECK_THAT(client_error(submit_fields().set("temperature", str("hot"))), Contains("temperature must be a number (got str)"));
  CHECK_THAT(client_error(submit_fields().set("top_k", f64(1.5))), Contains("top_k must be an integer (got float)"));
  CHECK_THAT(client_error(submit_fields().set("seed", i64(-1))), Contains("seed must be >= 0 (got -1)"));
  CHECK_THAT(client_error(submit_fields().set("seed", f64(3.5))), Contains("seed must be an unsigned integer (got float)"));
  CHECK_THAT(client_error(submit_fields().set("deadline_ms", boolean(true))), Contains("deadline_ms must be an unsigned integer (got bool)"));
  CHECK_THAT(client_error(submit_fields().set("adapter", array({}))), Contains("adapter must be a string (got array)"));
  CHECK_THAT(client_error(submit_fields().set("id", f64(5.5))), Contains("id must be an unsigned integer (got float)"));
  CHECK_THAT(client_error(submit_fields().erase("prompt").set("messages", str("hi"))), Contains("messages must be an array"));
  CHECK_THAT(client_error(submit_fields().erase("prompt").set("messages", array({str("hi")}))), Contains("messages[0] must be a map (got str)"));
  CHECK_THAT(client_error(submit_fields().erase("prompt").set("messages", array({fields{{"role", u64(1)}, {"content", str("x")}}.as_value()}))),
             Contains("messages[0].role must be a string (got int)"));
  CHECK_THAT(client_error(submit_fields().set("prompt", [](packer& p) { p.pack_ext(1, 1); p.pack_ext_body("x", 1); })),
             Contains("extension values"));
}

TEST_CASE("invalid UTF-8 is rejected in every string", "[protocol][reject]") {
  const std::string bad = "ok\xc3\x28";
  const std::string surrogate = "\xed\xa0\x80";
  CHECK_THAT(client_error(submit_fields().set("prompt", str(bad))), Contains("prompt must be valid UTF-8"));
  CHECK_THAT(client_error(submit_fields().set("prompt", str(surrogate))), Contains("valid UTF-8"));
  CHECK_THAT(client_error(submit_fields().set("adapter", str(bad))), Contains("adapter must be valid UTF-8"));
  CHECK_THAT(client_error(submit_fields().set("stop", strings({"a", bad}))), Contains("stop[1] must be valid UTF-8"));
  CHECK_THAT(client_error(submit_fields().erase("prompt").set("messages", array({fields{{"role", str("user")}, {"content", str(bad)}}.as_value()}))),
             Contains("messages[0].content must be valid UTF-8"));
  CHECK_THAT(client_error(submit_fields().set("type", str("\xff"))), Contains("type must be valid UTF-8"));
  const auto token = fields{{"v", u64(1)}, {"type", str("token")}, {"id", u64(1)}, {"text", str(bad)},
                            {"token", u64(1)}, {"index", u64(0)}};
  CHECK_THAT(expect_error(decode_server(token.bytes())).message, Contains("text must be valid UTF-8"));
}

TEST_CASE("server frames: ranges, codes and stats values", "[protocol][reject]") {
  const auto base = [] {
    return fields{{"v", u64(1)}, {"type", str("token")}, {"id", u64(1)}, {"text", str("a")},
                  {"token", u64(1)}, {"index", u64(0)}};
  };
  const auto err = [](const fields& f) { return expect_error(decode_server(f.bytes())).message; };
  CHECK_THAT(err(base().set("token", i64(-1))), Contains("token must be an integer in [0, 2147483647] (got -1)"));
  CHECK_THAT(err(base().set("token", u64(1ull << 31))), Contains("(got 2147483648)"));
  CHECK_THAT(err(base().set("index", u64(1ull << 32))), Contains("index must be at most 4294967295"));

  const auto usage = fields{{"prompt_tokens", u64(1)}, {"completion_tokens", u64(2)}, {"cached_tokens", u64(0)}};
  const auto timings = fields{{"queue_ms", f64(0)}, {"ttft_ms", f64(1)}, {"total_ms", u64(2)}};
  const auto done = [&] {
    return fields{{"v", u64(1)}, {"type", str("done")}, {"id", u64(1)}, {"finish_reason", str("eos")},
                  {"usage", usage.as_value()}, {"timings", timings.as_value()}};
  };
  CHECK(expect_message<done_msg>(decode_server(done().bytes())).timings.total_ms == 2.0);
  CHECK_THAT(err(done().erase("usage")), Contains("missing required field 'usage'"));
  CHECK_THAT(err(done().set("usage", fields(usage).erase("cached_tokens").as_value())),
             Contains("missing required field 'usage.cached_tokens' in usage"));
  CHECK_THAT(err(done().set("usage", fields(usage).set("extra", u64(1)).as_value())),
             Contains("unknown field 'usage.extra' in usage"));
  CHECK_THAT(err(done().set("timings", fields(timings).set("ttft_ms", f64(std::nan(""))).as_value())),
             Contains("timings.ttft_ms must be a finite number >= 0 (got nan)"));
  CHECK_THAT(err(done().set("timings", fields(timings).set("queue_ms", f64(-1)).as_value())),
             Contains("timings.queue_ms must be a finite number >= 0 (got -1)"));
  CHECK_THAT(err(done().set("finish_reason", str(""))), Contains("finish_reason must not be empty"));
  CHECK_THAT(err(done().set("usage", u64(3))), Contains("usage must be a map (got int)"));

  const auto error = [] {
    return fields{{"v", u64(1)}, {"type", str("error")}, {"code", str("overloaded")}, {"message", str("m")}};
  };
  CHECK_FALSE(expect_message<error_msg>(decode_server(error().bytes())).id);
  CHECK_THAT(err(error().set("code", str("bogus"))), Contains("code must be an error code"));
  CHECK_THAT(err(error().set("code", str("none"))), Contains("(got 'none')"));
  CHECK_THAT(err(error().set("retry_after_ms", u64(1ull << 32))), Contains("retry_after_ms must be at most"));

  const auto stats = [](value values) {
    return fields{{"v", u64(1)}, {"type", str("stats")}, {"values", std::move(values)}};
  };
  CHECK_THAT(err(stats(fields{{"a", f64(std::nan(""))}}.as_value())), Contains("values['a'] must be finite (got nan)"));
  CHECK_THAT(err(stats(fields{{"a", str("x")}}.as_value())), Contains("values['a'] must be a number (got str)"));
  CHECK_THAT(err(stats(fields{{"a", u64(1)}}.add("a", u64(2)).as_value())), Contains("duplicate key values['a']"));
  CHECK_THAT(err(stats(fields{{"\xff", u64(1)}}.as_value())), Contains("a key of values must be valid UTF-8"));
  CHECK_THAT(err(stats(array({}))), Contains("values must be a map (got array)"));
  CHECK(expect_message<stats_reply>(decode_server(stats(fields{{"n", i64(-3)}}.as_value()).bytes()))
          .values.at("n") == -3.0);
}
