// The serving loop's sampling of a step, with speculative decoding: each decoding row's limits
// for the speculation runner before the step (speculation_runner.hpp proposes), verification
// after it. Why verification keeps every request's output exactly what plain decoding gives:
// worker/speculation.hpp.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>
#include <exception>

#include "worker/engine/sampling/logprobs.hpp"
#include "worker/engine/sampling/sampler.hpp"
#include "worker/step_driver.hpp"

namespace lf::worker {

void serving_loop::propose_drafts() {
  // Every decoding row counts for the automatic rule; those that may speculate are candidates.
  std::vector<spec_candidate> candidates;
  std::uint32_t rows = 0;
  bool automatic = false;
  for (auto seq : sched_.running()) {
    if (sched_.phase(seq) != seq_phase::decoding)
      continue;
    ++rows;
    auto& lr = *live_.at(request_id{seq.value()});
    const auto mode = spec_.mode_of(lr.req.speculative());
    // A constrained row is not speculated: its proposals would need a mask per position.
    if (mode == speculation_mode::off || lr.guide)
      continue;
    // Room after this step's token: within max_tokens, and within the client's credits (every
    // emitted token must be within its allowance).
    const auto done = lr.generated.size() + 1;
    const auto most = static_cast<std::size_t>(std::max(0, lr.req.params().max_tokens));
    std::size_t room = most > done ? most - done : 0;
    if (!lr.credits.unlimited())
      room = std::min<std::size_t>(room, lr.credits.bound() > done ? lr.credits.bound() - done : 0);
    candidates.push_back({seq, mode, room, &sched_.tokens(seq)});
    automatic = automatic || mode == speculation_mode::automatic;
  }
  // The step's size without the proposals (one token per decoding row, plus prefill up to the
  // budget): only the automatic rule reads it, and counting the waiting tokens walks the queue.
  std::uint32_t step_tokens = 0;
  if (automatic)
    step_tokens = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(sched_.config().max_batched_tokens, rows + sched_.get_load().waiting_tokens));
  spec_.propose(candidates, rows, step_tokens, [this](cache::seq_id id) {
    return sched_.contains(id) && !sched_.paused(id) && sched_.phase(id) == seq_phase::decoding;
  });
}

void serving_loop::sample_rows(const step_plan& plan, std::vector<std::vector<std::int32_t>>& emitted,
                               std::vector<std::vector<std::optional<token_logprobs>>>& logprobs,
                               std::vector<request_id>& broken, std::vector<request_id>& dead_ends) {
  // The rows that sample, with their first logits row and sampler; sampled on the engine's
  // threads (each request's sampler is its own: the order does not matter).
  struct pick_job {
    std::size_t chunk, row;
    live_request* lr;
    const std::vector<std::int32_t>* context;
    const std::vector<std::int32_t>* proposal;  ///< this step's proposed tokens (speculation_runner)
    int logprobs = -1;  ///< -1: none; else the alternatives wanted
    bool failed = false;
    bool dead_end = false;  ///< its constraint allowed no token
  };
  std::vector<pick_job> jobs;
  std::size_t row = 0;
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const auto& c = plan.chunks[i];
    if (!c.samples)
      continue;
    auto& lr = *live_.at(request_id{c.id.value()});
    const auto& p = lr.req.params();
    jobs.push_back({i, row, &lr, &sched_.tokens(c.id), &spec_.draft(c.id), p.logprobs ? p.top_logprobs : -1});
    row += 1 + c.draft;
  }
  const auto vocab = engine_.vocab_size();
  engine_.for_rows(jobs.size(), [&](std::size_t b, std::size_t e) {
    thread_local std::vector<float> raw;
    for (auto j = b; j < e; ++j) {
      auto& job = jobs[j];
      auto& lr = *job.lr;
      auto& out = emitted[job.chunk];
      auto& lps = logprobs[job.chunk];
      try {
        // Row k draws index g + k after the k proposals before it (draw_row, step_driver.hpp).
        auto drawn = draw_row(plan.chunks[job.chunk].draft, *job.context, *job.proposal,
                              [&](std::uint32_t k, const std::vector<std::int32_t>& ctx) {
                                auto* logits = engine_.logits(job.row + k);
                                if (job.logprobs >= 0)
                                  raw.assign(logits, logits + vocab);  // sample() rewrites the row
                                const auto tok = lr.guide ? lr.guide->sample(lr.pick, lr.req.params(), logits, vocab,
                                                                             ctx, lr.generated.size() + k)
                                                          : lr.pick.sample(logits, vocab, ctx, lr.generated.size() + k);
                                if (tok >= 0)
                                  lps.push_back(job.logprobs >= 0
                                                  ? std::optional<token_logprobs>(engine::compute_logprobs(
                                                      raw.data(), vocab, tok, job.logprobs))
                                                  : std::nullopt);
                                return tok;
                              });
        if (drawn.dead_end) {  // the constraint allows no token
          job.dead_end = true;
          out.assign(1, 0);
          lps.assign(1, std::nullopt);
        } else {
          out = std::move(drawn.tokens);
        }
      } catch (const std::exception&) {
        job.failed = true;
        out.assign(1, 0);  // placeholder: the sequence is finished right after complete()
        lps.assign(1, std::nullopt);
      }
    }
  });
  for (const auto& job : jobs) {
    const auto seq = plan.chunks[job.chunk].id;
    if (job.failed || job.dead_end)
      (job.dead_end ? dead_ends : broken).push_back(request_id{seq.value()});
    else if (const auto draft = plan.chunks[job.chunk].draft; draft > 0)
      spec_.verified(seq, draft, static_cast<std::uint32_t>(emitted[job.chunk].size() - 1));
  }
  const auto st = spec_.end_step();
  if (st.rows == 0 && st.draft_rows == 0 && st.draft_refused == 0)
    return;
  std::lock_guard<std::mutex> g(mtx_);
  auto& into = load_.speculation;
  into.proposed += st.proposed;
  into.accepted += st.accepted;
  into.rows += st.rows;
  into.emitted += st.emitted;
  into.draft_rows += st.draft_rows;
  into.draft_proposed += st.draft_proposed;
  into.draft_refused += st.draft_refused;
  into.draft_ms += st.draft_ms;
}

} // namespace lf::worker
