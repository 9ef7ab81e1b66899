#include "tools/soak/fault_sequence.hpp"

#include <cmath>

namespace lf::soak {

fault_sequence::fault_sequence(std::vector<fault> faults, std::size_t total_requests, std::uint32_t total_workers,
                               double recovery_limit_s)
    : total_requests_(total_requests), total_workers_(total_workers), recovery_limit_s_(recovery_limit_s) {
  for (auto& f : faults)
    records_.push_back({std::move(f)});
}

std::optional<std::string> fault_sequence::stopped_node() const {
  if (current_ < records_.size() && phase_ == phase::holding)
    return records_[current_].f.node;
  return std::nullopt;
}

std::optional<fault_step> fault_sequence::next(double now_s, std::size_t ended, std::size_t live,
                                               std::optional<std::uint32_t> workers) {
  if (finished())
    return std::nullopt;
  auto& r = records_[current_];
  switch (phase_) {
    case phase::waiting: {
      const auto due = static_cast<std::size_t>(std::ceil(r.f.at * static_cast<double>(total_requests_)));
      if (ended < due || !workers || *workers < total_workers_)
        return std::nullopt;
      r.fired_s = now_s;
      r.ended_at_fire = ended;
      r.live_at_fire = live;
      phase_ = r.f.kind == fault_kind::stop ? phase::holding : phase::recovering;
      return fault_step{fault_step::action::fire, &r.f};
    }
    case phase::holding:
      if (workers && *workers < total_workers_)
        r.saw_drop = true;
      if (now_s < r.fired_s + std::chrono::duration<double>(r.f.hold).count())
        return std::nullopt;
      r.resumed_s = now_s;
      phase_ = phase::recovering;
      return fault_step{fault_step::action::resume, &r.f};
    case phase::recovering: {
      if (workers && *workers < total_workers_)
        r.saw_drop = true;
      // A router replica's loss shows in no worker count (the other replica answers): it is
      // back after its hold.
      const bool waited = r.f.kind == fault_kind::kill_router
                          && now_s >= r.fired_s + std::chrono::duration<double>(r.f.hold).count();
      const bool back = workers && *workers >= total_workers_
                        && (r.saw_drop || r.f.kind == fault_kind::drain || waited);
      if (back) {
        r.recovered_s = now_s;
        ++current_;
        phase_ = phase::waiting;
      } else if (now_s - r.fired_s > recovery_limit_s_) {
        failed_ = true;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

} // namespace lf::soak
