#include "router/availability.hpp"

namespace lf::router {

availability::availability(std::chrono::milliseconds max_wait, clock::time_point start)
  : max_wait_(max_wait), since_(start) {}

bool availability::update(std::uint32_t accepting, clock::time_point now) {
  if (accepting > 0) {
    seen_workers_ = true;
    since_.reset();
    return false;
  }
  if (since_)
    return false;  // out already: the outage goes on, its clock keeps running
  since_ = now;
  ++outages_;
  return true;
}

} // namespace lf::router
