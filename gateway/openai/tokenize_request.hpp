#pragma once
/// vLLM's `POST /tokenize` and `POST /detokenize`: the bodies read and the replies written. Pure
/// C++ (nlohmann-json, the tokenizer); the HTTP gateway checks the `model` and sends the reply.
///
///   /tokenize    {"model"?, "prompt": "text", "add_special_tokens"?, "return_token_strs"?}
///                {"model"?, "messages": [...], "add_generation_prompt"?, "add_special_tokens"?,
///                 "return_token_strs"?}
///             -> {"count": N, "max_model_len": CONTEXT, "tokens": [ids]
///                 (, "token_strs": [the vocabulary's spelling of each])}
///   /detokenize  {"model"?, "tokens": [ids]} -> {"prompt": "text"}
///
/// Text is encoded exactly as a completion's prompt is (a literal "<|endoftext|>" is the special
/// token), and a chat is rendered by the chat endpoint's template, so the count is what the
/// prompt of that request would be. GPT-2's tokenizer adds no special tokens (no BOS or EOS), so
/// `add_special_tokens` changes nothing, as on vLLM with GPT-2. Every other field is refused by
/// name, like the completion endpoints do.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/openai/openai_request.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::gateway {

/// A /tokenize or /detokenize body answered.
struct tokenize_answer {
  /// The `model` the body named; empty: none. The gateway answers only for a model it serves
  /// (adapters share the base model's tokenizer).
  std::string model;
  std::string body;  ///< the reply's JSON
};

/// What /tokenize needs besides the tokenizer.
struct tokenize_limits {
  std::uint32_t max_model_len = 0;      ///< the context window, reported as vLLM's max_model_len
  std::size_t max_prompt_bytes = std::size_t{1} << 20;  ///< longer text: prompt_too_long (400)
};

/// Answers a /tokenize body; the api_error names the field at fault.
std::variant<tokenize_answer, api_error> answer_tokenize(std::string_view body, const text::tokenizer& tok,
                                                         const tokenize_limits& limits);

/// Answers a /detokenize body; an id outside the vocabulary is a 400 naming it. Bytes that are not
/// UTF-8 (a token list may end inside a character) come back as U+FFFD, as in generated text.
std::variant<tokenize_answer, api_error> answer_detokenize(std::string_view body, const text::tokenizer& tok);

/// Token `id` as the vocabulary spells it (Hugging Face's convert_ids_to_tokens, vLLM's
/// `token_strs`): its bytes in GPT-2's byte alphabet, so " world" is "Ġworld".
std::string token_spelling(const text::tokenizer& tok, std::int32_t id);

} // namespace lf::gateway
