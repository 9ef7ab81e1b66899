#pragma once
#include <string>

/// Subcommands of the `lorafleet` program. Each takes argc/argv positioned after the subcommand
/// name and returns the process exit code.

namespace lf::text {
class tokenizer;
}

namespace lf::tools {

/// Where the program's models lie: $LORAFLEET_MODELS_DIR, else BIN/../share/lorafleet/models
/// next to an installed program (the container image), else the source tree's models/.
std::string models_dir();

/// Default tokenizer directory (vocab.json + merges.txt under models_dir()).
std::string default_tokenizer_dir();

/// The model directory's own tokenizer (vocab.json, merges.txt), else the repository's.
text::tokenizer tokenizer_for(const std::string& model_dir);

/// The default model and adapter directories (models_dir()'s default/, adapters/); empty strings
/// when absent.
std::string default_model_dir();
std::string default_adapter_dir();

int cmd_generate(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_make_adapter(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
/// `widen-model`: a bigger GPT-2 computing what a small one does (tools/train/widen_model.hpp).
int cmd_widen_model(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_client(int argc, char** argv);
int cmd_status(int argc, char** argv);
int cmd_drain(int argc, char** argv);
/// `lorafleet undrain NODE`: the drained workers of NODE (or NODE/N) take requests again.
int cmd_undrain(int argc, char** argv);
/// `lorafleet adapters`: list, add, update or remove registry entries.
int cmd_adapters(int argc, char** argv);
int cmd_node(int argc, char** argv);
int cmd_launch(int argc, char** argv);
int cmd_keygen(int argc, char** argv);
int cmd_loadtest(int argc, char** argv);
int cmd_train(int argc, char** argv);
int cmd_train_lora(int argc, char** argv);
int cmd_eval_loss(int argc, char** argv);
int cmd_soak(int argc, char** argv);

} // namespace lf::tools
