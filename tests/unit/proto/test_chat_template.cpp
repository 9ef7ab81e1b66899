/// The chat template: exact rendering for each role position, and the default stop sequences.

#include <catch2/catch.hpp>

#include "proto/chat_template.hpp"

using namespace lf::proto;

TEST_CASE("roles parse from their wire spelling only", "[chat]") {
  for (auto r : {chat_role::system, chat_role::user, chat_role::assistant})
    CHECK(parse_chat_role(to_string(r)) == r);
  CHECK_FALSE(parse_chat_role("User"));
  CHECK_FALSE(parse_chat_role("tool"));
  CHECK_FALSE(parse_chat_role(""));
}

TEST_CASE("chat template renders a conversation", "[chat]") {
  const std::vector<chat_message> conv{
    {chat_role::system, "You are a pirate."},
    {chat_role::user, "Hello"},
    {chat_role::assistant, "Arr."},
    {chat_role::user, "Where is the gold?"},
  };
  CHECK(render_chat_prompt(conv)
        == "You are a pirate.\n\n"
           "User: Hello\n"
           "Assistant: Arr.\n"
           "User: Where is the gold?\n"
           "Assistant:");
}

TEST_CASE("chat template: system messages after the first turn are marked", "[chat]") {
  const std::vector<chat_message> conv{
    {chat_role::system, "A"},
    {chat_role::system, "B"},
    {chat_role::user, "u"},
    {chat_role::system, "Be brief now."},
  };
  CHECK(render_chat_prompt(conv) == "A\n\nB\n\nUser: u\nSystem: Be brief now.\nAssistant:");
  CHECK(render_chat_prompt({{chat_role::user, "line1\nline2"}})
        == "User: line1\nline2\nAssistant:");
  CHECK(render_chat_prompt({}) == "Assistant:");
}

TEST_CASE("chat template without the generation prompt stops after the last message", "[chat]") {
  const std::vector<chat_message> conv{{chat_role::system, "S"}, {chat_role::user, "u"}, {chat_role::assistant, "a"}};
  CHECK(render_chat_prompt(conv, false) == "S\n\nUser: u\nAssistant: a\n");
  CHECK(render_chat_prompt(conv, true) == render_chat_prompt(conv, false) + "Assistant:");
  CHECK(render_chat_prompt({}, false).empty());
}

TEST_CASE("chat stop sequences end the assistant's turn", "[chat]") {
  const auto& stops = chat_stop_sequences();
  CHECK(stops == std::vector<std::string>{"\nUser:", "\nSystem:"});
  // What a model would write next after its answer is caught by one of them.
  const std::string continuation = " Aye.\nUser: and then?";
  CHECK(continuation.find(stops[0]) == 5);
}
