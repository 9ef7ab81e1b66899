/// Limits: request fields out of range (the engine's sampling rules included), sizes at and past
/// each limit, frames over the size limit, deep nesting, and tiny frames declaring huge sizes.

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <limits>

#include "tests/unit/proto/frame_builder.hpp"

using namespace lf::proto;
using namespace lf::test;
using Catch::Contains;

namespace {

fields chat(std::vector<value> messages) {
  return submit_fields().erase("prompt").set("messages", array(std::move(messages)));
}

value msg(const char* role, std::string content) {
  return fields{{"role", str(role)}, {"content", str(std::move(content))}}.as_value();
}

bool accepted(const fields& f) {
  const auto r = decode_client(f.bytes());
  if (const auto* e = std::get_if<decode_error>(&r))
    UNSCOPED_INFO("decode_error: " << e->message);
  return std::holds_alternative<submit_msg>(r);
}

} // namespace

TEST_CASE("prompt and messages: exactly one, non-empty", "[protocol][limits]") {
  CHECK_THAT(client_error(submit_fields().set("prompt", str(""))), Contains("prompt must not be empty"));
  CHECK_THAT(client_error(submit_fields().erase("prompt")), Contains("prompt must not be empty"));
  CHECK_THAT(client_error(submit_fields().set("messages", array({msg("user", "x")}))),
             Contains("either prompt or messages, not both"));
  CHECK_THAT(client_error(chat({})), Contains("messages must not be empty"));
  CHECK_THAT(client_error(chat({msg("tool", "x")})),
             Contains("messages[0].role must be system, user or assistant (got 'tool')"));
  CHECK_THAT(client_error(chat({msg("user", "x"), msg("User", "y")})), Contains("messages[1].role"));
  CHECK(accepted(chat({msg("system", ""), msg("user", "x")})));
}

TEST_CASE("max_tokens must fit a 32-bit integer, its range is the router's", "[protocol][limits]") {
  const auto with = [](value v) { return submit_fields().set("max_tokens", std::move(v)); };
  CHECK_THAT(client_error(with(u64(1ull << 31))), Contains("max_tokens must be an integer in [-2147483648, 2147483647] (got 2147483648)"));
  CHECK_THAT(client_error(with(u64(~0ull))), Contains("(got 18446744073709551615)"));
  CHECK_THAT(client_error(with(i64(std::numeric_limits<std::int64_t>::min()))), Contains("(got -9223372036854775808)"));
  // In range for the wire: lf::validate_request refuses them (tests/unit/core/test_request.cpp).
  CHECK(accepted(with(u64(0))));
  CHECK(accepted(with(i64(-1))));
  CHECK(accepted(with(u64(1 << 20))));
}

TEST_CASE("sampling values must fit their wire types, their ranges are the router's", "[protocol][limits]") {
  const auto with = [](const char* key, value v) { return submit_fields().set(key, std::move(v)); };
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THAT(client_error(with("temperature", f64(1e300))), Contains("temperature is out of range for a 32-bit float (got 1e+300)"));
  CHECK_THAT(client_error(with("top_k", f64(1.5))), Contains("top_k must be an integer"));
  // Decoded as sent; lf::validate_request refuses them with the field named.
  for (auto v : {f64(std::nan("")), f64(inf), f64(-0.5), i64(-1)})
    CHECK(accepted(with("temperature", v)));
  CHECK(accepted(with("top_p", u64(0))));
  CHECK(accepted(with("top_k", i64(-1))));
  CHECK(accepted(with("repetition_penalty", u64(0))));
}

TEST_CASE("stop strings: at most 16 of at most 256 bytes", "[protocol][limits]") {
  const auto with = [](std::vector<std::string> s) { return submit_fields().set("stop", strings(s)); };
  CHECK(accepted(with({"a", ""})));  // an empty one is the router's to refuse
  CHECK_THAT(client_error(with(std::vector<std::string>(17, "x"))), Contains("stop must have at most 16 entries (got 17)"));
  CHECK(accepted(with(std::vector<std::string>(16, "x"))));
  CHECK_THAT(client_error(with({std::string(257, 'x')})), Contains("stop[0] is 257 bytes; the limit is 256"));
  CHECK(accepted(with({std::string(256, 'x')})));
  // A chat request gets two default stops, so it has room for 14 of its own.
  auto c = chat({msg("user", "hi")});
  CHECK(accepted(c.set("stop", strings(std::vector<std::string>(14, "x")))));
  CHECK_THAT(client_error(c.set("stop", strings(std::vector<std::string>(15, "x")))),
             Contains("stop must have at most 14 entries in a chat request"));
  CHECK(accepted(c.set("stop", strings({"\nUser:", "\nSystem:", "a", "b", "c", "d", "e", "f", "g",
                                        "h", "i", "j", "k", "l", "m", "n"}))));
}

