#include "tools/loadtest/conversation.hpp"

#include <stdexcept>

namespace lf::loadtest {

std::vector<conversation_plan> plan_chat(const chat_workload_config& cfg, text_maker make) {
  if (cfg.conversations == 0 || cfg.turns == 0 || cfg.group_size == 0)
    throw std::invalid_argument("chat workload: conversations, turns and group size must be > 0");
  if (!(cfg.rate > 0) || !(cfg.think_s >= 0))
    throw std::invalid_argument("chat workload: the rate must be > 0 and the think time >= 0");
  std::mt19937_64 rng(cfg.seed);
  const auto starts = arrival_times(cfg.rate, 1, cfg.conversations, rng);
  std::exponential_distribution<double> think(cfg.think_s > 0 ? 1 / cfg.think_s : 1);
  // Salts: system prompts by group, user messages by (conversation, turn), apart from each other
  // and from one run's seed to the next.
  const std::uint64_t base = cfg.seed * 0x9e3779b97f4a7c15ULL;
  std::vector<std::string> systems;
  std::vector<conversation_plan> out(cfg.conversations);
  for (std::uint32_t c = 0; c < cfg.conversations; ++c) {
    auto& p = out[c];
    p.start_s = starts[c];
    p.group = c / cfg.group_size;
    if (p.group >= systems.size())
      systems.push_back(make(cfg.system.sample(rng), base + (std::uint64_t{p.group} << 40) + 1));
    p.system = systems[p.group];
    for (std::uint32_t k = 0; k < cfg.turns; ++k) {
      chat_turn t;
      t.user = make(cfg.user.sample(rng), base + (std::uint64_t{c} << 20) + k + (1ULL << 62));
      t.max_tokens = cfg.output.sample(rng);
      t.think_s = k == 0 || cfg.think_s == 0 ? 0 : think(rng);
      p.turns.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<proto::chat_message> turn_messages(const conversation_plan& c, const std::vector<std::string>& replies,
                                               std::size_t k) {
  if (k >= c.turns.size() || replies.size() < k)
    throw std::out_of_range("turn_messages: no such turn, or its earlier replies are missing");
  std::vector<proto::chat_message> m;
  m.reserve(2 * k + 2);
  m.push_back({proto::chat_role::system, c.system});
  for (std::size_t i = 0; i < k; ++i) {
    m.push_back({proto::chat_role::user, c.turns[i].user});
    m.push_back({proto::chat_role::assistant, replies[i]});
  }
  m.push_back({proto::chat_role::user, c.turns[k].user});
  return m;
}

} // namespace lf::loadtest
