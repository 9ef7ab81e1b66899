#pragma once
/// OpenAI's /v1/completions and /v1/chat/completions request bodies, read into lorafleet's terms:
/// the request_draft every prompt of the body shares (sampling parameters, stop strings with a
/// chat's defaults, constraint, tenant, deadlines), the prompts as text or token ids (a chat
/// rendered with the chat template), and the OpenAI-only fields (n, echo, logprobs, streaming).
/// A request means the same as over ZeroMQ: same chat template, same stop strings, same defaults
/// where OpenAI has none of its own. Pure C++ (nlohmann-json); openai_intake() turns the result
/// into drafts, the HTTP gateway does the I/O.
///
/// Every field OpenAI defines is either honoured or refused with a 400 naming it: a parameter
/// lorafleet cannot honour (`frequency_penalty` != 0, `tools`, ...) is an error,
/// never silently ignored (echo with logprobs, which would need the prompt's log-probabilities, is
/// one). lorafleet's extensions: `top_k`, `repetition_penalty`, `ignore_eos`. The body's sizes
/// are bounded here too (a prompt, the messages, the rendered prompt: openai_limits), and each value
/// must have its field's JSON type and fit its draft field. What a request means (every range, the
/// tenant's name, which fields combine, the vocabulary, the context window) is validate_request's,
/// called by openai_intake.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/request.hpp"
#include "gateway/openai/api_error.hpp"
#include "proto/chat_template.hpp"

namespace lf::gateway {

/// Which endpoint a body came to.
enum class api_kind { completion, chat };

/// One prompt: text to tokenize, or token ids given as such (OpenAI allows both).
struct prompt_input {
  std::string text;
  std::vector<std::int32_t> tokens;
  bool is_tokens = false;
};

/// A parsed body.
struct openai_request {
  api_kind kind = api_kind::completion;
  std::string model;                  ///< as given: the base model's name or an adapter's
  /// What is tokenized: completions, one or more prompts as given; chat, one, `messages` rendered
  /// with the chat template (proto::render_chat_prompt).
  std::vector<prompt_input> prompts;
  std::vector<proto::chat_message> messages;  ///< chat: the conversation as given
  /// What every choice shares: sampling parameters (a chat's stop strings include
  /// proto::chat_stop_sequences()), tenant (`user`), timeout (`deadline_ms`), ttft_ms,
  /// speculative. Its prompt and adapter are empty: openai_intake() fills them per prompt.
  request_draft base;
  bool max_tokens_given = false;      ///< false: the intake picks (16, or the rest of the context for chat)
  int n = 1;                          ///< choices per prompt
  bool stream = false;
  bool include_usage = false;         ///< stream_options.include_usage
  bool logprobs = false;
  int top_logprobs = 0;
  std::string user;                   ///< the tenant
  /// Completions' `echo`: each choice's text starts with its prompt. With max_tokens 0 (allowed
  /// only with echo) nothing is generated: the reply is the prompt alone.
  bool echo = false;
};

/// Limits of the parser.
struct openai_limits {
  int max_n = 16;                ///< choices per prompt
  std::size_t max_choices = 64;  ///< prompts x n
  /// The longest prompt to tokenize (a chat rendered), in bytes; longer: prompt_too_long.
  std::size_t max_prompt_bytes = std::size_t{1} << 20;
};

/// Reads `body` (JSON) for `kind`; the api_error names the field at fault.
std::variant<openai_request, api_error> parse_openai_request(api_kind kind, std::string_view body,
                                                             const openai_limits& limits = {});

/// `body["messages"]` read as /v1/chat/completions reads it (roles, text parts, the same
/// refusals), for other endpoints that take a chat (POST /tokenize); the api_error names the
/// message at fault.
std::variant<std::vector<proto::chat_message>, api_error> parse_chat_messages(const nlohmann::json& body);

} // namespace lf::gateway
