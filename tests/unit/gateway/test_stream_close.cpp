// Which HTTP streams close their connection at the end (gateway/openai/stream_close.hpp).
#include <catch2/catch.hpp>

#include "gateway/openai/stream_close.hpp"

using lf::gateway::close_after_stream;
using lf::gateway::stream_client;

TEST_CASE("stream_close: the openai SDK on Node.js 18 gets Connection: close, on Node.js 20 and 22 keeps the connection") {
  CHECK(close_after_stream({"", "OpenAI/JS 4.104.0", "node", "v18.20.4"}));
  CHECK(close_after_stream({"keep-alive", "OpenAI/JS 4.104.0", "node", "v19.9.0"}));
  CHECK_FALSE(close_after_stream({"", "OpenAI/JS 4.104.0", "node", "v20.20.2"}));
  CHECK_FALSE(close_after_stream({"", "OpenAI/JS 5.0.0", "node", "v22.1.0"}));
  CHECK_FALSE(close_after_stream({"", "OpenAI/JS 5.0.0", "deno", "v1.40.0"}));
}

TEST_CASE("stream_close: a client asking for Connection: close, and node-fetch's own User-Agent, get it") {
  CHECK(close_after_stream({"close", "curl/7.88.1", "", ""}));
  CHECK(close_after_stream({"Close", "", "", ""}));
  CHECK(close_after_stream({"", "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", "", ""}));
  CHECK_FALSE(close_after_stream({"keep-alive", "curl/7.88.1", "", ""}));
  CHECK_FALSE(close_after_stream({"", "", "", ""}));
}

TEST_CASE("stream_close: a runtime version that is not a number keeps the connection") {
  CHECK_FALSE(close_after_stream({"", "", "node", "unknown"}));
  CHECK_FALSE(close_after_stream({"", "", "node", ""}));
  CHECK_FALSE(close_after_stream({"", "", "Node", "v"}));
  CHECK(close_after_stream({"", "", "Node", "V16"}));
}
