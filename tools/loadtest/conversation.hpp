#pragma once
/// The multi-turn chat workload: conversations of N turns, each turn resending the whole history
/// plus a new user message (as chat clients call an OpenAI API), a system prompt shared by each
/// group of conversations, think time between turns, conversations arriving as a Poisson process.
/// Pure C++ with a seeded generator: a plan is reproducible and testable without a cluster.
///
///   conversation c (group g = c / group_size):  start_s(c) from Poisson arrivals
///     turn 0: [system(g), user(c, 0)]                                       -> reply 0
///     ... think_s ...
///     turn k: [system(g), user(c, 0), reply 0, ..., user(c, k)]              -> reply k
///
/// With group_size 1 and 1 turn nothing is shared: the no-sharing baseline.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "proto/chat_template.hpp"
#include "tools/loadtest/workload.hpp"

namespace lf::loadtest {

/// What to send.
struct chat_workload_config {
  std::uint32_t conversations = 16;
  std::uint32_t turns = 4;                ///< per conversation
  std::uint32_t group_size = 4;           ///< conversations sharing one system prompt
  length_range system{256, 256};          ///< system prompt tokens
  length_range user{32, 32};              ///< each user message's tokens
  length_range output{32, 32};            ///< max_tokens of each turn
  double rate = 1;                        ///< conversations started per second (Poisson)
  double think_s = 1;                     ///< mean think time between turns (exponential); 0: none
  std::uint64_t seed = 1;
};

/// One turn to send.
struct chat_turn {
  std::string user;             ///< the new user message
  std::uint32_t max_tokens = 0;
  double think_s = 0;           ///< wait after the previous turn's reply before sending this one
};

/// One conversation.
struct conversation_plan {
  double start_s = 0;           ///< its first turn's send time from the start
  std::uint32_t group = 0;      ///< which system prompt
  std::string system;
  std::vector<chat_turn> turns;
};

/// The conversations of a run. `make` writes text of about n tokens; its salt picks the text, so
/// equal salts give equal text (a group's system prompt) and distinct ones distinct text.
std::vector<conversation_plan> plan_chat(const chat_workload_config& cfg, text_maker make);

/// The messages of turn `k` of `c`, given the replies to its turns before k (replies.size() >= k).
std::vector<proto::chat_message> turn_messages(const conversation_plan& c, const std::vector<std::string>& replies,
                                               std::size_t k);

} // namespace lf::loadtest
