#include "worker/token_outcome.hpp"

#include "text/tokenizer.hpp"
#include "worker/constraint_runner.hpp"

namespace lf::worker {

token_outcome next_token(output_so_far out, std::int32_t token, const sampling_params& params, std::int32_t eos,
                         const text::tokenizer& tok, output_guide* guide) {
  token_outcome r;
  if (guide != nullptr && token != eos && !guide->step(token)) {
    r.outside_constraint = true;
    return r;
  }
  if (token == eos && !params.ignore_eos) {
    r.delta = out.stream.finish();
    r.finish_reason = out.stream.stopped() ? "stop" : "eos";
    return r;
  }
  out.generated.push_back(token);
  auto st = out.stream.push(tok.decode_token(token));
  r.delta = std::move(st.delta);
  if (st.stopped) {
    r.finish_reason = "stop";
  } else if (guide != nullptr && guide->complete()) {
    // Complete, and the constraint allows nothing more: ends as the end of text would.
    r.delta += out.stream.finish();
    r.finish_reason = "stop";
  } else if (static_cast<int>(out.generated.size()) >= params.max_tokens) {
    r.delta += out.stream.finish();
    r.finish_reason = out.stream.stopped() ? "stop" : "length";
  }
  return r;
}

} // namespace lf::worker
