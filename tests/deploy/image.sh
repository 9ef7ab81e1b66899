#!/bin/bash
# The runtime image (deploy/image/build.sh) built from BINARY and run as Kubernetes would run it:
# read-only root, no capabilities, no new privileges, user from the image. Checks: the image's
# config (user 10001, entrypoint, ports, labels) and contents (no compiler, no -dev package), a
# /v1/completions request answered with text by the embedded default model (no volume), the
# server's process runs as uid 10001, and SIGTERM (podman stop) drains it to exit 0.
#
# The image is built into a containers/storage of its own in a temporary folder (vfs driver),
# removed at the end with its containers; the root tarballs stay cached in build/image-cache/.
# Exits 77 (ctest: skipped) with "skipped: REASON" where it cannot build or run containers: not
# root, debootstrap/buildah/podman/runc missing and not installable, no Debian mirror, or
# containers refused here.
# Usage: image.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$(readlink -f "$1"); src=$(readlink -f "$2")
py=/usr/bin/python3; [ -x "$py" ] || py=python3
# The mirror this machine's apt uses (as deploy/image/build.sh picks it), unless given.
mirror=${LF_IMAGE_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)}
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print ($2 ~ /^\[/ ? $3 : $2); exit }' /etc/apt/sources.list 2>/dev/null)
skip() { echo "skipped: $*"; exit 77; }
passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $1"; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap and chroot make the image's root)"
need=()
for t in debootstrap buildah podman runc; do command -v "$t" > /dev/null || need+=("$t"); done
if [ "${#need[@]}" -gt 0 ]; then
  command -v apt-get > /dev/null || skip "${need[*]} missing and no apt-get to install them"
  echo "installing ${need[*]} (apt-get)"
  DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends "${need[@]}" \
    > /dev/null 2>&1 || skip "${need[*]} missing and apt-get install failed"
fi
mirror_ok=1
curl -sf -o /dev/null --max-time 15 "$mirror/dists/bookworm/Release" || mirror_ok=0
if [ "$mirror_ok" = 0 ] && ! ls "$src"/build/image-cache/runtime-*.tar > /dev/null 2>&1; then
  skip "no network to the Debian mirror $mirror and no cached root in $src/build/image-cache"
fi

tmp=$(mktemp -d)
store=$tmp/storage
tag=localhost/lorafleet:dev
name=lorafleet-image-test-$$
pm=(podman --root "$store" --runroot "$store/run" --tmpdir "$store/tmp" --storage-driver vfs
    --runtime runc --cgroup-manager cgroupfs --events-backend file)
