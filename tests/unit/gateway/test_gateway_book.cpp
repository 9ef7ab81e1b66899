// The gateway's bookkeeping (gateway/zmq/gateway_book.hpp): connection + client id <-> gateway-wide id,
// duplicates, the per-connection limit, and dropping a connection.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "gateway/zmq/gateway_book.hpp"

using namespace lf::gateway;
using lf::proto::client_request_id;

namespace {

gateway_id added(gateway_book& b, const std::string& conn, std::uint64_t id, bool stream = true) {
  auto r = b.add(conn, client_request_id{id}, stream);
  REQUIRE(std::holds_alternative<gateway_id>(r));
  return std::get<gateway_id>(r);
}

add_refusal refused(gateway_book& b, const std::string& conn, std::uint64_t id) {
  auto r = b.add(conn, client_request_id{id}, true);
  REQUIRE(std::holds_alternative<add_refusal>(r));
  return std::get<add_refusal>(r);
}

} // namespace

TEST_CASE("clients choose ids per connection, the book gives each request its own", "[gateway_book]") {
  gateway_book b;
  auto a1 = added(b, "conn-a", 1);
  auto b1 = added(b, "conn-b", 1, false);  // the same client id on another connection
  CHECK(a1 != b1);
  REQUIRE(b.find(a1));
  CHECK(b.find(a1)->identity == "conn-a");
  CHECK(b.find(a1)->client_id == client_request_id{1});
  CHECK(b.find(a1)->stream);
  CHECK_FALSE(b.find(b1)->stream);
  CHECK_FALSE(b.find(a1)->accepted_sent);
  CHECK(b.lookup("conn-a", client_request_id{1}) == a1);
  CHECK(b.lookup("conn-b", client_request_id{1}) == b1);
  CHECK_FALSE(b.lookup("conn-a", client_request_id{2}));
  CHECK_FALSE(b.lookup("conn-c", client_request_id{1}));
  CHECK(b.live() == 2);
  CHECK(b.live_for("conn-a") == 1);
}

TEST_CASE("a live duplicate is refused, an ended id can be used again", "[gateway_book]") {
  gateway_book b;
  auto g = added(b, "c", 7);
  CHECK(refused(b, "c", 7) == add_refusal::duplicate_id);
  b.end(g);
  CHECK_FALSE(b.find(g));
  CHECK(b.live() == 0);
  CHECK(b.live_for("c") == 0);
  auto again = added(b, "c", 7);
  CHECK(again != g);  // gateway ids are never reused
  b.end(g);           // ending an unknown id is harmless
  CHECK(b.find(again));
}

TEST_CASE("the per-connection limit counts live requests of that connection only", "[gateway_book]") {
  gateway_book b(2);
  auto g1 = added(b, "c", 1);
  added(b, "c", 2);
  CHECK(refused(b, "c", 3) == add_refusal::too_many_requests);
  added(b, "other", 3);  // another connection is not affected
  b.end(g1);
  added(b, "c", 3);
  CHECK(b.live_for("c") == 2);
}

TEST_CASE("dropping a connection returns and forgets exactly its requests", "[gateway_book]") {
  gateway_book b;
  auto a1 = added(b, "a", 1);
  auto a2 = added(b, "a", 2);
  auto b1 = added(b, "b", 1);
  auto gone = b.drop_connection("a");
  CHECK(std::set<gateway_id>(gone.begin(), gone.end()) == std::set<gateway_id>{a1, a2});
  CHECK_FALSE(b.find(a1));
  CHECK_FALSE(b.lookup("a", client_request_id{2}));
  CHECK(b.find(b1));
  CHECK(b.all() == std::vector<gateway_id>{b1});
  CHECK(b.drop_connection("a").empty());
  CHECK(b.drop_connection("never-seen").empty());
}

TEST_CASE("random adds, ends and drops keep every index consistent", "[gateway_book]") {
  gateway_book b(8);
  std::mt19937_64 rng(5);
  std::map<gateway_id, std::pair<std::string, std::uint64_t>> model;  // what should be live
  const std::vector<std::string> conns = {"a", "b", "c"};
  for (int step = 0; step < 5000; ++step) {
    const auto& conn = conns[rng() % conns.size()];
    const auto op = rng() % 10;
    if (op < 6) {
      const std::uint64_t id = rng() % 12;
      const bool dup = b.lookup(conn, client_request_id{id}).has_value();
      const auto live = b.live_for(conn);
      auto r = b.add(conn, client_request_id{id}, true);
      if (dup) {
        CHECK(std::get<add_refusal>(r) == add_refusal::duplicate_id);
      } else if (live >= 8) {
        CHECK(std::get<add_refusal>(r) == add_refusal::too_many_requests);
      } else {
        auto g = std::get<gateway_id>(r);
        CHECK(model.emplace(g, std::make_pair(conn, id)).second);
      }
    } else if (op < 9 && !model.empty()) {
      auto it = std::next(model.begin(), static_cast<long>(rng() % model.size()));
      b.end(it->first);
      model.erase(it);
    } else {
      for (auto g : b.drop_connection(conn)) {
        REQUIRE(model.count(g));
        CHECK(model[g].first == conn);
        model.erase(g);
      }
    }
    REQUIRE(b.live() == model.size());
  }
  std::size_t per_conn = 0;
  for (const auto& c : conns)
    per_conn += b.live_for(c);
  CHECK(per_conn == model.size());
  for (const auto& [g, who] : model) {
    REQUIRE(b.find(g));
    CHECK(b.find(g)->identity == who.first);
    CHECK(b.lookup(who.first, client_request_id{who.second}) == g);
  }
}
