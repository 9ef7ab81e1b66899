// What one sampled token does to a request's output (worker/token_outcome): end of text, stop
// strings, max_tokens, ignore_eos. GPT-2's tokenizer, no engine.
#include <catch2/catch.hpp>

#include "tests/support/test_tokenizer.hpp"
#include "worker/token_outcome.hpp"

using namespace lf;
using namespace lf::worker;

namespace token_outcome_test {

constexpr std::int32_t eos = 50256;

/// A request's output, fed token by token.
struct output {
  explicit output(sampling_params p) : params(std::move(p)), stream(params.stop) {}
  token_outcome feed(const std::string& text) {
    token_outcome last;
    for (auto t : test::tokenizer().encode(text)) {
      auto r = next_token({stream, generated}, t, params, eos, test::tokenizer(), nullptr);
      last.delta += r.delta;
      last.finish_reason = r.finish_reason;
      if (!r.finish_reason.empty())
        break;
    }
    return last;
  }
  token_outcome feed(std::int32_t token) {
    return next_token({stream, generated}, token, params, eos, test::tokenizer(), nullptr);
  }
  sampling_params params;
  text::text_stream stream;
  std::vector<std::int32_t> generated;
};

sampling_params with(int max_tokens, std::vector<std::string> stop = {}, bool ignore_eos = false) {
  sampling_params p;
  p.max_tokens = max_tokens;
  p.stop = std::move(stop);
  p.ignore_eos = ignore_eos;
  return p;
}

} // namespace token_outcome_test

using namespace token_outcome_test;

TEST_CASE("token outcome: text goes out as it becomes final, the end of text ends with eos", "[token_outcome]") {
  output o(with(100));
  auto r = o.feed(" Hello world");
  CHECK(r.finish_reason.empty());
  CHECK(o.stream.emitted() == " Hello world");
  auto end = o.feed(eos);
  CHECK(end.finish_reason == "eos");
  CHECK(o.generated.size() == test::tokenizer().encode(" Hello world").size());  // eos is not output
}

TEST_CASE("token outcome: a stop string ends with stop, its text held back", "[token_outcome]") {
  output o(with(100, {"\n\n"}));
  auto r = o.feed("one\n\ntwo");
  CHECK(r.finish_reason == "stop");
  CHECK(o.stream.emitted() == "one");
}

TEST_CASE("token outcome: max_tokens ends with length, and ignore_eos makes end of text a token", "[token_outcome]") {
  output o(with(2, {}, true));
  CHECK(o.feed(eos).finish_reason.empty());  // ignored: generated like any token
  CHECK(o.feed(eos).finish_reason == "length");
  CHECK(o.generated == std::vector<std::int32_t>{eos, eos});
}
