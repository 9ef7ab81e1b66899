#pragma once
/// Files that hold secrets (API keys, the cluster's join token): who may read them, and reading
/// them whole.
///
/// The rule: nobody but the file's owner and group may reach it, nobody but the owner may write
/// it, and its group may read it only when that group is one of this process's own groups. The
/// last clause is Kubernetes' Secret volume: with the pod's fsGroup the kubelet mounts each key
/// as mode 0440, owned by root and the fsGroup, which is the only way a non-root container can
/// read it; a file that some other group of the host may read is refused.

#include <string>
#include <string_view>

namespace lf::secrets {

/// "" when `path` is a regular file that obeys the rule above; otherwise why not, naming the file
/// as `what` ("the API key file") with its mode and the fix.
std::string check_secret_mode(const std::string& path, std::string_view what);

/// The file's bytes, after check_secret_mode; throws std::invalid_argument with the reason.
std::string read_secret_file(const std::string& path, std::string_view what);

} // namespace lf::secrets
