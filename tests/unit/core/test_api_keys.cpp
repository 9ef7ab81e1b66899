// API key files (core/api_keys.hpp): the format, every refusal with its line, the file mode
// check, lookups, constant-time equality, and random malformed lines that never crash.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "core/api_keys.hpp"

using namespace lf::auth;
namespace fs = std::filesystem;

namespace {

const std::string curve_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

/// The message of parse_key_file(text)'s refusal ("" when it parses).
std::string refusal(const std::string& text) {
  try {
    parse_key_file(text, "keys.txt");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("key file: names, roles, keys, tenants, comments and blank lines", "[api_keys]") {
  const auto t = parse_key_file("# the keys\n\n"
                                "alice  user   sk-alice-0123456789abcdef\n"
                                "\tops admin sk-ops-fedcba9876543210abcd  platform   # on call\r\n"
                                "robot admin curve:" + curve_key + "\n",
                                "keys.txt");
  REQUIRE(t.keys().size() == 3);
  CHECK(t.keys()[0].name == "alice");
  CHECK(t.keys()[0].role == role::user);
  CHECK(t.keys()[0].tenant == "alice");  // the name unless the line says
  CHECK(t.keys()[1].role == role::admin);
  CHECK(t.keys()[1].tenant == "platform");
  CHECK(t.keys()[2].curve);
  CHECK(t.keys()[2].key == curve_key);
  CHECK(t.has_secrets());

  CHECK(t.find_secret("sk-alice-0123456789abcdef")->name == "alice");
  CHECK(t.find_secret("sk-ops-fedcba9876543210abcd")->name == "ops");
  CHECK(t.find_secret("sk-alice-0123456789abcdeF") == nullptr);
  CHECK(t.find_secret("sk-alice-0123456789abcde") == nullptr);   // a prefix
  CHECK(t.find_secret("sk-alice-0123456789abcdefg") == nullptr); // longer
  CHECK(t.find_secret("") == nullptr);
  CHECK(t.find_secret(curve_key) == nullptr);  // a CURVE public key is no HTTP secret
  CHECK(t.find_curve(curve_key)->name == "robot");
  CHECK(t.find_curve("sk-alice-0123456789abcdef") == nullptr);
  CHECK(t.find_name("ops")->key == "sk-ops-fedcba9876543210abcd");
  CHECK(t.find_name("nobody") == nullptr);
}

TEST_CASE("key file: each refusal names the file, the line and the reason, never the key", "[api_keys]") {
  CHECK(refusal("alice user\n") == "keys.txt:1: expected NAME ROLE KEY [TENANT] [rpm=N] [tpm=N], got 2 fields");
  CHECK(refusal("a user sk-0123456789abcdef t extra\n").find("got 5 fields") != std::string::npos);
  CHECK(refusal("\n# x\nalice root sk-0123456789abcdef\n") == "keys.txt:3: unknown role \"root\" (user or admin)");
  const auto shorty = refusal("alice user short-key\n");
  CHECK(shorty.find("keys.txt:1: key alice: the key must be at least 16") == 0);
  CHECK(shorty.find("short-key") == std::string::npos);
  CHECK(refusal("a user sk-0123456789abcdef\na admin sk-fedcba9876543210\n")
        == "keys.txt:2: duplicate key name a (a name may have one HTTP key and one curve: key)");
  const auto dup = refusal("a user sk-0123456789abcdef\nb admin sk-0123456789abcdef\n");
  CHECK(dup == "keys.txt:2: key b: the same key is given on an earlier line");
  CHECK(refusal("r user curve:tooshort\n").find("Z85 public key") != std::string::npos);
  CHECK(refusal("a user sk-0123456789abcdef " + std::string(65, 't') + "\n").find("tenant") != std::string::npos);
  // '#' inside a word is no comment (Z85 keys hold it); one that begins a word is.
  const auto hashed = parse_key_file("z admin curve:ab#defghij0123456789abcdefghij012345678# # note\n", "k");
  CHECK(hashed.keys()[0].key == "ab#defghij0123456789abcdefghij012345678#");
  CHECK(refusal("").empty());                 // no keys: a valid, empty table
  CHECK(parse_key_file("# only comments\n", "k").empty());
}

TEST_CASE("key file: a file others, or a group not the process's own, may read is refused with its name and mode",
          "[api_keys]") {
  const auto dir = fs::temp_directory_path() / ("lf-keys-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const auto path = (dir / "keys.txt").string();
  std::ofstream(path) << "alice user sk-alice-0123456789abcdef\n";
  const auto refused = [&](const std::string& want) {
    try {
      load_key_file(path);
      FAIL("the key file was accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == path + ": the API key file has mode " + want + "; chmod 600 " + path);
    }
  };
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  refused("0604, which lets others reach it");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::group_write);
  refused("0660, which lets its group reach it");
  // Kubernetes' Secret volume with the pod's fsGroup: 0440, the group one of the process's own.
  REQUIRE(::chown(path.c_str(), static_cast<uid_t>(-1), ::getegid()) == 0);
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read);
  CHECK(load_key_file(path).find_secret("sk-alice-0123456789abcdef")->name == "alice");
  if (::geteuid() == 0) {  // only root may give the file a group it is not in
    REQUIRE(::chown(path.c_str(), static_cast<uid_t>(-1), 54321) == 0);
    refused("0440, which lets its group reach it");
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  CHECK(load_key_file(path).find_secret("sk-alice-0123456789abcdef")->name == "alice");
  CHECK_THROWS_WITH(load_key_file((dir / "missing").string()), Catch::Contains("cannot read the API key file"));
  fs::remove_all(dir);
}

TEST_CASE("constant_time_equal: equal only for the same bytes and length", "[api_keys]") {
  CHECK(constant_time_equal("", ""));
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
  CHECK_FALSE(constant_time_equal("ab", "abc"));
  CHECK_FALSE(constant_time_equal("", "a"));
  CHECK_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST_CASE("key file: random malformed lines are refused with a line number or parse, never crash", "[api_keys][fuzz]") {
  std::mt19937 rng(29);
  const std::string pieces[] = {"alice", "user", "admin", "root", "sk-0123456789abcdef", "curve:", curve_key,
                                "#", " ", "\t", "\r", "\n", "\0", "\xff\xfe", "x", std::string(70, 'n')};
  int parsed = 0, refused = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 12);
    for (int j = 0; j < n; ++j)
      text += pieces[rng() % (sizeof pieces / sizeof pieces[0])];
    for (int j = static_cast<int>(rng() % 3); j > 0; --j)
      text += static_cast<char>(rng() % 256);
    try {
      const auto t = parse_key_file(text, "f");
      for (const auto& k : t.keys()) {  // whatever parsed obeys the rules
        CHECK_FALSE(k.name.empty());
        CHECK((k.curve ? k.key.size() == 40 : k.key.size() >= min_key_bytes));
      }
      ++parsed;
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).rfind("f:", 0) == 0);  // names the line
      ++refused;
    }
  }
  CHECK(parsed > 0);
  CHECK(refused > 0);
}

TEST_CASE("key file: one name may hold an HTTP key and a curve: key that agree, never two of a kind",
          "[api_keys]") {
  const std::string http = "dora user sk-dora-0123456789abcdef team-d rpm=4\n";
  const auto t = parse_key_file(http + "dora user curve:" + curve_key + " team-d rpm=4\n", "keys.txt");
  REQUIRE(t.keys().size() == 2);
  CHECK(t.find_secret("sk-dora-0123456789abcdef")->name == "dora");
  CHECK(t.find_curve(curve_key)->name == "dora");
  CHECK(t.find_name("dora")->limits.requests_per_minute == 4);
  CHECK(t.find_name("dora")->tenant == "team-d");
  // The curve line first works the same.
  CHECK(parse_key_file("dora user curve:" + curve_key + " team-d rpm=4\n" + http, "k").keys().size() == 2);
  // Two lines must agree on what the name gets: role, tenant, rpm=, tpm=.
  const std::string disagree = "keys.txt:2: key dora: its HTTP and curve: lines must give the same role, tenant, "
                               "rpm= and tpm= (one caller, two doors)";
  CHECK(refusal(http + "dora admin curve:" + curve_key + " team-d rpm=4\n") == disagree);
  CHECK(refusal(http + "dora user curve:" + curve_key + " rpm=4\n") == disagree);   // tenant dora
  CHECK(refusal(http + "dora user curve:" + curve_key + " team-d rpm=5\n") == disagree);
  CHECK(refusal(http + "dora user curve:" + curve_key + " team-d rpm=4 tpm=9\n") == disagree);
  // Never two keys of one kind, nor a third line.
  CHECK(refusal(http + "dora user sk-dora-fedcba9876543210 team-d rpm=4\n").find("keys.txt:2: duplicate key name dora")
        == 0);
  const auto third = refusal(http + "dora user curve:" + curve_key + " team-d rpm=4\n"
                             + "dora user curve:ab#defghij0123456789abcdefghij012345678# team-d rpm=4\n");
  CHECK(third.find("keys.txt:3: duplicate key name dora") == 0);
}
