#pragma once
/// How both programs, `lorafleet` and `lorafleet-train`, run a subcommand and report its errors.

#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "tools/common/args.hpp"

namespace lf::tools {

/// Runs `f` (a subcommand) as `lorafleet CMD` and returns its exit code. A bad argument
/// (std::invalid_argument) prints "lorafleet CMD: what" and gives 2; any other exception prints
/// "lorafleet CMD: error: what" and gives 1. Under LF_CHECK_ARGS=1 a command whose arguments
/// passed its checks prints "lorafleet: arguments ok" and gives 0 (args::checkpoint()).
template <class F>
int run_command(const std::string& cmd, F&& f) {
  try {
    return f();
  } catch (const arguments_checked&) {
    std::cout << "lorafleet: arguments ok\n";
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "lorafleet " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lorafleet " << cmd << ": error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace lf::tools
