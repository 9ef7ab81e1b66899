#include "worker/step_driver.hpp"

#include <exception>

#include "text/text_stream.hpp"
#include "worker/constraint_runner.hpp"
#include "worker/engine/sampling/sampler.hpp"
#include "worker/token_outcome.hpp"

namespace lf::worker {

engine_inputs assemble(const step_plan& plan, const chunk_source& src) {
  engine_inputs in;
  in.chunks.reserve(plan.chunks.size());
  in.verify.reserve(plan.chunks.size());  // never reallocated: chunks point into its elements
  for (const auto& c : plan.chunks) {
    const auto& toks = src.tokens(c.id);
    const std::int32_t* data = toks.data() + c.start;
    if (c.draft > 0) {
      const auto& proposal = src.proposal(c.id);
      auto& v = in.verify.emplace_back(1, toks.back());
      v.insert(v.end(), proposal.begin(), proposal.begin() + c.draft);
      data = v.data();
    }
    in.chunks.push_back({data, c.start, c.count, &src.block_table(c.id), c.samples, src.adapter(c.id),
                         1 + std::int64_t{c.draft}});
  }
  return in;
}

row_draws draw_row(std::uint32_t draft, const std::vector<std::int32_t>& context,
                   const std::vector<std::int32_t>& proposal, const row_draw& draw) {
  row_draws out;
  thread_local std::vector<std::int32_t> extended;
  for (std::uint32_t k = 0; k <= draft; ++k) {
    const std::vector<std::int32_t>* ctx = &context;
    if (k > 0) {
      extended.assign(context.begin(), context.end());
      extended.insert(extended.end(), proposal.begin(), proposal.begin() + k);
      ctx = &extended;
    }
    const auto tok = draw(k, *ctx);
    if (tok < 0) {
      out.dead_end = true;
      break;
    }
    out.tokens.push_back(tok);
    if (k == draft || tok != proposal[k])
      break;
  }
  return out;
}

step_completion split_emitted(const step_plan& plan, const std::vector<std::vector<std::int32_t>>& emitted) {
  step_completion out;
  out.sampled.resize(plan.chunks.size());
  for (std::size_t i = 0; i < plan.chunks.size() && i < emitted.size(); ++i) {
    if (emitted[i].empty())
      continue;
    out.sampled[i] = emitted[i].back();
    if (plan.chunks[i].draft == 0)
      continue;
    if (out.accepted.empty())
      out.accepted.resize(plan.chunks.size());
    out.accepted[i].assign(emitted[i].begin(), emitted[i].end() - 1);
  }
  return out;
}

namespace {

/// A sampling chunk's rows and what they drew.
struct pick_job {
  std::size_t chunk = 0, row = 0;
  step_request r;
  int logprobs = -1;  ///< -1: none; else the alternatives wanted
  row_draws drawn;
  std::vector<std::optional<token_logprobs>> lps;
  bool failed = false;  ///< invalid logits (the sampler threw)
};

/// Draws one job's rows (draw_row): row k after the k proposals before it.
void draw_job(pick_job& job, std::uint32_t draft, const step_logits& logits) {
  thread_local std::vector<float> raw;
  auto& r = job.r;
  try {
    job.drawn = draw_row(draft, *r.context, *r.proposal, [&](std::uint32_t k, const std::vector<std::int32_t>& ctx) {
      auto* row = logits.row(job.row + k);
      if (job.logprobs >= 0)
        raw.assign(row, row + logits.vocab);  // sampling rewrites the row
      const auto index = r.generated->size() + k;
      const auto tok = r.guide ? r.guide->sample(*r.pick, *r.params, row, logits.vocab, ctx, index)
                               : r.pick->sample(row, logits.vocab, ctx, index);
      if (tok >= 0)
        job.lps.push_back(job.logprobs >= 0 ? std::optional<token_logprobs>(engine::compute_logprobs(
                                                raw.data(), logits.vocab, tok, job.logprobs))
                                            : std::nullopt);
      return tok;
    });
  } catch (const std::exception&) {
    job.failed = true;
  }
}

/// Moves a job's request past its drawn tokens, in order, until one ends it.
request_turn settle(pick_job& job, std::uint32_t draft, const step_logits& logits, time_point now) {
  request_turn turn;
  auto& r = job.r;
  turn.id = r.id;
  if (job.failed) {
    turn.end = failure(serve_errc::internal, "the model produced invalid logits (NaN or inf)");
    return turn;
  }
  if (job.drawn.dead_end) {
    turn.end = failure(serve_errc::internal, "the output constraint reached a state that allows no token");
    return turn;
  }
  if (draft > 0) {
    turn.draft = draft;
    turn.accepted = static_cast<std::uint32_t>(job.drawn.tokens.size() - 1);
  }
  for (std::size_t j = 0; j < job.drawn.tokens.size(); ++j) {
    const auto token = job.drawn.tokens[j];
    if (!*r.first_token)
      *r.first_token = now;
    auto [delta, reason, outside] = next_token({*r.stream, *r.generated}, token, *r.params, logits.eos, *logits.tok,
                                               r.guide);
    if (outside) {
      turn.end = failure(serve_errc::internal, "a sampled token is outside the request's constraint");
      break;
    }
    if (!delta.empty() || token != logits.eos || r.params->ignore_eos)
      turn.tokens.push_back({token, std::move(delta), std::move(job.lps[j])});
    if (!reason.empty()) {
      turn.end = finished(std::move(reason));
      break;
    }
  }
  return turn;
}

} // namespace

step_outcome drive_step(const step_plan& plan, const std::function<step_request(cache::seq_id)>& request,
                        const step_logits& logits, time_point now) {
  std::vector<pick_job> jobs;
  std::size_t row = 0;
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const auto& c = plan.chunks[i];
    if (!c.samples)
      continue;
    auto r = request(c.id);
    const int alternatives = r.params->logprobs ? r.params->top_logprobs : -1;
    jobs.push_back({i, row, r, alternatives, {}, {}, false});
    row += 1 + c.draft;
  }
  logits.for_rows(jobs.size(), [&](std::size_t b, std::size_t e) {
    for (auto j = b; j < e; ++j)
      draw_job(jobs[j], plan.chunks[jobs[j].chunk].draft, logits);
  });
  // The scheduler is told every row's draws; a failed row holds one token (it is finished right
  // after complete(), and complete() expects a token from every sampling chunk).
  std::vector<std::vector<std::int32_t>> emitted(plan.chunks.size());
  for (auto& job : jobs)
    emitted[job.chunk] = job.failed || job.drawn.dead_end ? std::vector<std::int32_t>{0} : job.drawn.tokens;
  step_outcome out;
  out.completion = split_emitted(plan, emitted);
  out.turns.reserve(jobs.size());
  for (auto& job : jobs)
    out.turns.push_back(settle(job, plan.chunks[job.chunk].draft, logits, now));
  return out;
}

} // namespace lf::worker
