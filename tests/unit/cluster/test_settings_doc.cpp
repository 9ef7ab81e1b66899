// docs/cluster.md's key tables against the settings tables: every file key of worker_keys is a row
// of "[nodes.workers]", every one of router_keys a row of "[router]", and the front keys rows of
// "[gateway]", "[http]" and "[auth]" (cluster/front_keys.hpp), with the same type and
// range (and default, for numbers, booleans and choices). A key added to a table without its line
// in the doc, or a range changed on one side, fails here.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cluster/front_keys.hpp"
#include "router/router_config.hpp"
#include "worker/worker_settings.hpp"

using namespace lf;

namespace test_settings_doc {

/// One row of a doc table: its type and default columns.
struct doc_row {
  std::string type, shown;
};

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

/// The cells of a markdown table line ("| a | b |" -> a, b); a '|' inside backticks is text.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool code = false;
  for (std::size_t i = 1; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '`')
      code = !code;
    if (c == '|' && !code) {
      out.push_back(trimmed(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return out;
}

/// The rows of the key table under the heading that starts with `heading`, by key (a row naming
/// several keys, "`a`, `b`", is each of them).
std::map<std::string, doc_row> doc_table(const std::string& heading) {
  std::ifstream in(std::string(LF_SOURCE_DIR) + "/docs/cluster.md");
  REQUIRE(in);
  std::map<std::string, doc_row> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      if (inside)
        break;
      inside = trimmed(line.substr(line.find_first_not_of('#'))).rfind(heading, 0) == 0;
      continue;
    }
    if (!inside || line.rfind("| `", 0) != 0)
      continue;
    const auto c = cells(line);
    if (c.size() < 3)
      continue;
    std::stringstream keys(c[0]);
    for (std::string k; std::getline(keys, k, ',');) {
      k = trimmed(k);
      if (k.size() > 2 && k.front() == '`' && k.back() == '`')
        rows[k.substr(1, k.size() - 2)] = {c[1], c[2]};
    }
  }
  return rows;
}

/// The default column for `k` with defaults `d`: numbers and booleans as they are, a choice in
/// backticks; "" for strings and paths (the doc says what their absence means).
template <class S>
std::string doc_default(const settings::setting_key<S>& k, const S& d) {
  switch (k.type) {
    case settings::key_type::integer:
    case settings::key_type::number:
    case settings::key_type::boolean: return settings::value_text(k.get(d));
    case settings::key_type::choice: return "`" + settings::value_text(k.get(d)) + "`";
    default: return {};
  }
}

template <class S>
void check_table(const std::string& heading, const std::vector<settings::setting_key<S>>& keys, const S& defaults) {
  const auto rows = doc_table(heading);
  REQUIRE_FALSE(rows.empty());
  for (const auto& k : keys) {
    if (!k.in_file())
      continue;
    INFO("docs/cluster.md, " << heading << ": key `" << k.name << "`");
    const auto it = rows.find(k.name);
    REQUIRE(it != rows.end());
    CHECK(it->second.type == settings::doc_type(k));
    if (const auto want = doc_default(k, defaults); !want.empty())
      CHECK(it->second.shown == want);
  }
}

} // namespace test_settings_doc

using namespace test_settings_doc;

TEST_CASE("docs/cluster.md lists every worker key with its range and default", "[cluster][settings][docs]") {
  check_table("`[nodes.workers]`", worker::worker_keys(), worker::worker_settings{});
}

TEST_CASE("docs/cluster.md lists every router key with its range and default", "[cluster][settings][docs]") {
  check_table("`[router]`", router::router_keys(), router::configured_defaults());
}

TEST_CASE("docs/cluster.md lists every [gateway], [http] and [auth] key with its type and default", "[cluster][settings][docs]") {
  const cluster::cluster_config defaults;
  check_table("`[gateway]`", cluster::gateway_keys(), defaults);
  check_table("`[http]`", cluster::http_keys(), defaults);
  check_table("`[auth]`", cluster::auth_keys(), defaults);
}

TEST_CASE("the doc table reader finds rows, several keys to a row, and only under its heading", "[cluster][settings][docs]") {
  CHECK(cells("| `a`, `b` | `\"x\"` or `\"y\"` | 1 | text |") == std::vector<std::string>{"`a`, `b`", "`\"x\"` or `\"y\"`", "1", "text"});
  CHECK(cells("| `a|b` | c |") == std::vector<std::string>{"`a|b`", "c"});
  const auto workers = doc_table("`[nodes.workers]`");
  CHECK(workers.count("count") == 1);      // a [nodes.workers] key that is not a worker setting
  CHECK(workers.count("placement") == 0);  // a [router] key
  CHECK(doc_table("no such heading").empty());
  CHECK(doc_table("`[workers]`").empty());  // its heading names `[nodes.workers]` too, but later
}
