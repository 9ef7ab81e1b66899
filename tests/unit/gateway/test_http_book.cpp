// The HTTP gateway's bookkeeping (gateway/openai/http_book.hpp): an OpenAI request's choices get
// gateway-wide ids, events find their request and index, finishing a request names the choices
// still to cancel.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gateway/openai/http_book.hpp"

using namespace lf::gateway;
using lf::actors::sink_request_id;

namespace http_book_test {

http_entry streaming() {
  http_entry e;
  e.stream = true;
  e.headers = {{"x-ratelimit-limit-requests", "10"}};
  return e;
}

} // namespace http_book_test

using namespace http_book_test;

TEST_CASE("each choice gets its own gateway id, events find the request and the index", "[http_book]") {
  http_book b;
  const auto a = b.add(7, streaming(), 3);  // request 7: 3 choices
  const auto c = b.add(9, http_entry{}, 1);
  REQUIRE(a.size() == 3);
  REQUIRE(c.size() == 1);
  CHECK(std::find(a.begin(), a.end(), c[0]) == a.end());
  CHECK(a[0] != a[1]);
  CHECK(b.live() == 2);
  CHECK(b.live_choices() == 4);
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto at = b.lookup(a[i]);
    REQUIRE(at);
    CHECK(at->hid == 7);
    CHECK(at->choice == i);
    CHECK(at->entry == b.find(7));
    CHECK(at->entry->stream);
    CHECK(at->entry->choices == a);
    CHECK(at->entry->headers.size() == 1);
  }
  CHECK(b.lookup(c[0])->hid == 9);
  CHECK_FALSE(b.lookup(sink_request_id{999}));
}

TEST_CASE("an ended choice finds nothing, finishing returns only the choices still live", "[http_book]") {
  http_book b;
  const auto a = b.add(1, streaming(), 3);
  CHECK(b.end_choice(a[1]));
  CHECK_FALSE(b.end_choice(a[1]));  // once
  CHECK_FALSE(b.lookup(a[1]));
  CHECK(b.lookup(a[2]));  // the request lives on until finished
  CHECK(b.finish(1) == std::vector<sink_request_id>{a[0], a[2]});
  CHECK(b.live() == 0);
  CHECK(b.live_choices() == 0);
  CHECK(b.find(1) == nullptr);
  CHECK_FALSE(b.lookup(a[0]));
  CHECK(b.finish(1).empty());  // unknown: nothing
}

TEST_CASE("all lists the requests in flight (to fail them on a drain)", "[http_book]") {
  http_book b;
  b.add(4, http_entry{}, 1);
  b.add(5, http_entry{}, 2);
  b.add(6, http_entry{}, 1);
  b.finish(5);
  auto all = b.all();
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<std::uint64_t>{4, 6});
  // A request whose every choice ended (all done) is still there until finished.
  const auto g = b.find(4)->choices[0];
  b.end_choice(g);
  CHECK(b.find(4) != nullptr);
  CHECK(b.finish(4).empty());
}
