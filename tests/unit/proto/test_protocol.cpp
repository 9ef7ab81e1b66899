/// Round trips and the accepted side of the protocol: every message type encodes to one map with
/// "v" and "type" and decodes back equal; lenient-by-design inputs (nil for absent, integers for
/// floats, non-negative ints in signed formats) decode; the submit helpers.

#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <random>

#include "tests/unit/proto/frame_builder.hpp"

using namespace lf::proto;
using namespace lf::test;

namespace {

submit_msg full_submit() {
  submit_msg m;
  m.id = client_request_id{~std::uint64_t{0}};
  m.messages = {{chat_role::system, "You are terse."},
                {chat_role::user, "Caf\xc3\xa9? \xf0\x9f\x98\x80"},
                {chat_role::assistant, ""},
                {chat_role::user, "more"}};
  m.adapter = "sql-lora";
  m.temperature = 0.1f;
  m.top_k = 50;
  m.top_p = 0.95f;
  m.repetition_penalty = 1.3f;
  m.seed = ~std::uint64_t{0};
  m.max_tokens = 1 << 20;
  m.stop = {"\n\n", "###"};
  m.ignore_eos = true;
  m.stream = false;
  m.deadline_ms = max_deadline_ms;
  m.ttft_ms = 250;
  m.tenant = "team-\xc3\xa9";
  m.speculative = 6;
  return m;
}

template <class T>
void check_client_round_trip(const T& m) {
  const auto bytes = encode(m);
  CHECK(bytes.size() < 512);
  CHECK(expect_message<T>(decode_client(bytes)) == m);
  CHECK(encode(client_message{m}) == bytes);
}

template <class T>
void check_server_round_trip(const T& m) {
  const auto bytes = encode(m);
  CHECK(expect_message<T>(decode_server(bytes)) == m);
  CHECK(encode(server_message{m}) == bytes);
}

} // namespace

TEST_CASE("client messages round trip", "[protocol]") {
  submit_msg plain;
  plain.id = client_request_id{0};
  plain.prompt = "Once upon a time";
  check_client_round_trip(plain);
  check_client_round_trip(full_submit());
  check_client_round_trip(cancel_msg{client_request_id{12345678901234ull}});
  check_client_round_trip(stats_msg{});
  check_client_round_trip(ping_msg{});
  check_client_round_trip(drain_msg{"w1"});
  check_client_round_trip(drain_msg{"w1/2"});
  check_client_round_trip(credit_msg{client_request_id{7}, 1});
  check_client_round_trip(credit_msg{client_request_id{7}, max_window});
  auto windowed = full_submit();
  windowed.window = 64;
  check_client_round_trip(windowed);
}

TEST_CASE("credit windows and grants are bounded and named in the refusal", "[protocol][credit]") {
  auto m = full_submit();
  for (std::uint32_t bad : {0u, max_window + 1}) {
    m.window = bad;
    const auto r = decode_client(encode(m));
    REQUIRE(std::holds_alternative<decode_error>(r));
    CHECK_THAT(std::get<decode_error>(r).message, Catch::Contains("window"));
    CHECK(std::get<decode_error>(r).id == m.id);
  }
  const auto zero = decode_client(encode(credit_msg{client_request_id{9}, 0}));
  REQUIRE(std::holds_alternative<decode_error>(zero));
  CHECK_THAT(std::get<decode_error>(zero).message, Catch::Contains("tokens must be in [1, "));
  CHECK(std::get<decode_error>(zero).id == client_request_id{9});
  m.window.reset();
  CHECK_FALSE(expect_message<submit_msg>(decode_client(encode(m))).window);  // absent: unlimited
}

