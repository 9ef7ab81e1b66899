#pragma once
/// Chat messages and the plain-text template that turns them into a GPT-2 prompt. GPT-2 was never
/// trained on a chat format, so the template is the simplest one a base model continues well:
/// role markers at the start of a line, as in a play script. Pure C++17.
///
/// The template (docs/protocol.md, "Chat template"):
///
///     <system content>\n\n          each system message before the first user/assistant turn
///     User: <content>\n             a user message
///     Assistant: <content>\n        an assistant message
///     System: <content>\n           a system message after the first user/assistant turn
///     Assistant:                    appended, no trailing space: the model answers (only
///                                   POST /tokenize may leave it out: add_generation_prompt false)
///
/// Content is copied verbatim. The model's reply ends at the first "\nUser:" or "\nSystem:" it
/// writes (chat_stop_sequences()), so it does not go on to write the user's next turn.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lf::proto {

/// Who wrote a chat message.
enum class chat_role : std::uint8_t { system, user, assistant };

/// Wire spelling: "system", "user", "assistant".
std::string_view to_string(chat_role r) noexcept;

/// Inverse of to_string; std::nullopt for anything else (the match is case-sensitive).
std::optional<chat_role> parse_chat_role(std::string_view s) noexcept;

/// One turn of a conversation.
struct chat_message {
  chat_role role = chat_role::user;
  std::string content;  ///< UTF-8, copied into the prompt verbatim
};

bool operator==(const chat_message& a, const chat_message& b);
bool operator!=(const chat_message& a, const chat_message& b);

/// The prompt for `messages` under the template above; ends with "Assistant:" unless
/// `add_generation_prompt` is false (then it ends where the last message's line does).
std::string render_chat_prompt(const std::vector<chat_message>& messages, bool add_generation_prompt = true);

/// Stop sequences every chat request gets in addition to its own: "\nUser:" and "\nSystem:".
const std::vector<std::string>& chat_stop_sequences();

} // namespace lf::proto
