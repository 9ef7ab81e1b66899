// The adapter registry's log: versions assigned by add and update, removes that refuse new
// requests while in-flight versions keep their files, names that pass through unregistered,
// replay of the same log into a fresh copy (what a joining worker and a restarted router do).

#include <catch2/catch.hpp>

#include "cache/adapter_registry.hpp"

using namespace lf::cache;
using lf::serve_errc;

namespace {

adapter_source files(const std::string& path, std::uint64_t hash = 7) {
  adapter_source s;
  s.path = path;
  s.hash = hash;
  s.rank = 8;
  s.targets = {"attn.c_attn"};
  s.bytes = 1000;
  return s;
}

/// Builds and applies the next event; fails the test if it is refused.
adapter_event step(adapter_registry& r, adapter_op op, const std::string& name, const std::string& path = "") {
  std::string error;
  auto e = r.next(op, name, files(path), 1000, error);
  INFO(error);
  REQUIRE(e);
  REQUIRE(r.apply(*e));
  return *e;
}

} // namespace

TEST_CASE("keys are NAME@V with a positive version", "[adapter_registry]") {
  CHECK(adapter_key("styles/kjv", 3) == "styles/kjv@3");
  auto s = split_adapter_key("styles/kjv@12");
  REQUIRE(s);
  CHECK(s->first == "styles/kjv");
  CHECK(s->second == 12);
  for (auto bad : {"plain", "x@", "@3", "x@0", "x@01", "x@1a", "x@99999999999"})
    CHECK_FALSE(split_adapter_key(bad));
}

TEST_CASE("add and update assign versions and requests resolve to the newest", "[adapter_registry]") {
  adapter_registry r;
  CHECK(step(r, adapter_op::add, "tone", "/a/tone1").version == 1);
  CHECK(r.resolve("tone").key == "tone@1");
  CHECK(step(r, adapter_op::update, "tone", "/a/tone2").version == 2);
  CHECK(r.resolve("tone").key == "tone@2");
  CHECK(r.resolve("tone@1").key == "tone@1");  // older versions stay addressable
  CHECK(r.source("tone@1")->path == "/a/tone1");
  CHECK(r.source("tone@2")->path == "/a/tone2");
  auto none = r.resolve("tone@3");
  CHECK(none.error == serve_errc::unknown_adapter);
  CHECK(none.message == "adapter tone has no version 3 (latest 2)");
  CHECK(r.resolve("").key.empty());
  CHECK(r.resolve("").error == serve_errc::none);
  auto dir = r.resolve("from-directory");  // never registered: the worker's directory decides
  CHECK(dir.key == "from-directory");
  CHECK(dir.error == serve_errc::none);
  CHECK(r.resolve("from-directory@2").error == serve_errc::unknown_adapter);
}

TEST_CASE("operations that do not follow from the state are refused", "[adapter_registry]") {
  adapter_registry r;
  std::string error;
  CHECK_FALSE(r.next(adapter_op::update, "ghost", files("/x"), 0, error));
  CHECK(error == "adapter ghost is not registered");
  step(r, adapter_op::add, "tone", "/a");
  CHECK_FALSE(r.next(adapter_op::add, "tone", files("/b"), 0, error));
  CHECK(error == "adapter tone is registered already (version 1); update it or remove it first");
  step(r, adapter_op::remove, "tone");
  CHECK_FALSE(r.next(adapter_op::remove, "tone", {}, 0, error));
  CHECK(error == "adapter tone was removed");
}

TEST_CASE("a removed name refuses requests and a re-added one never reuses a version",
          "[adapter_registry]") {
  adapter_registry r;
  step(r, adapter_op::add, "tone", "/a1");
  step(r, adapter_op::update, "tone", "/a2");
  auto rm = step(r, adapter_op::remove, "tone");
  CHECK(rm.version == 2);
  CHECK(r.retired_by(rm) == std::vector<std::string>{"tone@1", "tone@2"});
  for (auto name : {"tone", "tone@1", "tone@2"}) {
    auto res = r.resolve(name);
    CHECK(res.error == serve_errc::unknown_adapter);
    CHECK(res.message == "adapter tone was removed");
  }
  CHECK(r.source("tone@2") != nullptr);  // requests placed before the remove still load it
  CHECK(step(r, adapter_op::add, "tone", "/b").version == 3);
  CHECK(r.resolve("tone").key == "tone@3");
  CHECK(r.resolve("tone@2").error == serve_errc::unknown_adapter);
  auto list = r.list();
  REQUIRE(list.size() == 1);
  CHECK(list[0].latest == 3);
  CHECK_FALSE(list[0].removed);
  CHECK(list[0].source.path == "/b");
}

TEST_CASE("an update retires the older versions", "[adapter_registry]") {
  adapter_registry r;
  step(r, adapter_op::add, "tone", "/a1");
  CHECK(r.retired_by(r.log().back()).empty());
  auto up = step(r, adapter_op::update, "tone", "/a2");
  CHECK(r.retired_by(up) == std::vector<std::string>{"tone@1"});
}

TEST_CASE("replaying a log gives the same state and skips what it has", "[adapter_registry]") {
  adapter_registry router;
  step(router, adapter_op::add, "a", "/a");
  step(router, adapter_op::add, "b", "/b");
  step(router, adapter_op::update, "a", "/a2");
  step(router, adapter_op::remove, "b");
  adapter_registry worker;
  for (const auto& e : router.since(0))
    CHECK(worker.apply(e));
  for (const auto& e : router.log())  // a rejoin sends the whole log again
    CHECK_FALSE(worker.apply(e));
  CHECK(worker.last_seq() == 4);
  CHECK(worker.resolve("a").key == "a@2");
  CHECK(worker.resolve("b").error == serve_errc::unknown_adapter);
  CHECK(worker.source("a@2")->path == "/a2");
  CHECK(router.since(3).size() == 1);
  // A gap, or an event that contradicts the state, is refused.
  adapter_registry partial;
  CHECK_THROWS_AS(partial.apply(router.log()[1]), std::invalid_argument);
  auto wrong = router.log()[0];
  wrong.version = 5;
  CHECK_THROWS_AS(partial.apply(wrong), std::invalid_argument);
}

TEST_CASE("a copy that is not a prefix of the router's log is stale", "[adapter_registry]") {
  adapter_registry a, b;
  step(a, adapter_op::add, "tone", "/a");
  step(a, adapter_op::update, "tone", "/a2");
  step(b, adapter_op::add, "tone", "/other");  // a router that started over without its log
  CHECK(is_prefix_of({}, a.log()));
  CHECK(is_prefix_of(std::vector<adapter_event>(a.log().begin(), a.log().begin() + 1), a.log()));
  CHECK(is_prefix_of(a.log(), a.log()));
  CHECK_FALSE(is_prefix_of(a.log(), b.log()));  // longer than the router's
  CHECK_FALSE(is_prefix_of(b.log(), a.log()));  // same seq, other files
}
