#pragma once
/// The replies of one OpenAI request: Server-Sent Events chunks while it streams, or one JSON
/// body at the end, in OpenAI's formats (text_completion / chat.completion[.chunk]). A request
/// has `choices` = prompts x n; each choice is one of lorafleet's requests, and its events come
/// here with the choice's index. Pure C++ (nlohmann-json), no I/O.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/sampling_params.hpp"
#include "gateway/openai/openai_request.hpp"

namespace lf::gateway {

/// The bytes of a token id (for logprobs' `token` and `bytes` fields).
using token_bytes_fn = std::function<std::string(std::int32_t)>;

/// An OpenAI error object as a JSON body: {"error": {"message", "type", "param", "code"}}.
std::string error_body(const api_error& e);

/// How many tokens a choice's request used.
struct choice_usage {
  std::uint32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

/// See the file comment. One per HTTP request; not thread-safe.
class openai_reply {
public:
  /// `id`: "cmpl-..." / "chatcmpl-..."; `created`: Unix seconds; `model`: echoed back.
  openai_reply(const openai_request& req, std::string id, std::int64_t created, std::size_t choices,
               token_bytes_fn token_bytes);

  /// Completions' echo: `choice`'s text starts with `prompt`. Call before its first event;
  /// streaming, the prompt is the choice's first chunk, sent with its first token or its end (so
  /// a request the router refuses still gets a plain error reply).
  void echo(std::size_t choice, const std::string& prompt);

  /// A token of `choice`: streaming, the SSE bytes to send now (maybe none); else none.
  std::string on_token(std::size_t choice, std::int32_t token, const std::string& text, const token_logprobs* lp);

  /// `choice` finished (`reason` "eos", "stop" or "length"); streaming, the SSE bytes to send.
  std::string on_done(std::size_t choice, const std::string& reason, const choice_usage& usage);

  /// Every choice has finished.
  bool all_done() const { return done_ == texts_.size(); }

  /// Streaming, after all_done(): the usage chunk (if asked for) and `data: [DONE]`.
  std::string stream_end() const;

  /// Streaming, a failure after the response started: an error event and `data: [DONE]`.
  static std::string stream_error(const api_error& e);

  /// Not streaming, after all_done(): the response body.
  std::string body() const;

private:
  std::string chunk(std::size_t choice, const std::string& text, const std::string* reason,
                    const std::string* logprobs_json, bool first) const;
  std::string usage_json() const;
  /// Streaming: the chunk of `choice`'s echoed prompt if it is still to be sent, else "".
  std::string take_echo(std::size_t choice);

  struct token_entry {
    std::int32_t token;
    float logprob;
    std::vector<std::int32_t> top_tokens;
    std::vector<float> top_logprobs;
    std::size_t text_offset;
  };

  api_kind kind_;
  std::string id_, model_;
  std::int64_t created_;
  int n_;
  bool stream_, include_usage_, logprobs_;
  token_bytes_fn token_bytes_;
  std::vector<std::string> texts_;
  std::vector<std::vector<token_entry>> tokens_;  // logprobs only
  std::vector<std::string> reasons_;
  std::vector<bool> started_;
  std::vector<std::string> echo_;  // streaming: prompt text not yet sent
  std::vector<std::optional<choice_usage>> usage_;
  std::size_t done_ = 0;
};

} // namespace lf::gateway
