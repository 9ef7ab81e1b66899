// The multi-turn chat workload's plan (tools/loadtest/conversation.hpp).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "tools/loadtest/conversation.hpp"

using namespace lf::loadtest;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_loadtest_chat {

namespace {

/// "t<salt>:<n>": equal salts give equal text, as the load tester's text maker does.
std::string fake_text(std::uint32_t n, std::uint64_t salt) { return "t" + std::to_string(salt) + ":" + std::to_string(n); }

} // namespace

TEST_CASE("conversations share a system prompt per group and differ in their user messages", "[loadtest][chat]") {
  chat_workload_config c;
  c.conversations = 6;
  c.turns = 3;
  c.group_size = 2;
  c.system = {100, 100};
  c.user = {10, 10};
  c.output = {8, 8};
  c.rate = 2;
  c.think_s = 0.5;
  const auto p = plan_chat(c, fake_text);
  REQUIRE(p.size() == 6);
  CHECK(p[0].system == p[1].system);
  CHECK(p[2].system == p[3].system);
  CHECK(p[0].system != p[2].system);
  CHECK(p[4].group == 2);
  std::set<std::string> users;
  for (std::size_t i = 0; i < p.size(); ++i) {
    REQUIRE(p[i].turns.size() == 3);
    CHECK(p[i].turns[0].think_s == 0);
    CHECK(p[i].turns[1].think_s > 0);
    CHECK(p[i].turns[2].max_tokens == 8);
    if (i > 0)
      CHECK(p[i].start_s >= p[i - 1].start_s);  // Poisson arrivals in order
    for (const auto& t : p[i].turns)
      users.insert(t.user);
  }
  CHECK(users.size() == 18);
  // The same seed, the same plan; another seed, other text.
  CHECK(plan_chat(c, fake_text)[5].turns[2].user == p[5].turns[2].user);
  c.seed = 2;
  CHECK(plan_chat(c, fake_text)[0].system != p[0].system);
}

TEST_CASE("each turn resends the whole history and adds one user message", "[loadtest][chat]") {
  chat_workload_config c;
  c.conversations = 1;
  c.turns = 3;
  c.think_s = 0;
  const auto p = plan_chat(c, fake_text);
  const std::vector<std::string> replies{"first reply", "second reply"};
  const auto t0 = turn_messages(p[0], replies, 0);
  REQUIRE(t0.size() == 2);
  CHECK(t0[0].role == lf::proto::chat_role::system);
  CHECK(t0[1].content == p[0].turns[0].user);
  const auto t2 = turn_messages(p[0], replies, 2);
  REQUIRE(t2.size() == 6);
  CHECK(t2[2].role == lf::proto::chat_role::assistant);
  CHECK(t2[2].content == "first reply");
  CHECK(t2[4].content == "second reply");
  CHECK(t2[5].content == p[0].turns[2].user);
  // Turn k's rendered prompt is a prefix of turn k + 1's: what a prefix cache can reuse.
  const auto r1 = lf::proto::render_chat_prompt(turn_messages(p[0], replies, 1));
  const auto r2 = lf::proto::render_chat_prompt(t2);
  CHECK(r2.compare(0, r1.size(), r1) == 0);
  CHECK_THROWS_AS(turn_messages(p[0], {}, 1), std::out_of_range);
  CHECK(p[0].turns[1].think_s == 0);
}

TEST_CASE("a chat plan refuses empty shapes", "[loadtest][chat]") {
  chat_workload_config c;
  c.turns = 0;
  CHECK_THROWS_AS(plan_chat(c, fake_text), std::invalid_argument);
  c.turns = 1;
  c.rate = 0;
  CHECK_THROWS_AS(plan_chat(c, fake_text), std::invalid_argument);
}

} // namespace test_loadtest_chat