run_flags=(--network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
cleanup() {
  "${pm[@]}" rm -f -t 0 "$name" > /dev/null 2>&1 || true
  "${pm[@]}" rm -a -f > /dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- build -------------------------------------------------------------------------------------
start=$SECONDS
if ! timeout 480 "$src/deploy/image/build.sh" --binary "$bin" --tag "$tag" --storage-driver vfs \
     --storage-root "$store" --archive "$tmp/lorafleet-oci.tar" > "$tmp/build.log" 2>&1; then
  cat "$tmp/build.log"
  [ "$mirror_ok" = 1 ] || skip "no network to the Debian mirror $mirror and the cached root does not fit this binary"
  fail "deploy/image/build.sh failed"
fi
grep -E '^image: (packages|warning|built|  )' "$tmp/build.log" || true
ok "deploy/image/build.sh built $tag in $((SECONDS - start)) s"

fmt() { "${pm[@]}" image inspect --format "$1" "$tag"; }
[ "$(fmt '{{.Config.User}}')" = 10001:10001 ] || fail "image user is '$(fmt '{{.Config.User}}')', not 10001:10001"
[ "$(fmt '{{json .Config.Entrypoint}}')" = '["/opt/lorafleet/bin/lorafleet"]' ] || fail "entrypoint $(fmt '{{json .Config.Entrypoint}}')"
[ "$(fmt '{{json .Config.Cmd}}')" = '["serve","--http","0.0.0.0:8000","--listen","tcp://0.0.0.0:5555"]' ] \
  || fail "cmd $(fmt '{{json .Config.Cmd}}')"
ports=$(fmt '{{json .Config.ExposedPorts}}')
[[ $ports == *'"8000/tcp"'* && $ports == *'"5555/tcp"'* ]] || fail "exposed ports $ports"
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
[ "$(fmt '{{index .Labels "org.opencontainers.image.revision"}}')" = "$revision" ] || fail "revision label"
[ -n "$(fmt '{{index .Labels "org.opencontainers.image.version"}}')" ] || fail "no version label"
ok "config: user 10001:10001, entrypoint, cmd, ports 8000 and 5555, revision $(echo "$revision" | cut -c1-12)"
ref=$(tar -xOf "$tmp/lorafleet-oci.tar" index.json | "$py" -c \
  'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])')
[ "$ref" = "$tag" ] || fail "the OCI archive names '$ref', not $tag"
ok "OCI archive: $(( ($(stat -c %s "$tmp/lorafleet-oci.tar") + 1048575) / 1048576 )) MiB, names $tag"

# ---- can containers run here? -------------------------------------------------------------------
if ! probe=$("${pm[@]}" run --rm "${run_flags[@]}" --entrypoint /bin/true "$tag" 2>&1); then
  skip "containers do not run here (podman run ... true: $(echo "$probe" | tail -1))"
fi

# No compiler, no development package; the layout the Kubernetes manifests expect.
contents=$("${pm[@]}" run --rm "${run_flags[@]}" --entrypoint /bin/sh "$tag" -c \
  'ls /usr/bin/cc /usr/bin/gcc* /usr/bin/g++* /usr/bin/c++ 2>/dev/null; dpkg-query -W -f="\${Package}\n" | grep -E -- "-dev$|^gcc(-[0-9]+)?$|^g\+\+|^cpp(-[0-9]+)?$|^binutils"; \
   for f in bin/lorafleet share/lorafleet/models/default/model.safetensors share/lorafleet/models/tokenizer/vocab.json; do \
     [ -f /opt/lorafleet/$f ] || echo "missing /opt/lorafleet/$f"; done; \
   ls /opt/lorafleet/share/lorafleet/models/adapters | grep -q . || echo "no adapters"' || true)
[ -z "$contents" ] || fail "image contents: $contents"
ok "contents: no compiler or -dev package; binary, default model, adapters, tokenizer under /opt/lorafleet"

# ---- serve from the image ----------------------------------------------------------------------
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
hport=$(free_port); zport=$(free_port)
models=()
if ! grep -qa LORAFLEET_MODELS_DIR "$bin"; then
  # A binary from before the relocatable model lookup: point it at the image's models.
  m=/opt/lorafleet/share/lorafleet/models
  models=(--model "$m/default" --adapters "$m/adapters")
  echo "note: this binary does not read LORAFLEET_MODELS_DIR; passing ${models[*]}"
fi
# As on Kubernetes: read-only root (no tmpfs either), all capabilities dropped, no new privileges.
"${pm[@]}" run -d --name "$name" "${run_flags[@]}" --read-only --read-only-tmpfs=false --cap-drop ALL \
  --security-opt no-new-privileges "$tag" serve --http "127.0.0.1:$hport" --listen "tcp://127.0.0.1:$zport" \
  --workers 1 --threads 1 "${models[@]}" > /dev/null
base=http://127.0.0.1:$hport
for i in $(seq 1 240); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/ready" || true)" = 200 ] && break
  [ "$("${pm[@]}" inspect --format '{{.State.Running}}' "$name")" = true ] \
    || { "${pm[@]}" logs "$name" 2>&1 | tail -20; fail "the container exited before /ready"; }
  [ "$i" -lt 240 ] || { "${pm[@]}" logs "$name" 2>&1 | tail -20; fail "not ready within 60 s"; }
  sleep 0.25
done
ok "the container serves: /ready is 200 on port $hport"

code=$(curl -s -o "$tmp/completion.json" -w '%{http_code}' "$base/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model": "default", "prompt": "ROMEO:", "max_tokens": 12, "temperature": 0}')
[ "$code" = 200 ] || { cat "$tmp/completion.json"; fail "/v1/completions answered $code"; }
text=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$tmp/completion.json")
[ -n "${text//[[:space:]]/}" ] || fail "/v1/completions gave no text: $(cat "$tmp/completion.json")"
ok "/v1/completions: 200, text $(printf '%q' "$text")"

pid=$("${pm[@]}" inspect --format '{{.State.Pid}}' "$name")
host_uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
inner_uids=$("${pm[@]}" exec "$name" cat /proc/1/status | awk '/^Uid:/ {print $2, $3, $4, $5}')
[ "$host_uids" = "10001 10001 10001 10001" ] && [ "$inner_uids" = "$host_uids" ] \
  || fail "the server runs as uids '$host_uids' (host) / '$inner_uids' (container), not 10001"
ok "the server process runs as uid 10001 (host /proc/$pid/status and the container's /proc/1/status)"

# ---- SIGTERM drains ----------------------------------------------------------------------------
"${pm[@]}" stop -t 40 "$name" > /dev/null
status=$("${pm[@]}" inspect --format '{{.State.ExitCode}}' "$name")
logs=$("${pm[@]}" logs "$name" 2>&1)
[ "$status" = 0 ] || { echo "$logs" | tail -20; fail "exit status $status after SIGTERM"; }
grep -q 'SIGTERM' <<< "$logs" || { echo "$logs" | tail -20; fail "no SIGTERM drain in the log"; }
ok "podman stop (SIGTERM): drained, exit status 0"
echo "image: all $passed checks passed"
