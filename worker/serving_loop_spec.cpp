// The serving loop's sampling of a step, with speculative decoding: proposals before the step
// (n-gram lookup over each request's own tokens), verification after it. Why verification keeps
// every request's output exactly what plain decoding gives: worker/speculation.hpp.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>
#include <exception>

#include "worker/engine/sampling/logprobs.hpp"
#include "worker/engine/sampling/sampler.hpp"

namespace lf::worker {

void serving_loop::propose_drafts() {
  const bool use_draft = draft_ && cfg_.method == speculation_method::draft;
  if (draft_)  // a sequence preempted or paused since the last step gives its draft blocks back
    draft_->retain([this](cache::seq_id id) {
      return sched_.contains(id) && !sched_.paused(id) && sched_.phase(id) == seq_phase::decoding;
    });
  // Requests under the automatic rule, and what their proposals would cost and bring.
  std::vector<live_request*> automatic;
  std::vector<draft_want> wants;
  std::vector<bool> want_automatic;
  std::uint32_t rows = 0, extra = 0, draft_extra = 0;
  double gain = 0;
  for (auto seq : sched_.running()) {
    if (sched_.phase(seq) != seq_phase::decoding)
      continue;
    ++rows;
    auto& lr = *live_.at(request_id{seq.value()});
    lr.draft.clear();
    const auto choice = lr.req.speculative();
    const auto mode = choice == -1 ? cfg_.speculation : choice == 0 ? speculation_mode::off : speculation_mode::on;
    // A constrained row is not speculated: its proposals would need a mask per position.
    if (mode == speculation_mode::off || lr.guide)
      continue;
    std::size_t k = lr.spec_len.next();
    // Never past max_tokens (the scheduler would cut them; the draft model need not make them).
    const auto most = static_cast<std::size_t>(std::max(0, lr.req.params().max_tokens));
    k = std::min<std::size_t>(k, most > lr.generated.size() + 1 ? most - lr.generated.size() - 1 : 0);
    // Never past the client's credits: every emitted token must be within its allowance.
    if (!lr.credits.unlimited()) {
      const auto room = lr.credits.bound() > lr.generated.size() + 1 ? lr.credits.bound() - lr.generated.size() - 1 : 0;
      k = std::min<std::size_t>(k, room);
    }
    if (k == 0)
      continue;
    std::size_t proposed = k;
    if (use_draft) {
      // The draft model runs below, once the automatic rule has said which rows speculate.
      wants.push_back({seq, &sched_.tokens(seq), static_cast<std::uint32_t>(k)});
      want_automatic.push_back(mode == speculation_mode::automatic);
      if (mode == speculation_mode::automatic)
        draft_extra += static_cast<std::uint32_t>(k);
    } else {
      lr.draft = propose_ngram(sched_.tokens(seq), k, cfg_.ngram);
      proposed = lr.draft.size();
    }
    if (mode == speculation_mode::automatic && proposed > 0) {
      automatic.push_back(&lr);
      extra += static_cast<std::uint32_t>(proposed);
      gain += lr.spec_len.acceptance() * static_cast<double>(proposed);
    }
  }
  if (!automatic.empty()) {
    // The step's size without the proposals: one token per decoding row, plus prefill up to the budget.
    const auto l = sched_.get_load();
    const auto budget = sched_.config().max_batched_tokens;
    const auto tokens = static_cast<std::uint32_t>(std::min<std::uint64_t>(budget, rows + l.waiting_tokens));
    if (!step_cost_.pays(tokens, rows, gain, extra, cfg_.speculation_auto_rows, draft_ms_per_token_ * draft_extra)) {
      for (auto* lr : automatic)
        lr->draft.clear();
      // Nor does the draft model run for them.
      std::vector<draft_want> kept;
      for (std::size_t i = 0; i < wants.size(); ++i)
        if (!want_automatic[i])
          kept.push_back(wants[i]);
      wants.swap(kept);
    }
  }
  if (!wants.empty())
    run_draft_model(wants);
}

void serving_loop::run_draft_model(const std::vector<draft_want>& wants) {
  const auto before = draft_->counters();
  auto proposals = draft_->propose(wants);
  const auto& after = draft_->counters();
  for (std::size_t i = 0; i < wants.size(); ++i) {
    auto& lr = *live_.at(request_id{wants[i].id.value()});
    lr.draft = std::move(proposals[i]);
    if (lr.draft.empty())  // the draft could not serve it: n-gram lookup instead
      lr.draft = propose_ngram(*wants[i].tokens, wants[i].k, cfg_.ngram);
  }
  const auto ms = after.ms - before.ms;
  const auto made = after.proposed - before.proposed;
  if (made > 0) {
    const double per = ms / static_cast<double>(made);
    draft_ms_per_token_ = draft_ms_per_token_ == 0 ? per : 0.9 * draft_ms_per_token_ + 0.1 * per;
  }
  std::lock_guard<std::mutex> g(mtx_);
  load_.speculation.draft_rows += after.rows - before.rows;
  load_.speculation.draft_proposed += made;
  load_.speculation.draft_refused += after.refused - before.refused;
  load_.speculation.draft_ms += ms;
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
    jobs.push_back({i, row, &lr, &sched_.tokens(c.id), p.logprobs ? p.top_logprobs : -1});
    row += 1 + c.draft;
  }
  const auto vocab = engine_.vocab_size();
  engine_.for_rows(jobs.size(), [&](std::size_t b, std::size_t e) {
    thread_local std::vector<float> raw;
    thread_local std::vector<std::int32_t> context;
    for (auto j = b; j < e; ++j) {
      auto& job = jobs[j];
      auto& lr = *job.lr;
      const auto draft = plan.chunks[job.chunk].draft;
      auto& out = emitted[job.chunk];
      auto& lps = logprobs[job.chunk];
      try {
        // Row k samples index g + k, as plain decoding would, after the k proposals before it;
        // proposal k is accepted iff that draw is the proposed token (worker/speculation.hpp).
        for (std::uint32_t k = 0; k <= draft; ++k) {
          auto* logits = engine_.logits(job.row + k);
          const std::vector<std::int32_t>* ctx = job.context;
          if (k > 0) {
            context.assign(job.context->begin(), job.context->end());
            context.insert(context.end(), lr.draft.begin(), lr.draft.begin() + k);
            ctx = &context;
          }
          if (job.logprobs >= 0)
            raw.assign(logits, logits + vocab);  // sample() rewrites the row
          const auto tok =
            lr.guide ? lr.guide->sample(lr.pick, lr.req.params(), logits, vocab, *ctx, lr.generated.size() + k)
                     : lr.pick.sample(logits, vocab, *ctx, lr.generated.size() + k);
          if (tok < 0) {  // the constraint allows no token
            job.dead_end = true;
            out.assign(1, 0);
            lps.assign(1, std::nullopt);
            break;
          }
          out.push_back(tok);
          lps.push_back(job.logprobs >= 0 ? std::optional<token_logprobs>(
                                              engine::compute_logprobs(raw.data(), vocab, tok, job.logprobs))
                                          : std::nullopt);
          if (k == draft || tok != lr.draft[k])
            break;
        }
      } catch (const std::exception&) {
        job.failed = true;
        out.assign(1, 0);  // placeholder: the sequence is finished right after complete()
        lps.assign(1, std::nullopt);
      }
    }
  });
  speculation_stats st;
  for (const auto& job : jobs) {
    if (job.failed || job.dead_end) {
      (job.dead_end ? dead_ends : broken).push_back(request_id{plan.chunks[job.chunk].id.value()});
      continue;
    }
    const auto draft = plan.chunks[job.chunk].draft;
    if (draft == 0)
      continue;
    const auto accepted = static_cast<std::uint32_t>(emitted[job.chunk].size() - 1);
    job.lr->spec_len.update(draft, accepted);
    st.proposed += draft;
    st.accepted += accepted;
    st.rows += 1;
    st.emitted += accepted + 1;
  }
  for (auto& [id, lr] : live_)
    lr->draft.clear();
  if (st.rows == 0)
    return;
  std::lock_guard<std::mutex> g(mtx_);
  load_.speculation.proposed += st.proposed;
  load_.speculation.accepted += st.accepted;
  load_.speculation.rows += st.rows;
  load_.speculation.emitted += st.emitted;
}

} // namespace lf::worker
