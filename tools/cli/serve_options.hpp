#pragma once
/// The cluster flags shared by `lorafleet serve` (and the load tester's self-hosted mode):
/// model, adapters, workers, the worker and router settings, endpoints, keys.

#include <set>
#include <string>

#include "cluster/local_cluster.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"

namespace lf::tools {

/// Reads serve's flags from `a`, checking each: the worker, router, gateway, HTTP and key settings
/// from their tables (worker::worker_keys, router::router_keys, cluster::front_tables: a key's
/// flag is its name with '_' -> '-' unless the row names another: --policy is placement, --listen
/// [gateway] listen, --http [http] listen, --api-key-file [auth] key_file; settings_help lists
/// them; cluster::check_front holds the rules between the last three), then
///   --model DIR --adapters DIR --workers N
///   --curve-secret-key K --curve-public-key K
/// Defaults beside the tables': dtype and kv_dtype f32 on a GPU device, max_inflight_per_worker
/// twice max_seqs, adapter_roots the adapter directory. `adapter_dir_flag` names the
/// adapter-directory flag: "adapters" for serve, "adapter-dir" for `loadtest --self-host`, whose
/// --adapters is the request mix.
cluster::cluster_settings cluster_settings_from(args& a, const std::string& adapter_dir_flag = "adapters");

/// The worker part alone (--model, --adapters, --workers into `workers`, the worker keys'
/// flags), checked (worker::check_settings), threads resolved for `workers` per process: what
/// serve and `node --join` share.
worker::worker_settings worker_settings_from(args& a, const std::string& adapter_dir_flag, std::uint32_t& workers);

/// The settings' flags that take no value (--no-prefix-cache): pass them to args with the
/// command's own.
std::set<std::string> setting_switches();

/// --help's lists of the worker settings' flags and, `with_router`, the router's and the
/// gateways' ([gateway], [http], [auth]): flag, value, doc, range and default, from the tables.
std::string settings_help(bool with_router);

} // namespace lf::tools