TEST_CASE("sizes: prompt, messages, adapter, deadline", "[protocol][limits]") {
  CHECK(accepted(submit_fields().set("prompt", str(std::string(max_prompt_bytes, 'a')))));
  CHECK_THAT(client_error(submit_fields().set("prompt", str(std::string(max_prompt_bytes + 1, 'a')))),
             Contains("prompt is 262145 bytes; the limit is 262144"));
  std::vector<value> many(max_messages, msg("user", "x"));
  CHECK(accepted(chat(many)));
  many.push_back(msg("user", "x"));
  CHECK_THAT(client_error(chat(many)), Contains("messages must have at most 256 entries (got 257)"));
  const std::string quarter(max_prompt_bytes / 4, 'a');
  CHECK_THAT(client_error(chat({msg("user", quarter), msg("user", quarter), msg("user", quarter),
                                msg("user", quarter), msg("user", "!")})),
             Contains("the messages' content together is 262145 bytes"));
  CHECK(accepted(submit_fields().set("adapter", str(std::string(128, 'a')))));
  CHECK_THAT(client_error(submit_fields().set("adapter", str(std::string(129, 'a')))),
             Contains("adapter is 129 bytes; the limit is 128"));
  CHECK_THAT(client_error(submit_fields().set("deadline_ms", u64(0))), Contains("deadline_ms must be in [1, 86400000] (got 0)"));
  CHECK_THAT(client_error(submit_fields().set("deadline_ms", u64(max_deadline_ms + 1))),
             Contains("deadline_ms must be at most 86400000"));
  CHECK(accepted(submit_fields().set("deadline_ms", u64(max_deadline_ms))));
  CHECK_THAT(client_error(submit_fields().set("ttft_ms", u64(0))), Contains("ttft_ms must be in [1, 86400000] (got 0)"));
  CHECK(accepted(submit_fields().set("ttft_ms", u64(500))));
  // Its range is validate_request's (test_request); -1 is the draft's "left out".
  CHECK(accepted(submit_fields().set("speculative", u64(17))));
  CHECK_THAT(client_error(submit_fields().set("speculative", i64(-1))), Contains("speculative must be left out"));
  CHECK(accepted(submit_fields().set("speculative", i64(-2))));
  CHECK(accepted(submit_fields().set("speculative", u64(4))));
}

TEST_CASE("tenant: at most 64 bytes on the wire, its characters validate_request's", "[protocol][limits]") {
  CHECK(accepted(submit_fields().set("tenant", str(std::string(max_tenant_bytes, 'a')))));
  CHECK(accepted(submit_fields().set("tenant", str(""))));
  CHECK_THAT(client_error(submit_fields().set("tenant", str(std::string(max_tenant_bytes + 1, 'a')))),
             Contains("tenant is 65 bytes; the limit is 64"));
  CHECK(accepted(submit_fields().set("tenant", str("a\tb"))));  // test_request refuses it
  CHECK_THAT(client_error(submit_fields().set("tenant", u64(3))), Contains("tenant must be a string"));
}

TEST_CASE("frames over the size limit are refused before parsing", "[protocol][limits]") {
  const auto big = submit_fields().set("prompt", str(std::string(max_frame_bytes, 'a'))).bytes();
  CHECK_THAT(expect_error(decode_client(big)).message, Contains("the limit is 1048576"));
  CHECK_THAT(expect_error(decode_server(std::string(max_frame_bytes + 1, '\x80'))).message,
             Contains("frame is 1048577 bytes"));
  // Exactly at the limit the frame is parsed (and here fails for its content).
  CHECK_THAT(expect_error(decode_client(std::string(max_frame_bytes, '\xc0'))).message,
             Contains("trailing bytes"));
}

TEST_CASE("deeply nested input is rejected", "[protocol][limits]") {
  const std::string deep = std::string(100000, '\x91') + "\xc0";
  CHECK_THAT(expect_error(decode_client(deep)).message, Contains("nested deeper than 3 levels"));
  const std::string deep_maps = std::string(50000, '\x81') ;
  CHECK(std::holds_alternative<decode_error>(decode_server(deep_maps)));
  // Depth 4 inside an otherwise valid submit.
  CHECK_THAT(client_error(submit_fields().set("stop", array({array({array({str("x")})})}))),
             Contains("nested deeper"));
}

TEST_CASE("tiny frames declaring huge sizes fail fast without allocating", "[protocol][limits]") {
  using namespace std::string_literals;
  const auto start = std::chrono::steady_clock::now();
  // msgpack-c waits for a value's bytes before it builds the value, so a declared string, bin or
  // ext larger than the frame ends as truncated input, never as an allocation of that size.
  CHECK_THAT(expect_error(decode_client("\xdb\xff\xff\xff\xff"s)).message, Contains("truncated"));
  CHECK_THAT(expect_error(decode_client("\xc6\xff\xff\xff\xff"s)).message, Contains("truncated"));
  CHECK_THAT(expect_error(decode_client("\xc9\xff\xff\xff\xff\x01"s)).message, Contains("truncated"));
  CHECK_THAT(expect_error(decode_client("\x81\xa6prompt\xdb\xff\xff\xff\xff"s)).message, Contains("truncated"));
  // Containers are allocated when their header is read, so their limits are checked first.
  CHECK_THAT(expect_error(decode_client("\xdd\xff\xff\xff\xff"s)).message, Contains("an array has more than 1024 elements"));
  CHECK_THAT(expect_error(decode_client("\xdf\xff\xff\xff\xff"s)).message, Contains("a map has more than 4096 entries"));
  CHECK_THAT(expect_error(decode_client("\x81\xa4stop\xdd\x7f\xff\xff\xff"s)).message, Contains("an array has more than"));
  // Declared sizes within the limits but beyond the frame: truncated.
  CHECK_THAT(expect_error(decode_client("\xdb\x00\x0f\xff\xff"s)).message, Contains("truncated"));
  CHECK_THAT(expect_error(decode_client("\xdd\x00\x00\x04\x00"s)).message, Contains("truncated"));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  CHECK(took.count() < 1.0);
}
