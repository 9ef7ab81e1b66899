#pragma once
/// The cluster flags shared by `lorafleet serve` (and the load tester's self-hosted mode):
/// model, adapters, workers, threads, KV budget, batching, placement, limits, endpoint.

#include "cluster/local_cluster.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace lf::tools {

/// Reads the flags below from `a`, checking each:
///   --model DIR --adapters DIR --workers N --listen EP --threads N (per worker)
///   --dtype int8|bf16|f32 --kv-dtype bf16|int8|f32
///   --kv-cache-mb MB --block-size N --max-seqs N --max-batched-tokens N --mode MODE
///   --no-prefix-cache --prefix-cache-isolation tenant|shared --policy P
///   --max-concurrent-loads N --placement-aging-ms MS --load-price-weight W --decode-share F (priced)
///   --queue-limit N --max-inflight-per-worker N
///   --scheduling fcfs|vtc (router queue and workers' waiting queues) --deadline-admission on|off
///   --deadline-margin F (admission keeps predictions under (1 - F) x the deadline)
///   --adapter-cache-mb MB --max-adapters N (resident + loading, per worker)
///   --curve-secret-key K --curve-public-key K
///   --http HOST:PORT (the OpenAI-compatible HTTP gateway) --model-name NAME (its base model)
///   --api-key-file FILE (API keys and roles, core/api_keys.hpp) --metrics-need-key (a switch)
///   --tls-cert FILE --tls-key FILE (HTTPS on --http; both or neither)
/// `adapter_dir_flag` names the adapter-directory flag: "adapters" for serve, "adapter-dir" for
/// `loadtest --self-host`, whose --adapters is the request mix.
cluster::cluster_settings cluster_settings_from(args& a, const std::string& adapter_dir_flag = "adapters");

/// The worker flags of the list above alone (--model ... --max-adapters, --workers into
/// `workers`), checked (worker::check_settings), threads resolved for `workers` per process: what
/// serve and `node --join` share.
worker::worker_settings worker_settings_from(args& a, const std::string& adapter_dir_flag, std::uint32_t& workers);

} // namespace lf::tools
