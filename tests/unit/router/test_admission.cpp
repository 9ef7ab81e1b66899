// The bounded admission queue.
#include <catch2/catch.hpp>

#include "router/admission_queue.hpp"
#include "actors/ids.hpp"

using namespace lf::router;
using lf::actors::route_id;
using lf::actors::worker_id;

TEST_CASE("admission queue: FIFO, bounded, refuses duplicates", "[admission]") {
  admission_queue<route_id> q(3);
  CHECK(q.push(route_id{1}));
  CHECK(q.push(route_id{2}));
  CHECK_FALSE(q.push(route_id{2}));
  CHECK(q.push(route_id{3}));
  CHECK(q.full());
  CHECK_FALSE(q.push(route_id{4}));  // full: the router answers overloaded
  CHECK(q.size() == 3);
  CHECK(q.pop() == route_id{1});
  CHECK(q.push(route_id{4}));
  CHECK(q.pop() == route_id{2});
  CHECK(q.pop() == route_id{3});
  CHECK(q.pop() == route_id{4});
  CHECK_FALSE(q.pop());
  CHECK(q.empty());
}

TEST_CASE("admission queue: push_front ignores the bound, remove works anywhere", "[admission]") {
  admission_queue<route_id> q(2);
  q.push(route_id{10});
  q.push(route_id{11});
  // Taken back from a dead worker: first in line even though the queue is full.
  CHECK(q.push_front(route_id{5}));
  CHECK(q.size() == 3);
  CHECK(q.front() == route_id{5});
  CHECK(q.remove(route_id{10}));  // cancelled while queued
  CHECK_FALSE(q.remove(route_id{10}));
  CHECK_FALSE(q.contains(route_id{10}));
  CHECK(q.pop() == route_id{5});
  CHECK(q.pop() == route_id{11});
}
