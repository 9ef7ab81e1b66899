#include "gateway/zmq/submit_draft.hpp"

#include <algorithm>

#include "text/tokenizer.hpp"

namespace lf::gateway {

std::variant<request_draft, check_failure> draft_of(const proto::submit_msg& m, const text::tokenizer& tok,
                                                   std::size_t max_prompt_bytes,
                                                   const std::vector<std::int32_t>* given_tokens) {
  request_draft d;
  if (given_tokens != nullptr) {
    d.prompt = *given_tokens;
  } else {
    const auto text = proto::prompt_text(m);
    if (text.size() > max_prompt_bytes)
      return check_failure{serve_errc::prompt_too_long, "prompt is " + std::to_string(text.size())
                                                          + " bytes; the limit is " + std::to_string(max_prompt_bytes)};
    d.prompt = tok.encode(text);
  }
  d.params = proto::to_sampling_params(m);
  d.adapter = m.adapter;
  if (m.deadline_ms)
    d.timeout_ms = static_cast<std::uint32_t>(std::min<std::uint64_t>(*m.deadline_ms, UINT32_MAX));
  if (m.ttft_ms)
    d.ttft_ms = static_cast<std::uint32_t>(std::min<std::uint64_t>(*m.ttft_ms, UINT32_MAX));
  d.tenant = m.tenant;
  if (m.speculative)
    d.speculative = *m.speculative;
  return d;
}

} // namespace lf::gateway
