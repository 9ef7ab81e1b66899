#pragma once
/// OpenAI's /v1/completions and /v1/chat/completions request bodies, read into the same submit
/// the ZeroMQ protocol builds (proto::submit_msg), so a request means the same on both fronts:
/// same chat template, same stop strings, same defaults where OpenAI has none of its own. Pure
/// C++ (nlohmann-json); the HTTP gateway does the I/O.
///
/// Every field OpenAI defines is either honoured or refused with a 400 naming it: a parameter
/// lorafleet cannot honour (`frequency_penalty` != 0, `tools`, ...) is an error,
/// never silently ignored (echo with logprobs, which would need the prompt's log-probabilities, is
/// one). lorafleet's extensions: `top_k`, `repetition_penalty`, `ignore_eos`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/serve_errc.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

/// Which endpoint a body came to.
enum class api_kind { completion, chat };

/// An error as OpenAI's API reports it: HTTP status and the `error` object's fields.
struct api_error {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< the field at fault; empty => null
  std::string code;   ///< lorafleet's serve_errc name, or empty => null
};

/// The api_error for a serve_errc from the router or a worker (status and type by code).
api_error to_api_error(serve_errc code, std::string message);

/// One prompt: text to tokenize, or token ids given as such (OpenAI allows both).
struct prompt_input {
  std::string text;
  std::vector<std::int32_t> tokens;
  bool is_tokens = false;
};

/// A parsed body. `base` carries the sampling fields, stop strings, messages (chat) and stream;
/// its prompt and adapter are filled per choice by the gateway.
struct openai_request {
  api_kind kind = api_kind::completion;
  std::string model;                  ///< as given: the base model's name or an adapter's
  std::vector<prompt_input> prompts;  ///< completions: one or more; chat: none (see base.messages)
  proto::submit_msg base;
  bool max_tokens_given = false;      ///< false: the gateway picks (16, or the rest of the context for chat)
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
};

/// Reads `body` (JSON) for `kind`; the api_error names the field at fault.
std::variant<openai_request, api_error> parse_openai_request(api_kind kind, std::string_view body,
                                                             const openai_limits& limits = {});

/// `body["messages"]` read as /v1/chat/completions reads it (roles, text parts, the same
/// refusals), for other endpoints that take a chat (POST /tokenize); the api_error names the
/// message at fault.
std::variant<std::vector<proto::chat_message>, api_error> parse_chat_messages(const nlohmann::json& body);

} // namespace lf::gateway
