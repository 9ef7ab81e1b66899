#include "worker/step_driver.hpp"

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

} // namespace lf::worker
