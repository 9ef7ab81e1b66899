// The credit window's arithmetic: the bound a stream may run to, grants, saturation, raises that
// never lower, unlimited windows.
#include <catch2/catch.hpp>

#include "core/credit_window.hpp"

using lf::credit_window;

TEST_CASE("a window lets exactly its tokens through, grants move the bound", "[credit_window]") {
  credit_window w(4);
  CHECK_FALSE(w.unlimited());
  for (std::uint64_t i = 0; i < 4; ++i)
    CHECK(w.allows(i));
  CHECK_FALSE(w.allows(4));
  CHECK(w.exhausted(4));
  CHECK_FALSE(w.exhausted(3));
  CHECK(w.grant(2));
  CHECK(w.bound() == 6);
  CHECK(w.allows(5));
  CHECK(w.exhausted(6));
  CHECK_FALSE(w.grant(0));
  CHECK(w.bound() == 6);
}

TEST_CASE("no window means unlimited: grants change nothing, nothing is ever exhausted", "[credit_window]") {
  credit_window w;
  CHECK(w.unlimited());
  CHECK(credit_window(0).unlimited());
  CHECK_FALSE(w.grant(10));
  CHECK(w.bound() == 0);
  CHECK(w.allows(1'000'000'000ull));
  CHECK_FALSE(w.exhausted(credit_window::max_bound));
  w.raise_to(5);
  CHECK(w.unlimited());
}

TEST_CASE("grants saturate, raises never lower the bound", "[credit_window]") {
  credit_window w(credit_window::max_bound - 3);
  CHECK(w.grant(10));
  CHECK(w.bound() == credit_window::max_bound);
  CHECK_FALSE(w.grant(1));  // already at the top
  credit_window worker(8);  // the worker's copy: the router's bounds arrive, maybe out of order
  worker.raise_to(20);
  worker.raise_to(12);
  CHECK(worker.bound() == 20);
  worker.raise_to(0);
  CHECK(worker.bound() == 20);
}
