#include "gateway/openai/openai_intake.hpp"

#include <algorithm>
#include <limits>

#include "text/tokenizer.hpp"

namespace lf::gateway {

namespace {

/// Choice j's seed: the request's for choice 0 (the n = 1 answer), the others far from their
/// neighbours'.
std::uint64_t choice_seed(std::uint64_t seed, int j) {
  return j == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(j));
}

/// validate_request's name for a field -> the body's, where they differ.
std::string body_field(const std::string& field, api_kind kind) {
  if (field == "tenant")
    return "user";
  if (field == "prompt" && kind == api_kind::chat)
    return "messages";
  if (field == "top_logprobs" && kind == api_kind::completion)
    return "logprobs";  // a completion's `logprobs` is the number of alternatives
  return field;
}

/// The prompt of `in` as token ids: given, or its text tokenized.
std::vector<std::int32_t> prompt_tokens(const prompt_input& in, const text::tokenizer& tok) {
  return in.is_tokens ? in.tokens : tok.encode(in.text);
}

} // namespace

api_error openai_refusal(const check_failure& bad, api_kind kind) {
  auto e = to_api_error(bad.code, bad.message);  // param: the field the message starts with
  const auto named = body_field(e.param, kind);
  if (named != e.param && e.message.compare(0, e.param.size(), e.param) == 0)
    e.message = named + (e.param == "tenant" ? " (the tenant)" : "") + e.message.substr(e.param.size());
  e.param = named;
  return e;
}

std::variant<openai_intake_result, api_error> openai_intake(const openai_request& req, const text::tokenizer& tok,
                                                            const intake_limits& limits) {
  openai_intake_result out;
  const bool generate = req.base.params.max_tokens > 0;  // 0 (echo only): the prompt is the whole reply
  const auto n = static_cast<std::uint64_t>(req.n);
  request_limits prompt_rules = limits.request;
  if (prompt_rules.vocab_size == 0)
    prompt_rules.vocab_size = tok.vocab_size();
  // Without the window the drafts are checked for everything else; the router checks the window.
  request_limits draft_rules = prompt_rules;
  if (draft_rules.context_window == 0)
    draft_rules.context_window = std::numeric_limits<std::uint32_t>::max();
  const auto window = limits.request.context_window;
  for (const auto& in : req.prompts) {
    request_draft draft = req.base;
    draft.prompt = prompt_tokens(in, tok);
    draft.adapter = req.model == limits.model_name ? std::string() : req.model;
    auto& params = draft.params;
    params.logprobs = req.logprobs;
    params.top_logprobs = req.top_logprobs;
    if (!req.max_tokens_given && req.kind == api_kind::chat && window > draft.prompt.size())
      params.max_tokens = static_cast<int>(window - draft.prompt.size());
    if (req.echo) {
      if (auto bad = check_prompt(draft.prompt, prompt_rules, params.max_tokens))
        return openai_refusal(*bad, req.kind);
      out.echoes.push_back({in.is_tokens ? tok.decode(in.tokens) : in.text,
                            static_cast<std::uint32_t>(draft.prompt.size())});
    }
    out.charge += (draft.prompt.size() + static_cast<std::uint64_t>(generate ? params.max_tokens : 0)) * n;
    if (!generate && req.echo)
      continue;  // the prompt alone, checked above
    if (auto checked = validate_request(draft, draft_rules); auto* bad = std::get_if<check_failure>(&checked))
      return openai_refusal(*bad, req.kind);
    for (int j = 0; j < req.n; ++j) {
      out.choices.push_back(draft);
      if (params.seed)
        out.choices.back().params.seed = choice_seed(*params.seed, j);
    }
  }
  return out;
}

} // namespace lf::gateway
