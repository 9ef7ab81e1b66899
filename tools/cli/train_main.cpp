// `lorafleet-train`: the subcommands that run libtorch (training, random checkpoints). `lorafleet`
// hands them over to this program, so the serving program never links or loads libtorch; run
// directly it takes the same arguments: `lorafleet-train train --corpus ...`.
#include <cstring>
#include <iostream>
#include <string>

#include "tools/cli/commands.hpp"
#include "tools/cli/run_command.hpp"

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  using lf::tools::run_command;
  if (cmd == "train")
    return run_command(cmd, [&] { return lf::tools::cmd_train(argc, argv); });
  if (cmd == "train-lora")
    return run_command(cmd, [&] { return lf::tools::cmd_train_lora(argc, argv); });
  if (cmd == "eval-loss")
    return run_command(cmd, [&] { return lf::tools::cmd_eval_loss(argc, argv); });
  if (cmd == "make-model")
    return run_command(cmd, [&] { return lf::tools::cmd_make_model(argc, argv); });
  if (cmd == "widen-model")
    return run_command(cmd, [&] { return lf::tools::cmd_widen_model(argc, argv); });
  std::cerr << "usage: lorafleet-train train|train-lora|eval-loss|make-model|widen-model [options]"
               " (see lorafleet --help)\n";
  return 2;
}
