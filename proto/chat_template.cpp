#include "proto/chat_template.hpp"

namespace lf::proto {

std::string_view to_string(chat_role r) noexcept {
  switch (r) {
    case chat_role::system: return "system";
    case chat_role::user: return "user";
    case chat_role::assistant: return "assistant";
  }
  return "user";
}

std::optional<chat_role> parse_chat_role(std::string_view s) noexcept {
  for (auto r : {chat_role::system, chat_role::user, chat_role::assistant})
    if (to_string(r) == s)
      return r;
  return std::nullopt;
}

bool operator==(const chat_message& a, const chat_message& b) {
  return a.role == b.role && a.content == b.content;
}

bool operator!=(const chat_message& a, const chat_message& b) {
  return !(a == b);
}

std::string render_chat_prompt(const std::vector<chat_message>& messages, bool add_generation_prompt) {
  std::size_t bytes = 16;
  for (const auto& m : messages)
    bytes += m.content.size() + 16;
  std::string out;
  out.reserve(bytes);
  // Leading system messages read as a preamble; a later one is a marked turn like the others,
  // so it cannot be mistaken for part of the previous turn.
  bool in_preamble = true;
  for (const auto& m : messages) {
    if (m.role == chat_role::system && in_preamble) {
      out += m.content;
      out += "\n\n";
      continue;
    }
    in_preamble = false;
    switch (m.role) {
      case chat_role::system: out += "System: "; break;
      case chat_role::user: out += "User: "; break;
      case chat_role::assistant: out += "Assistant: "; break;
    }
    out += m.content;
    out += '\n';
  }
  if (add_generation_prompt)
    out += "Assistant:";
  return out;
}

const std::vector<std::string>& chat_stop_sequences() {
  static const std::vector<std::string> stops{"\nUser:", "\nSystem:"};
  return stops;
}

} // namespace lf::proto
