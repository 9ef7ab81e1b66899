#include "gateway/openai/openai_response.hpp"

#include <nlohmann/json.hpp>

namespace lf::gateway {

using json = nlohmann::json;

namespace {

/// Token bytes can be part of a UTF-8 character: invalid sequences become U+FFFD in JSON strings
/// (the `bytes` fields keep them exact).
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

/// OpenAI's finish reasons: "stop" (end of text or a stop string) or "length".
std::string openai_reason(const std::string& r) { return r == "length" ? "length" : "stop"; }

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s)
    a.push_back(static_cast<int>(c));
  return a;
}

} // namespace

std::string error_body(const api_error& e) {
  json err{{"message", e.message},
           {"type", e.type},
           {"param", e.param.empty() ? json() : json(e.param)},
           {"code", e.code.empty() ? json() : json(e.code)}};
  return dump(json{{"error", err}});
}

openai_reply::openai_reply(const openai_request& req, std::string id, std::int64_t created, std::size_t choices,
                           token_bytes_fn token_bytes)
  : kind_(req.kind), id_(std::move(id)), model_(req.model), created_(created), n_(req.n), stream_(req.stream),
    include_usage_(req.include_usage), logprobs_(req.logprobs), token_bytes_(std::move(token_bytes)),
    texts_(choices), tokens_(choices), reasons_(choices), started_(choices, false), echo_(choices),
    usage_(choices) {}

std::string openai_reply::chunk(std::size_t choice, const std::string& text, const std::string* reason,
                                const std::string* logprobs_json, bool first) const {
  json c{{"index", choice}, {"finish_reason", reason ? json(openai_reason(*reason)) : json()}};
  c["logprobs"] = logprobs_json ? json::parse(*logprobs_json) : json();
  json out{{"id", id_}, {"created", created_}, {"model", model_}};
  if (kind_ == api_kind::chat) {
    out["object"] = "chat.completion.chunk";
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!text.empty() || first)
      delta["content"] = text;
    c["delta"] = delta;
  } else {
    out["object"] = "text_completion";
    c["text"] = text;
  }
  out["choices"] = json::array({c});
  return sse(out);
}

void openai_reply::echo(std::size_t choice, const std::string& prompt) {
  texts_[choice] += prompt;
  if (stream_)
    echo_[choice] = prompt;
}

std::string openai_reply::take_echo(std::size_t choice) {
  if (echo_[choice].empty())
    return {};
  const bool first = !started_[choice];
  started_[choice] = true;
  auto out = chunk(choice, echo_[choice], nullptr, nullptr, first);
  echo_[choice].clear();
  return out;
}

std::string openai_reply::on_token(std::size_t choice, std::int32_t token, const std::string& text,
                                   const token_logprobs* lp) {
  const auto offset = texts_[choice].size();
  texts_[choice] += text;
  std::optional<token_entry> entry;
  if (logprobs_ && lp != nullptr)
    entry = token_entry{token, lp->logprob, lp->top_tokens, lp->top_logprobs, offset};
  if (!stream_) {
    if (entry)
      tokens_[choice].push_back(std::move(*entry));
    return {};
  }
  auto echoed = take_echo(choice);
  if (text.empty() && !entry)
    return echoed;
  std::string lp_json;
  if (entry) {
    const auto bytes = token_bytes_(token);
    if (kind_ == api_kind::chat) {
      json tops = json::array();
      for (std::size_t i = 0; i < entry->top_tokens.size(); ++i) {
        const auto b = token_bytes_(entry->top_tokens[i]);
        tops.push_back({{"token", b}, {"logprob", entry->top_logprobs[i]}, {"bytes", bytes_of(b)}});
      }
      lp_json = dump(json{{"content", json::array({json{{"token", bytes}, {"logprob", entry->logprob},
                                                        {"bytes", bytes_of(bytes)}, {"top_logprobs", tops}}})}});
    } else {
      json tops = json::object();
      for (std::size_t i = 0; i < entry->top_tokens.size(); ++i)
        tops[token_bytes_(entry->top_tokens[i])] = entry->top_logprobs[i];
      lp_json = dump(json{{"tokens", {bytes}},
                          {"token_logprobs", {entry->logprob}},
                          {"top_logprobs", json::array({tops})},
                          {"text_offset", {offset}}});
    }
  }
  const bool first = !started_[choice];
  started_[choice] = true;
  return echoed + chunk(choice, text, nullptr, entry ? &lp_json : nullptr, first);
}

