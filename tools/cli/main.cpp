// The `lorafleet` command: one program, one subcommand per job. The subcommands that run
// libtorch (training, random checkpoints) live in lorafleet-train beside it, which this program
// runs in its place (exec), so serving never links or loads libtorch.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "tools/cli/commands.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "tools/cli/run_command.hpp"
#include "tools/cli/serve_options.hpp"

namespace {

const char* usage = R"(usage: lorafleet <command> [options]

commands:
  serve       [--model DIR] [--adapters DIR] [--workers N]
              [--curve-secret-key Z85 --curve-public-key Z85]   (CURVE on the gateway)
              [--drain-timeout S] [--ready-file PATH] [--log-level debug|info|warn|error|off]
              [--log-format text|json]
              [worker, router, gateway, HTTP and key settings: --max-seqs N, --policy P,
               --listen EP, --http HOST:PORT, --tls-cert PEM --tls-key PEM, --api-key-file FILE,
               --metrics-need-key, ... (`serve --help` lists them)]
              router + workers + ZeroMQ gateway in one process (default model: models/default);
              --http adds the OpenAI-compatible API, /metrics, /health, /ready and the dashboard;
              logs one line per finished request at info level (stderr)
  client      [--endpoint EP] (--prompt TEXT | --user TEXT [--system TEXT]) [--adapter NAME]
              [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R]
              [--seed S] [--stop STR ...] [--ignore-eos] [--logit-bias ID=BIAS ...] [--no-stream]
              [--timeout S] [--tenant NAME] [--deadline-ms MS] [--ttft-ms MS]
              [--json-object | --json-schema SCHEMA | --regex RE | --choice '["a","b"]' |
               --grammar GBNF]   (structured output, docs/http.md)
              [--server-key KEY|FILE] [--client-key DIR/NAME]   (CURVE: keygen's pair)
              send one request and stream the answer
  status      [ENDPOINT] [--server-key KEY|FILE] [--client-key DIR/NAME]
              the cluster's workers, load and counters
  adapters    [list | add NAME PATH | update NAME PATH | remove NAME] [--endpoint EP]
              [--server-key KEY|FILE] [--client-key DIR/NAME] [--timeout S]
              the cluster's adapter registry: add checks PATH (inside the router's adapter
              roots) on a worker, then every worker can serve NAME (newest version) or NAME@V;
              update makes a new version (running requests keep theirs); remove refuses NAME
              from then on and frees it once its last request ends
  drain       NODE [--endpoint EP] [--server-key KEY|FILE] [--client-key DIR/NAME]
              place nothing more on NODE's workers (or on worker NODE/N) and move their running
              requests to other workers, which continue them exactly (with their K/V, unless
              the router's drain_kv is "recompute"); the node may then leave
  undrain     NODE [--endpoint EP] [--server-key KEY|FILE] [--client-key DIR/NAME]
              undo a drain: NODE's drained workers (or worker NODE/N) take requests again
  node        CONFIG --name NODE [--drain-timeout S] [--ready-file PATH] [--probe-listen HOST:PORT]
              [--log-level L] [--log-format text|json]
              run one node of a cluster config (docs/cluster.md): the router node (router +
              gateway + its workers), a router replica or a gateway node of a split front
              (router_nodes, gateway_nodes), or a worker node (connects to every router, reconnects)
              --join HOST:PORT[,HOST:PORT...] [--name NAME ($HOSTNAME)] [--model DIR --adapters DIR
              --workers N, serve's worker settings: --threads N --max-seqs N ... (`node --help`)]
              [--probe-listen HOST:PORT] [--join-token-file F] [--tls-ca F --tls-cert F --tls-key F]
              [--heartbeat-interval-ms N] [--heartbeat-timeout-ms N] [--drain-timeout S]
              a worker node that joins a running cluster at its router's CAF port (a DNS name may
              resolve late: retried with backoff); --probe-listen serves /health, /ready and
              /metrics (vllm:* gauges); SIGTERM: /ready 503, drain (requests move), exit 0.
              LF_CHECK_ARGS=1 in the environment: check the arguments and exit (any command)
  launch      CONFIG [--dry-run] [--ready-file PATH] [--log-level L] [--log-format text|json]
              start the config's local nodes as processes (passing the log flags on),
              wait for every worker, print the client endpoint; Ctrl-C stops them all
  soak        [CONFIG (default cluster-configs/three-nodes.toml)] [--requests N (2000)]
              [--clients N (128)] [--long (20000 requests, 256 clients)] [--seed S]
              [--threads N (client threads)] [--no-faults] [--no-drain] [--controls N]
              [--rss-growth-pct P (25)] [--rss-growth-mib M (64)] [--work-dir DIR]
              [--log-level L (the cluster's; warn)] [--timeout S] [--stall-timeout S (120)]
              launch the config, run mixed requests (adapters, greedy / seeded / unseeded,
              cancels, invalid ones) while a worker node is killed, another stopped past the
              heartbeat timeout and one drained; check every reply, replay resumed requests on
              the calm cluster, KV blocks and RSS; print a summary; exit 1 on any violation
  keygen      --out DIR [--name NAME] [--force]   write a CURVE key pair NAME.public / NAME.secret
  loadtest    ENDPOINT | http://HOST:PORT [--model-name NAME] | --self-host [serve flags;
              --adapter-dir DIR for the server's adapters; --via zmq|http: which gateway;
              the server logs at --log-level warn unless given]
              [--arrival closed|poisson] [--concurrency N] [--seed S] [--temperature T]
              [--rate R --burstiness B] [--sweep-concurrency 1,2,4 | --sweep-rate 1,2,4]
              [--requests N] [--duration S] [--input N|LO-HI] [--output N|LO-HI] [--prompts FILE]
              [--per-client N (sweeps)] [--long-every K --long-output N]
              [--adapters a,b | N (names a00.., --adapter-prefix P)] [--skew F | zipf:S]
              [--chat] [--no-ignore-eos] [--goodput-ttft-ms X
              --goodput-tpot-ms X --goodput-e2e-ms X] [--out PREFIX] [--timeout S]
              [--tenants a:10,b:1 (load shares: concurrency, rate and requests split by them)
              --service-weights 1,2] [--deadline-ms MS --ttft-ms MS (on every request)]
              [--workload chat --conversations N --turns N --group-size N (per system prompt)
              --system N|LO-HI --user N|LO-HI --think-s S (--rate: conversations/s, Poisson)]
              measure throughput, TTFT/TPOT/ITL/E2E percentiles, goodput; write JSON, CSV, SVG;
              with --tenants each tenant's service, the largest gap and Jain's index (and
              PREFIX-tenants.svg); with a deadline the share of tokens spent on timeouts;
              an http:// endpoint is driven through the OpenAI API (any compatible server)
  generate    [--model DIR] --prompt TEXT [--prompt TEXT ...] [--max-tokens N] [--temperature T]
              [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--stop STR ...]
              [--ignore-eos] [--logit-bias ID=BIAS ...] [--no-kv-cache] [--threads N] [--dtype int8|int4|bf16|f32]
              [--kv-dtype bf16|int8|f32] [--adapter DIR|NAME|- ...] [--adapters ROOT] [--quiet]
              generate a completion (several --prompt: served together by the continuous
              batching loop; with --no-kv-cache one batch that recomputes every token) and
              print timings;
              --adapter once for all prompts or once per prompt (- = base model), a directory or
              with --adapters a name under ROOT (default model and adapters: models/)
  tokenize    --model DIR [--decode]   UTF-8 text on stdin -> JSON token ids (or the reverse)
  make-adapter --base DIR --out DIR [--rank R --alpha A --targets c_attn,c_proj,c_fc,mlp.c_proj
              --seed S --init-std X --dtype f32|f16|bf16 --rslora]
              write a random PEFT LoRA adapter for the base model in DIR
  make-model  --out DIR [--layers N --heads N --embd N --context N --seed S --dtype f32|f16|bf16
              --init-std X --prefix]   write a random GPT-2 checkpoint with the tokenizer files
  widen-model --from DIR --out DIR [--layers N --embd N --context N --noise SIGMA --seed S]
              a bigger GPT-2 computing exactly what DIR's does (tiled activations, identity
              layers); --noise perturbs it (relative to each tensor's std) so it disagrees
              sometimes: a speculative-decoding target for DIR as its draft
  train       --corpus FILE[,FILE] --out DIR [--layers N --heads N --embd N --context N --steps N
              --batch N --micro-batch N --lr X --warmup N --val-fraction F --mix-power P
              --eval-every N --eval-tokens N --dropout P --seed S --threads N --dtype bf16|f32
              --save-dtype f32|f16|bf16 --resume --stop-after N]
              pretrain a GPT-2 on text (AdamW, warmup + cosine, held-out split, checkpoints)
  train-lora  --base DIR --corpus FILE --out DIR [--rank R --alpha A --targets c_attn,c_proj,c_fc
              --steps N --lr X ... as train]   train a PEFT LoRA adapter on a frozen base model
  eval-loss   --model DIR [--adapter DIR] --corpus FILE[,FILE] [--val-fraction F --context N
              --eval-tokens N --dtype f32|bf16]   held-out loss per corpus file, split as train does
)";

/// The lines of `usage` for one command (its line and the deeper-indented ones after it); empty
/// when the command is not listed.
std::string command_usage(const std::string& cmd) {
  std::istringstream in(usage);
  std::string out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    const bool head = line.rfind("  " + cmd + " ", 0) == 0 || line == "  " + cmd;
    const bool deeper = line.rfind("   ", 0) == 0;
    if (head || (inside && deeper)) {
      out += line + "\n";
      inside = true;
    } else {
      inside = false;
    }
  }
  return out.empty() ? std::string{} : "usage: lorafleet " + cmd + " [options]\n" + out;
}

/// The subcommands of lorafleet-train.
bool torch_command(const std::string& cmd) {
  return cmd == "train" || cmd == "train-lora" || cmd == "eval-loss" || cmd == "make-model" || cmd == "widen-model";
}

/// Replaces this process with lorafleet-train (same arguments); returns only if that fails.
int run_in_train_program(const std::string& cmd, char** argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    self = fs::absolute(argv[0], ec);
  const auto target = self.parent_path() / "lorafleet-train";
  execv(target.c_str(), argv);
  const int err = errno;
  std::cerr << "lorafleet " << cmd << ": error: this command runs in " << target.string()
            << " (the commands that need libtorch: train, train-lora, eval-loss, make-model, widen-model), which "
            << (err == ENOENT ? std::string("is not built") : "cannot run: " + std::string(std::strerror(err)))
            << "; `./setup.sh build` installs libtorch-dev and builds it\n";
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << usage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  // `lorafleet CMD --help` or `lorafleet CMD ... --help` (a "--help" in between may be a value).
  for (const char* h : {static_cast<const char*>(argc > 2 ? argv[2] : ""), static_cast<const char*>(argv[argc - 1])})
    if (argc > 2 && (!std::strcmp(h, "--help") || !std::strcmp(h, "-h"))) {
      const auto text = command_usage(cmd);
      if (text.empty()) {
        std::cerr << "lorafleet: unknown command '" << cmd << "'\n" << usage;
        return 2;
      }
      std::cout << text;
      if (cmd == "serve" || cmd == "node")  // node: --join's worker flags
        std::cout << lf::tools::settings_help(cmd == "serve");
      return 0;
    }
  if (torch_command(cmd))
    return run_in_train_program(cmd, argv);
  // A kernel table named by mistake is refused before anything runs (exit 2, as a bad flag).
  if (auto refusal = lf::kernels::lf_isa_refusal()) {
    std::cerr << "lorafleet: " << *refusal << "\n";
    return 2;
  }
  using lf::tools::run_command;
  const auto run = [&](int (*f)(int, char**)) { return run_command(cmd, [&] { return f(argc, argv); }); };
  if (cmd == "generate")
    return run(lf::tools::cmd_generate);
  if (cmd == "tokenize")
    return run(lf::tools::cmd_tokenize);
  if (cmd == "make-adapter")
    return run(lf::tools::cmd_make_adapter);
  if (cmd == "serve")
    return run(lf::tools::cmd_serve);
  if (cmd == "client")
    return run(lf::tools::cmd_client);
  if (cmd == "status")
    return run(lf::tools::cmd_status);
  if (cmd == "adapters")
    return run(lf::tools::cmd_adapters);
  if (cmd == "drain")
    return run(lf::tools::cmd_drain);
  if (cmd == "undrain")
    return run(lf::tools::cmd_undrain);
  if (cmd == "node")
    return run(lf::tools::cmd_node);
  if (cmd == "launch")
    return run(lf::tools::cmd_launch);
  if (cmd == "soak")
    return run(lf::tools::cmd_soak);
  if (cmd == "keygen")
    return run(lf::tools::cmd_keygen);
  if (cmd == "loadtest")
    return run(lf::tools::cmd_loadtest);
  std::cerr << "lorafleet: unknown command '" << cmd << "'\n" << usage;
  return 2;
}