TEST_CASE("server messages round trip", "[protocol]") {
  check_server_round_trip(accepted_msg{client_request_id{3}});
  check_server_round_trip(token_msg{client_request_id{3}, " \xe4\xb8\xad", 50256, 0, std::nullopt});
  check_server_round_trip(token_msg{client_request_id{3}, "", 0, 4'000'000'000u, std::nullopt});
  done_msg done{client_request_id{3}, "stop", usage_info{10, 20, 8},
                timing_info{1.5, 20.25, 1e6}, std::nullopt, 0, {}, {}};
  check_server_round_trip(done);
  done.text = "the whole completion";
  check_server_round_trip(done);
  done.usage.resumed = 2;
  done.seed = 18446744073709551615ull;
  check_server_round_trip(done);
  check_server_round_trip(
    error_msg{client_request_id{3}, lf::serve_errc::overloaded, "queue full", 250u});
  check_server_round_trip(error_msg{std::nullopt, lf::serve_errc::invalid_request, "bad", {}});
  check_server_round_trip(cancelled_msg{client_request_id{3}});
  check_server_round_trip(stats_reply{});
  check_server_round_trip(stats_reply{{{"router.queued", 4}, {"worker.0.kv_used", 0.5}}});
  check_server_round_trip(pong_msg{});
  check_server_round_trip(drained_msg{"w1", 2, 17});
}

TEST_CASE("a drain names its node, done's seed and usage.resumed may be absent (older servers)", "[protocol]") {
  auto bad = decode_client(encode(drain_msg{""}));
  REQUIRE(std::holds_alternative<decode_error>(bad));
  CHECK_THAT(std::get<decode_error>(bad).message, Catch::Contains("node must not be empty"));
  auto bad_undrain = decode_client(encode(undrain_msg{""}));
  REQUIRE(std::holds_alternative<decode_error>(bad_undrain));
  CHECK_THAT(std::get<decode_error>(bad_undrain).message, Catch::Contains("node must not be empty"));
  // A done frame of the previous protocol revision (no seed, usage without resumed) still reads.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(6);
  pk.pack("v"), pk.pack(1), pk.pack("type"), pk.pack("done"), pk.pack("id"), pk.pack(4);
  pk.pack("finish_reason"), pk.pack("eos");
  pk.pack("usage"), pk.pack_map(3), pk.pack("prompt_tokens"), pk.pack(1), pk.pack("completion_tokens"), pk.pack(2),
    pk.pack("cached_tokens"), pk.pack(0);
  pk.pack("timings"), pk.pack_map(3), pk.pack("queue_ms"), pk.pack(0.0), pk.pack("ttft_ms"), pk.pack(1.0),
    pk.pack("total_ms"), pk.pack(2.0);
  const auto d = expect_message<done_msg>(decode_server(std::string_view(buf.data(), buf.size())));
  CHECK(d.seed == 0);
  CHECK(d.usage.resumed == 0);
  CHECK(d.usage.completion_tokens == 2);
}

TEST_CASE("every error code round trips under its serve_errc spelling", "[protocol]") {
  for (int i = 1; i <= static_cast<int>(lf::serve_errc::shutting_down); ++i) {
    const auto code = static_cast<lf::serve_errc>(i);
    const auto bytes = encode(error_msg{client_request_id{1}, code, "m", {}});
    CHECK(bytes.find(std::string(lf::to_string(code))) != std::string::npos);
    CHECK(expect_message<error_msg>(decode_server(bytes)).code == code);
  }
}

TEST_CASE("a frame is one map with v = 1 and the type name", "[protocol]") {
  const auto bytes = encode(cancel_msg{client_request_id{9}});
  const auto h = msgpack::unpack(bytes.data(), bytes.size());
  const auto& root = h.get();
  REQUIRE(root.type == msgpack::type::MAP);
  std::map<std::string, msgpack::object> kv;
  for (std::uint32_t i = 0; i < root.via.map.size; ++i)
    kv[root.via.map.ptr[i].key.as<std::string>()] = root.via.map.ptr[i].val;
  REQUIRE(kv.size() == 3);
  CHECK(kv.at("v").as<int>() == 1);
  CHECK(kv.at("type").as<std::string>() == "cancel");
  CHECK(kv.at("id").as<std::uint64_t>() == 9);

  // "stats" names both the request and the reply; the direction tells them apart.
  CHECK(std::holds_alternative<stats_msg>(decode_client(encode(stats_msg{}))));
  CHECK(std::holds_alternative<decode_error>(decode_server(encode(stats_msg{}))));
  CHECK(std::holds_alternative<stats_reply>(decode_server(encode(stats_reply{}))));
}

TEST_CASE("submit defaults apply to absent fields, and nil means absent", "[protocol]") {
  auto m = expect_message<submit_msg>(decode_client(submit_fields().bytes()));
  CHECK(m.id == client_request_id{5});
  CHECK(m.prompt == "Hello");
  CHECK(m.messages.empty());
  CHECK(m.adapter.empty());
  CHECK(m.temperature == 1.0f);
  CHECK(m.top_k == 0);
  CHECK(m.top_p == 1.0f);
  CHECK(m.repetition_penalty == 1.0f);
  CHECK_FALSE(m.seed.has_value());
  CHECK(m.max_tokens == 16);
  CHECK(m.stop.empty());
  CHECK_FALSE(m.ignore_eos);
  CHECK(m.stream);
  CHECK_FALSE(m.deadline_ms.has_value());
  CHECK_FALSE(m.ttft_ms.has_value());
  CHECK(m.tenant.empty());

  auto f = submit_fields();
  for (const char* key : {"adapter", "seed", "deadline_ms", "stop", "temperature", "max_tokens", "ttft_ms", "tenant"})
    f.set(key, nil());
  CHECK(expect_message<submit_msg>(decode_client(f.bytes())) == m);
}

TEST_CASE("numbers: ints for floats, float64 narrowed, signed formats for unsigned", "[protocol]") {
  auto f = submit_fields();
  f.set("temperature", u64(0)).set("top_p", f64(0.5)).set("repetition_penalty", i64(2));
  f.set("max_tokens", i64(100)).set("top_k", i64(-0));
  // pack_fix_int64 writes 0xd3 (int64 format) even for a small non-negative value.
  f.set("seed", [](packer& p) { p.pack_fix_int64(77); });
  const auto m = expect_message<submit_msg>(decode_client(f.bytes()));
  CHECK(m.temperature == 0.0f);
  CHECK(m.top_p == 0.5f);
  CHECK(m.repetition_penalty == 2.0f);
  CHECK(m.max_tokens == 100);
  CHECK(m.seed == std::optional<std::uint64_t>{77});
}

TEST_CASE("chat submit decodes with roles in order", "[protocol]") {
  auto f = submit_fields().erase("prompt");
  f.set("messages", array({fields{{"role", str("system")}, {"content", str("S")}}.as_value(),
                           fields{{"content", str("U")}, {"role", str("user")}}.as_value()}));
  const auto m = expect_message<submit_msg>(decode_client(f.bytes()));
  REQUIRE(m.messages.size() == 2);
  CHECK(m.messages[0] == chat_message{chat_role::system, "S"});
  CHECK(m.messages[1] == chat_message{chat_role::user, "U"});
  CHECK(m.is_chat());
  CHECK(prompt_text(m) == "S\n\nUser: U\nAssistant:");
}

TEST_CASE("to_sampling_params copies fields and adds chat stops once", "[protocol]") {
  auto m = full_submit();
  m.stop = {"\nUser:", "END"};
  const auto p = to_sampling_params(m);
  CHECK(p.temperature == m.temperature);
  CHECK(p.top_k == m.top_k);
  CHECK(p.top_p == m.top_p);
  CHECK(p.repetition_penalty == m.repetition_penalty);
  CHECK(p.seed == m.seed);
  CHECK(p.max_tokens == m.max_tokens);
  CHECK(p.ignore_eos);
  CHECK(p.stop == std::vector<std::string>{"\nUser:", "END", "\nSystem:"});
  CHECK_FALSE(validate(m).has_value());

  submit_msg plain;
  plain.prompt = "x";
  plain.stop = {"END"};
  CHECK(to_sampling_params(plain).stop == std::vector<std::string>{"END"});
  CHECK(prompt_text(plain) == "x");
}

TEST_CASE("server message helpers: terminal replies and their request", "[protocol]") {
  const client_request_id id{8};
  CHECK_FALSE(is_terminal(accepted_msg{id}));
  CHECK_FALSE(is_terminal(token_msg{id, "a", 64, 0, std::nullopt}));
  CHECK(is_terminal(done_msg{id, "eos", {}, {}, {}, 0, {}, {}}));
  CHECK(is_terminal(error_msg{id, lf::serve_errc::timeout, "late", {}}));
  CHECK(is_terminal(cancelled_msg{id}));
  CHECK_FALSE(is_terminal(stats_reply{}));
  CHECK_FALSE(is_terminal(pong_msg{}));
  CHECK(request_of(token_msg{id, "a", 64, 0, std::nullopt}) == id);
  CHECK(request_of(error_msg{std::nullopt, lf::serve_errc::internal, "x", {}}) == std::nullopt);
  CHECK(request_of(pong_msg{}) == std::nullopt);

  const auto e = expect_error(decode_client(submit_fields().set("max_tokens", u64(1ull << 40)).bytes()));
  const auto reply = to_error_msg(e);
  CHECK(reply.id == client_request_id{5});
  CHECK(reply.code == lf::serve_errc::invalid_request);
  CHECK(reply.message == e.message);
  CHECK(expect_message<error_msg>(decode_server(encode(reply))) == reply);
}

TEST_CASE("random valid messages round trip", "[protocol][random]") {
  std::mt19937_64 rng(20240611);
  const auto text = [&](std::size_t max_len) {
    static const std::vector<std::string> pieces{"a", " ", "\n", "\xc3\xa9", "\xe4\xb8\xad",
                                                 "\xf0\x9f\x98\x80", "User:", "\"", "\\"};
    std::string s;
    for (std::size_t n = rng() % (max_len + 1); n > 0; --n)
      s += pieces[rng() % pieces.size()];
    return s;
  };
  for (int i = 0; i < 500; ++i) {
    submit_msg m;
    m.id = client_request_id{rng()};
    if (rng() % 2) {
      m.prompt = "p" + text(40);
    } else {
      for (auto n = 1 + rng() % 5; n > 0; --n)
        m.messages.push_back({static_cast<chat_role>(rng() % 3), text(20)});
    }
    m.adapter = rng() % 2 ? "" : "lora-" + std::to_string(rng() % 100);
    m.temperature = static_cast<float>(rng() % 2000) / 1000.0f;
    m.top_k = static_cast<int>(rng() % 100);
    m.top_p = static_cast<float>(1 + rng() % 1000) / 1000.0f;
    m.repetition_penalty = static_cast<float>(1 + rng() % 3000) / 1000.0f;
    if (rng() % 2)
      m.seed = rng();
    m.max_tokens = 1 + static_cast<int>(rng() % max_tokens_limit);
    for (auto n = rng() % 6; n > 0; --n)
      m.stop.push_back("s" + text(8));
    m.ignore_eos = rng() % 2;
    m.stream = rng() % 2;
    if (rng() % 2)
      m.deadline_ms = 1 + rng() % max_deadline_ms;
    if (rng() % 2)
      m.ttft_ms = 1 + rng() % max_deadline_ms;
    if (rng() % 2)
      m.tenant = "tenant-\xc3\xa9-" + std::to_string(rng() % 1000);
    if (rng() % 2)
      m.speculative = rng() % 3 == 0 ? -2 : static_cast<std::int32_t>(rng() % 17);
    REQUIRE_FALSE(validate(m).has_value());
    CHECK(expect_message<submit_msg>(decode_client(encode(m))) == m);

    token_msg t{m.id, text(10), static_cast<std::int32_t>(rng() % 50257),
                static_cast<std::uint32_t>(rng()), std::nullopt};
    CHECK(expect_message<token_msg>(decode_server(encode(t))) == t);
  }
}

TEST_CASE("golden bytes: ping, and floats stay floats when integral", "[protocol]") {
  using namespace std::string_literals;
  CHECK(encode(ping_msg{}) == "\x82\xa1v\x01\xa4type\xa4ping"s);

  // temperature 1.0 is written as float32 and total_ms 2.0 as float64, not as ints.
  submit_msg m;
  m.prompt = "x";
  const auto bytes = encode(m);
  CHECK(bytes.find("\xabtemperature\xca\x3f\x80\x00\x00"s) != std::string::npos);
  done_msg d{client_request_id{1}, "eos", {}, timing_info{0, 0, 2.0}, {}, 0, {}, {}};
  CHECK(encode(d).find("\xa8total_ms\xcb\x40\x00\x00\x00\x00\x00\x00\x00"s) != std::string::npos);
}
