#include "tests/fuzz/fuzz_seeds.hpp"

#include <variant>

#include "proto/protocol.hpp"

namespace lf::fuzz {

using namespace lf::proto;

std::vector<std::string> seed_corpus() {
  std::vector<std::string> out;
  submit_msg plain;
  plain.id = client_request_id{7};
  plain.prompt = "The quick brown fox";
  out.push_back(encode(plain));

  submit_msg full;
  full.id = client_request_id{~std::uint64_t{0}};
  full.messages = {{chat_role::system, "Be brief."}, {chat_role::user, "Hi \xc3\xa9"},
                   {chat_role::assistant, "Hello."}, {chat_role::user, "Again?"}};
  full.adapter = "sql-lora";
  full.temperature = 0.7f;
  full.top_k = 40;
  full.top_p = 0.9f;
  full.repetition_penalty = 1.1f;
  full.seed = 42;
  full.max_tokens = 64;
  full.stop = {"\n\n", "END"};
  full.ignore_eos = true;
  full.stream = false;
  full.deadline_ms = 30'000;
  full.ttft_ms = 2'000;
  full.tenant = "team-a";
  out.push_back(encode(full));

  out.push_back(encode(cancel_msg{client_request_id{7}}));
  out.push_back(encode(stats_msg{}));
  out.push_back(encode(ping_msg{}));
  out.push_back(encode(accepted_msg{client_request_id{7}}));
  out.push_back(encode(token_msg{client_request_id{7}, " fox", 21831, 3, std::nullopt}));

  done_msg done;
  done.id = client_request_id{7};
  done.finish_reason = "length";
  done.usage = usage_info{5, 16, 4};
  done.timings = timing_info{0.5, 12.25, 80.0};
  out.push_back(encode(done));
  done.text = "jumps over the lazy dog";
  out.push_back(encode(done));

  error_msg err;
  err.id = client_request_id{9};
  err.code = serve_errc::overloaded;
  err.message = "admission queue is full";
  err.retry_after_ms = 250;
  out.push_back(encode(err));
  out.push_back(encode(error_msg{std::nullopt, serve_errc::invalid_request, "bad frame", {}}));

  out.push_back(encode(cancelled_msg{client_request_id{7}}));
  out.push_back(encode(stats_reply{{{"router.queued", 3}, {"worker.0.kv_free", 0.25}}}));
  out.push_back(encode(pong_msg{}));
  return out;
}

const std::vector<std::string>& interesting_tokens() {
  using namespace std::string_literals;
  static const std::vector<std::string> tokens{
    "\xcf\xff\xff\xff\xff\xff\xff\xff\xff"s,  // uint64 2^64-1
    "\xd3\x80\x00\x00\x00\x00\x00\x00\x00"s,  // int64 min
    "\xce\x80\x00\x00\x00"s,                  // uint32 2^31
    "\xff"s,                                  // -1
    "\x00"s,                                  // 0
    "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00"s,  // NaN
    "\xcb\xff\xf0\x00\x00\x00\x00\x00\x00"s,  // -inf
    "\xcb\x7f\xef\xff\xff\xff\xff\xff\xff"s,  // DBL_MAX
    "\xca\x7f\x80\x00\x00"s,                  // float inf
    "\xdb\xff\xff\xff\xff"s,                  // str32 of 4 GiB
    "\xdd\xff\xff\xff\xff"s,                  // array32 of 4 G elements
    "\xdf\xff\xff\xff\xff"s,                  // map32 of 4 G pairs
    "\xc6\xff\xff\xff\xff"s,                  // bin32 of 4 GiB
    "\xc4\x01\x41"s,                          // bin8 "A"
    "\xd4\x01\x00"s,                          // fixext1
    "\xc1"s,                                  // never used
    "\xc0"s, "\xc2"s, "\xc3"s,                // nil, false, true
    "\xa2\xc3\x28"s,                          // invalid UTF-8
    "\xa3\xed\xa0\x80"s,                      // UTF-16 surrogate in UTF-8
    "\xa0"s,                                  // ""
    "\x91\x91\x91\x91\x91\x91\x91\x90"s,      // nested arrays
    "\x81\x81\x81\x81\xa0\xa0\xa0\xa0"s,      // nested maps
    "\x90"s, "\x80"s,                         // [], {}
    "\xa1" "v"s, "\xa4" "type"s, "\xa2" "id"s, "\xa6" "prompt"s, "\xa8" "messages"s, "\xa4" "stop"s,
    "\xaa" "max_tokens"s, "\xab" "temperature"s, "\xa5" "top_p"s, "\xa4" "role"s, "\xa7" "content"s,
    "\xa6" "submit"s, "\xa4" "done"s, "\xa5" "error"s, "\xa5" "usage"s, "\xa6" "values"s,
  };
  return tokens;
}

bool decodes(const std::string& input) {
  return !std::holds_alternative<decode_error>(decode_client(input))
         || !std::holds_alternative<decode_error>(decode_server(input));
}

} // namespace lf::fuzz
