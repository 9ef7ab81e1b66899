# Shared by node_join.sh and node_join_tls.sh (sourced): a temporary folder and the node
# processes started into `pids`, both gone at exit; free loopback ports; HTTP status polling;
# failing with every node's log.
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -n 30 "$f"; done; exit 1; }
code() { curl -s -o /dev/null -w '%{http_code}' "$1" || true; }
until_code() {  # URL CODE SECONDS
  for _ in $(seq 1 $(($3 * 10))); do [ "$(code "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}
