#pragma once
/// The OpenAI intake: a parsed /v1/completions or /v1/chat/completions body becomes the
/// request_drafts the router takes, one per choice, or the api_error to answer. Pure C++ (the
/// tokenizer, no I/O); the HTTP gateway charges rate limits, sends the drafts and replies.
///
///   body --parse_openai_request--> openai_request --openai_intake--> drafts (+ echoes, charge)
///                                                                     --> generate_request each
///
/// What the intake does, per prompt (prompt-major, `n` choices per prompt: OpenAI's index order):
///   - tokenizes the prompt (a chat rendered) or takes its token ids;
///   - names the adapter: any `model` but the served model's name;
///   - chat without max_tokens: the rest of the context window (16 when the window is unknown);
///   - choice j > 0 of a seeded request gets the seed ^ (0x9E3779B97F4A7C15 * j), choice 0 the seed
///     itself (the n = 1 answer);
///   - echo: the prompt's text (token ids decoded) for each choice to start with.
/// It checks nothing of its own: the body's rules are the parser's, the request's are
/// validate_request's, which the intake calls on each prompt's draft with the router's limits
/// (the router calls it again: one set of rules, applied where a request comes in and where it is
/// placed). A refusal names OpenAI's field (`user` for the tenant, `messages` for a chat's prompt,
/// `logprobs` for a completion's top_logprobs). An echoed prompt that generates nothing
/// (max_tokens 0) gets validate_request's prompt rules alone (check_prompt): no router sees it.
/// With the context window not known (0) the drafts are checked without it (the router has it),
/// and an echo is refused as overloaded.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/request.hpp"
#include "gateway/openai/openai_request.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::gateway {

/// What the intake needs of the HTTP gateway's settings.
struct intake_limits {
  std::string model_name = "gpt2";  ///< `model` naming the base model; any other name is an adapter
  /// The router's (validate_request's). context_window 0: not known (chat's default max_tokens 16,
  /// echo refused, the window left to the router); vocab_size 0: the tokenizer's.
  request_limits request;
};

/// validate_request's refusal in OpenAI's words: the api_error naming the body's field.
api_error openai_refusal(const check_failure& bad, api_kind kind);

/// An echoed prompt: each of its choices' text starts with `text`.
struct echoed_prompt {
  std::string text;         ///< as given, or the token ids decoded
  std::uint32_t tokens = 0; ///< its length in tokens (the usage of a reply that generates nothing)
};

/// A request taken in.
struct openai_intake_result {
  /// One per choice, prompt-major, n per prompt; empty when nothing is generated (echo with
  /// max_tokens 0: the reply is the prompts alone).
  std::vector<request_draft> choices;
  std::vector<echoed_prompt> echoes;  ///< echo: one per prompt; else empty
  /// Tokens the request may use, every choice: prompt + max_tokens (what rate limits charge).
  std::uint64_t charge = 0;
};

/// `req` (its tenant already the caller's key's, when keyed) as drafts; see the file comment.
std::variant<openai_intake_result, api_error> openai_intake(const openai_request& req, const text::tokenizer& tok,
                                                            const intake_limits& limits);

} // namespace lf::gateway
