#pragma once
/// A temporary directory with a stand-in model directory (the loader only checks that the files
/// exist), and helpers to load a config text written there and to look at its issues.

#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cluster/cluster_config.hpp"
#include "tests/support/temp_dir.hpp"

namespace lf::test {

/// A minimal valid config: one router node with two workers, model at ./model.
inline const char* minimal_config = R"(
[cluster]
router_node = "head"
model_dir = "model"

[[nodes]]
name = "head"
host = "127.0.0.1"
port = 4200
[nodes.workers]
count = 2
)";

struct config_dir {
  temp_dir dir;

  config_dir() {
    std::filesystem::create_directories(dir.path() / "model");
    for (const char* f : {"config.json", "vocab.json", "merges.txt"})
      std::ofstream(dir.path() / "model" / f) << "{}";
  }

  /// Writes `text` as `name` in the directory and returns its path.
  std::string write(const std::string& text, const std::string& name = "cluster.toml") const {
    std::ofstream(dir.path() / name) << text;
    return (dir.path() / name).string();
  }

  cluster::cluster_config load(const std::string& text, cluster::load_options o = {}) const {
    return cluster::load_cluster_config(write(text), o);
  }

  /// The issues of a config that must fail to load.
  std::vector<cluster::config_issue> issues(const std::string& text, cluster::load_options o = {}) const {
    try {
      load(text, o);
    } catch (const cluster::config_error& e) {
      return e.issues();
    }
    FAIL("the config loaded without errors:\n" << text);
    return {};
  }

  /// The one issue of a config that has exactly one problem.
  cluster::config_issue issue(const std::string& text, cluster::load_options o = {}) const {
    auto all = issues(text, o);
    INFO([&] {
      std::string s;
      for (auto& i : all)
        s += to_string(i) + "\n";
      return s;
    }());
    REQUIRE(all.size() == 1);
    return all[0];
  }
};

} // namespace lf::test