std::string openai_reply::on_done(std::size_t choice, const std::string& reason, const choice_usage& usage) {
  if (!reasons_[choice].empty())
    return {};
  reasons_[choice] = reason;
  usage_[choice] = usage;
  ++done_;
  if (!stream_)
    return {};
  auto echoed = take_echo(choice);
  const bool first = !started_[choice];
  started_[choice] = true;
  return echoed + chunk(choice, "", &reasons_[choice], nullptr, first);
}

std::string openai_reply::usage_json() const {
  // A prompt's tokens count once however many choices it has (OpenAI's rule for n).
  std::uint64_t prompt = 0, completion = 0, cached = 0;
  for (std::size_t c = 0; c < usage_.size(); ++c) {
    if (!usage_[c])
      continue;
    completion += usage_[c]->completion_tokens;
    if (c % static_cast<std::size_t>(n_) == 0) {
      prompt += usage_[c]->prompt_tokens;
      cached += usage_[c]->cached_tokens;
    }
  }
  return dump(json{{"prompt_tokens", prompt},
                   {"completion_tokens", completion},
                   {"total_tokens", prompt + completion},
                   {"prompt_tokens_details", {{"cached_tokens", cached}}}});
}

std::string openai_reply::stream_end() const {
  std::string out;
  if (include_usage_) {
    json u{{"id", id_}, {"created", created_}, {"model", model_},
           {"object", kind_ == api_kind::chat ? "chat.completion.chunk" : "text_completion"},
           {"choices", json::array()}, {"usage", json::parse(usage_json())}};
    out += sse(u);
  }
  return out + "data: [DONE]\n\n";
}

std::string openai_reply::stream_error(const api_error& e) {
  return "data: " + error_body(e) + "\n\ndata: [DONE]\n\n";
}

std::string openai_reply::body() const {
  json choices = json::array();
  for (std::size_t c = 0; c < texts_.size(); ++c) {
    json lp;  // null unless asked for
    if (logprobs_) {
      if (kind_ == api_kind::chat) {
        json content = json::array();
        for (const auto& t : tokens_[c]) {
          const auto b = token_bytes_(t.token);
          json tops = json::array();
          for (std::size_t i = 0; i < t.top_tokens.size(); ++i) {
            const auto tb = token_bytes_(t.top_tokens[i]);
            tops.push_back({{"token", tb}, {"logprob", t.top_logprobs[i]}, {"bytes", bytes_of(tb)}});
          }
          content.push_back({{"token", b}, {"logprob", t.logprob}, {"bytes", bytes_of(b)}, {"top_logprobs", tops}});
        }
        lp = {{"content", content}};
      } else {
        json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
        for (const auto& t : tokens_[c]) {
          toks.push_back(token_bytes_(t.token));
          lps.push_back(t.logprob);
          json top = json::object();
          for (std::size_t i = 0; i < t.top_tokens.size(); ++i)
            top[token_bytes_(t.top_tokens[i])] = t.top_logprobs[i];
          tops.push_back(top);
          offs.push_back(t.text_offset);
        }
        lp = {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
      }
    }
    json ch{{"index", c}, {"finish_reason", openai_reason(reasons_[c])}, {"logprobs", lp}};
    if (kind_ == api_kind::chat)
      ch["message"] = {{"role", "assistant"}, {"content", texts_[c]}};
    else
      ch["text"] = texts_[c];
    choices.push_back(ch);
  }
  json out{{"id", id_},
           {"object", kind_ == api_kind::chat ? "chat.completion" : "text_completion"},
           {"created", created_},
           {"model", model_},
           {"choices", choices},
           {"usage", json::parse(usage_json())}};
  return dump(out);
}

} // namespace lf::gateway
