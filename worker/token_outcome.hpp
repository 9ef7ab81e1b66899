#pragma once
/// What one sampled token does to a request's output, the rule every path applies (a step's
/// sampled tokens, the tokens a resumed request replays): the text it makes final and, when the
/// request ends with it, why. Pure C++ over the request's text stream.
///
///   a token the request's constraint does not allow here: refused (`outside_constraint`), nothing
///   applied;
///   end of text (unless ignore_eos): the text held back, "stop" if a stop string ended it, else "eos";
///   any other token: appended and decoded; "stop" at a stop string, or when the request's
///   constraint is complete (nothing more is allowed), "length" at max_tokens.

#include <cstdint>
#include <string>
#include <vector>

#include "core/sampling_params.hpp"
#include "text/text_stream.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::worker {

class output_guide;

/// See the file comment.
struct token_outcome {
  std::string delta;          ///< text that became final with the token (may be empty)
  std::string finish_reason;  ///< "eos", "stop" or "length"; empty: the request goes on
  bool outside_constraint = false;  ///< the constraint refused the token; nothing was applied
};

/// A request's output so far: its text stream (stop strings) and its generated tokens.
struct output_so_far {
  text::text_stream& stream;
  std::vector<std::int32_t>& generated;
};

/// Applies `token` to `out` for a request with `params`; `guide`: its constraint's state, moved
/// past the token first (nullptr: none). `eos`: the model's end-of-text id.
token_outcome next_token(output_so_far out, std::int32_t token, const sampling_params& params, std::int32_t eos,
                         const text::tokenizer& tok, output_guide* guide);

} // namespace lf::worker
