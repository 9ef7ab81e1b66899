#!/bin/bash
# Builds the lorafleet runtime image with buildah, pulling no base image: a Debian
# `debootstrap --variant=minbase` root, the Debian packages that hold the libraries the binary
# loads (found with ldd + dpkg -S, so no compiler and no -dev package), the binary and the
# embedded default model (the image serves with no volume). Layout and user as agreed for
# Kubernetes (deploy/kubernetes/): /opt/lorafleet/{bin,share/lorafleet/models}, uid/gid 10001.
#
#   layer 1  the root: minbase + runtime packages + user lorafleet, docs and apt lists removed
#            (cached as a tarball in build/image-cache/, and as the image localhost/lorafleet-base:KEY,
#            KEY = hash of the package list and of the recipe; it changes only with those)
#   layer 2  /opt/lorafleet: the binary, the models, and any library no Debian package holds
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: deploy/image/build.sh [options]

Builds the lorafleet OCI image (default localhost/lorafleet:dev) into local container storage.
Needs root, debootstrap and buildah, and a Debian mirror (the first build only; later builds
reuse the cached root in build/image-cache/).

  --binary PATH          the lorafleet program (default: build/release/tools/lorafleet)
  --tag NAME             image name (default: localhost/lorafleet:dev)
  --archive PATH         also write the image to an OCI archive at PATH (oci-archive)
  --storage-driver NAME  containers/storage driver (e.g. vfs where overlay cannot mount); use the
                         same one with podman to run the image
  --storage-root DIR     a containers/storage of its own at DIR instead of the system's
                         (podman --root DIR --runroot DIR/run sees the image)
  --cache DIR            where the root tarballs are kept (default: build/image-cache)
  --no-cache             debootstrap and install again (picks up new security updates)
  --mirror URL           Debian mirror (default: this machine's, from /etc/apt/sources.list*)
  --security-mirror URL  Debian security mirror (default: this machine's;
                         "none" leaves it out)
  --source URL           org.opencontainers.image.source (default: the git remote "origin")
  --version V            org.opencontainers.image.version (default: the version in CMakeLists.txt)
  -h, --help             this text

Examples:
  deploy/image/build.sh --storage-driver vfs
  deploy/image/build.sh --binary build/release/tools/lorafleet --archive build/lorafleet-oci.tar
USAGE
}

die() { echo "image: error: $*" >&2; exit 1; }
note() { echo "image: $*"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
binary=$repo/build/release/tools/lorafleet
tag=localhost/lorafleet:dev
archive=""
driver=""
storage_root=""
cache=$repo/build/image-cache
use_cache=1
suite=bookworm
# The mirrors this machine's apt uses (deb822 .sources files or one-line lists): the image's
# packages come from where the host's do.
host_mirror() {  # host_mirror SUITE_SUFFIX: the first URI whose suites include bookworm$1
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk -v want="bookworm$1" '
      /^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want && uri != "") { print uri; exit } }
      /^$/ { uri = "" }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk -v want="bookworm$1" '$1 == "deb" { for (i = 3; i <= NF; i++) if ($i == want) { print ($2 ~ /^\[/ ? $3 : $2); exit } }' "$f"
  done
}
mirror=$(host_mirror "" | head -n 1)
security=$(host_mirror -security | head -n 1)
source_url=""
version=""
while [ $# -gt 0 ]; do
  case $1 in
    --binary|--tag|--archive|--storage-driver|--storage-root|--cache|--mirror|--security-mirror|--source|--version)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"
      case $1 in
        --binary) binary=$2 ;;
        --tag) tag=$2 ;;
        --archive) archive=$2 ;;
        --storage-driver) driver=$2 ;;
        --storage-root) storage_root=$2 ;;
        --cache) cache=$2 ;;
        --mirror) mirror=$2 ;;
        --security-mirror) security=$2 ;;
        --source) source_url=$2 ;;
        --version) version=$2 ;;
      esac
      shift 2 ;;
    --no-cache) use_cache=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[ -n "$mirror" ] || die "no Debian bookworm mirror in /etc/apt/sources.list*: pass --mirror URL"
[ -n "$security" ] || security=none

phase_name=""; phase_start=$SECONDS; build_start=$SECONDS
phase() {
  [ -z "$phase_name" ] || note "$phase_name took $((SECONDS - phase_start)) s"
  phase_name=$1; phase_start=$SECONDS
  [ -z "$1" ] || note "$1 ..."
}
mib() { echo $(( ($1 + 1048575) / 1048576 )); }

# ---- checks ---------------------------------------------------------------------------------
phase "checking the host"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap and chroot make the root file system)"
command -v debootstrap > /dev/null || die "debootstrap not installed: apt-get install debootstrap"
command -v buildah > /dev/null || die "buildah not installed: apt-get install buildah"
command -v dpkg-query > /dev/null || die "dpkg-query not found: the packages are derived on a Debian host"
command -v ldd > /dev/null || die "ldd not found (package libc-bin)"
[ -f "$binary" ] || die "no binary at $binary (build it: ./setup.sh demo, or pass --binary PATH)"
[ -x "$binary" ] || die "$binary is not executable"
binary=$(readlink -f "$binary")
for d in default adapters tokenizer; do
  [ -d "$repo/models/$d" ] || die "no $repo/models/$d: the image embeds models/{default,adapters,tokenizer}"
done
arch=$(dpkg --print-architecture)
host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$host_suite" = "$suite" ] || note "warning: this host is Debian '${host_suite:-unknown}', the image" \
  "is $suite: the binary's libraries are looked up by the host's package names"
bh=(buildah)
[ -z "$driver" ] || bh+=(--storage-driver "$driver")
[ -z "$storage_root" ] || bh+=(--root "$storage_root" --runroot "$storage_root/run")
"${bh[@]}" info > /dev/null 2>&1 || die "buildah cannot open its storage$([ -n "$driver" ] \
  || echo " (where overlay cannot mount, try --storage-driver vfs)"): $("${bh[@]}" info 2>&1 | tail -1)"
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
[ -n "$source_url" ] || source_url=$(git -C "$repo" remote get-url origin 2>/dev/null || true)
[ -n "$version" ] || version=$(sed -n 's/^project(lorafleet VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || version=0.0.0

# ---- which packages hold the binary's libraries ----------------------------------------------
phase "finding the runtime packages (ldd + dpkg -S)"
ldd_out=$(ldd "$binary" 2>&1) || grep -q 'not a dynamic executable' <<< "$ldd_out" \
  || die "ldd $binary failed: $ldd_out"
missing=$(awk '/=> not found/ {print $1}' <<< "$ldd_out")
[ -z "$missing" ] || die "libraries of $binary not found on this host: $(echo $missing)"
# Every library path with its /usr-merged twins (/lib and /usr/lib), resolved and not: dpkg knows
# each file by the one path its package ships it at. One dpkg-query for all of them.
mapfile -t libs < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<< "$ldd_out")
candidates() { local p; for p in "$1" "$(readlink -f "$1")"; do echo "$p"; echo "/usr$p"; echo "${p#/usr}"; done; }
declare -A owner=()
while IFS= read -r line; do
  case $line in diversion*|"") continue ;; esac
  pkg=${line%%: *}; pkg=${pkg%%, *}
  owner[${line#*: }]=${pkg%%:*}
done < <(for lib in "${libs[@]}"; do candidates "$lib"; done | sort -u | xargs dpkg-query -S 2>/dev/null || true)
packages=(); unpackaged=()
for lib in "${libs[@]}"; do
  pkg=""
  for c in $(candidates "$lib"); do [ -z "${owner[$c]:-}" ] || { pkg=${owner[$c]}; break; }; done
  if [ -z "$pkg" ]; then unpackaged+=("$lib"); continue; fi
  case $pkg in *-dev|*-dbg|gcc|gcc-[0-9]*[0-9]|g++*|cpp|cpp-[0-9]*[0-9]|binutils*) die "$lib comes from $pkg, a build package" ;; esac
  packages+=("$pkg")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | grep -v '^$' | sort -u)
note "packages: ${packages[*]}"
for lib in "${unpackaged[@]}"; do
  note "warning: $(basename "$lib") ($(mib "$(stat -Lc %s "$lib")") MiB, $(dirname "$lib")) is in no" \
    "Debian package: copied into /opt/lorafleet/lib"
done
if printf '%s\n' "${unpackaged[@]}" | grep -q '/libcu'; then
  note "warning: the binary links CUDA; for a CPU image build it with cmake -DLORAFLEET_CUDA=OFF"
fi

# ---- the root: debootstrap minbase + packages, cached ----------------------------------------
# make_runtime_root DIR PACKAGE...: into a debootstrapped root, security updates, the packages,
# the user, then everything a running server never reads is removed. Its text is part of the
# cache key, so changing it makes the root again.
make_runtime_root() {
  local root=$1; shift
  {
    echo "deb $mirror $suite main"
    echo "deb $mirror $suite-updates main"
    [ "$security" = none ] || echo "deb $security $suite-security main"
  } > "$root/etc/apt/sources.list"
  cat /etc/resolv.conf > "$root/etc/resolv.conf"
  cat > "$root/etc/dpkg/dpkg.cfg.d/90-lorafleet-slim" <<'DPKG'
# Keep the image small: no documentation, manuals or translations (licences stay).
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
DPKG
  local apt=(env DEBIAN_FRONTEND=noninteractive LC_ALL=C chroot "$root" apt-get -q -y
             -o Acquire::Languages=none -o APT::Install-Recommends=false -o Dpkg::Use-Pty=false)
  local log=$work/apt.log
  { "${apt[@]}" update && "${apt[@]}" upgrade && "${apt[@]}" install "$@" && "${apt[@]}" clean; } > "$log" 2>&1 \
    || { tail -20 "$log" >&2; die "apt-get in the root failed (is $mirror reachable?)"; }
  echo "lorafleet:x:10001:" >> "$root/etc/group"
  echo "lorafleet:!::" >> "$root/etc/gshadow"
  echo "lorafleet:x:10001:10001:lorafleet:/tmp:/usr/sbin/nologin" >> "$root/etc/passwd"
  echo "lorafleet:!:19000::::::" >> "$root/etc/shadow"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/{man,info,locale,lintian,linda}/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
    "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/* "$root"/root/.bash_history
  : > "$root/etc/resolv.conf"
  chmod 1777 "$root/tmp"
}
key=$({ echo "$suite $arch $mirror $security"; printf '%s\n' "${packages[@]}"; declare -f make_runtime_root; } \
  | sha256sum | cut -c1-16)
base_tar=$cache/debootstrap-$suite-minbase-$arch.tar
runtime_tar=$cache/runtime-$suite-$arch-$key.tar
base_image=localhost/lorafleet-base:$key
work=$(mktemp -d "${TMPDIR:-/tmp}/lorafleet-image.XXXXXX")
containers=()
cleanup() {
  local c
  for c in "${containers[@]}"; do "${bh[@]}" rm "$c" > /dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$cache"
if [ "$use_cache" = 0 ]; then
  rm -f "$base_tar" "$runtime_tar"
  "${bh[@]}" rmi "$base_image" > /dev/null 2>&1 || true
fi

if [ ! -f "$runtime_tar" ]; then
  if [ ! -f "$base_tar" ]; then
    phase "debootstrap --variant=minbase $suite ($mirror)"
    debootstrap --variant=minbase --arch="$arch" "$suite" "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (is $mirror reachable?)"; }
    rm -f "$work"/root/var/cache/apt/archives/*.deb  # installed already: half the tarball
    tar --numeric-owner -C "$work/root" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  else
    phase "unpacking the cached minbase root ($base_tar)"
    mkdir "$work/root"
    tar --numeric-owner -C "$work/root" -xf "$base_tar"
  fi
  phase "installing ${#packages[@]} runtime packages into the root (apt-get in chroot)"
  make_runtime_root "$work/root" "${packages[@]}"
  tar --numeric-owner -C "$work/root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
    -cf "$runtime_tar.tmp" . && mv "$runtime_tar.tmp" "$runtime_tar"
  rm -rf "$work/root"
fi

# ---- layer 1: the base image (kept in storage: a later build of the same key reuses it) -------
if ! "${bh[@]}" inspect --type image "$base_image" > /dev/null 2>&1; then
  phase "making $base_image from $(basename "$runtime_tar")"
  ctr=$("${bh[@]}" from scratch); containers+=("$ctr")
  "${bh[@]}" add "$ctr" "$runtime_tar" / > /dev/null
  "${bh[@]}" config --created-by "debootstrap --variant=minbase $suite; apt-get install ${packages[*]}" "$ctr"
  "${bh[@]}" commit --quiet --rm "$ctr" "$base_image" > /dev/null
  containers=()
fi

# ---- layer 2: /opt/lorafleet -------------------------------------------------------------------
phase "adding the binary and the models"
opt=$work/app/opt/lorafleet
mkdir -p "$opt/bin" "$opt/share/lorafleet/models"
install -m 0755 "$binary" "$opt/bin/lorafleet"
for d in default adapters tokenizer; do cp -R "$repo/models/$d" "$opt/share/lorafleet/models/"; done
envs=(--env HOME=/tmp --env LORAFLEET_MODELS_DIR=/opt/lorafleet/share/lorafleet/models
      --env PATH=/opt/lorafleet/bin:/usr/local/bin:/usr/bin:/bin)
if [ "${#unpackaged[@]}" -gt 0 ]; then
  mkdir -p "$opt/lib"
  for lib in "${unpackaged[@]}"; do cp -L "$lib" "$opt/lib/$(basename "$lib")"; done
  envs+=(--env LD_LIBRARY_PATH=/opt/lorafleet/lib)
fi
chmod -R u=rwX,go=rX "$work/app"
ctr=$("${bh[@]}" from --pull-never "$base_image"); containers+=("$ctr")
"${bh[@]}" copy --chown 0:0 "$ctr" "$work/app" / > /dev/null
labels=(--label org.opencontainers.image.title=lorafleet
        --label "org.opencontainers.image.description=lorafleet: GPT-2 serving on CPU (router, workers, OpenAI HTTP API, ZeroMQ); Debian $suite minbase"
        --label "org.opencontainers.image.revision=$revision"
        --label "org.opencontainers.image.version=$version"
        --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        --label "org.opencontainers.image.vendor=lorafleet")
if [ -n "$source_url" ]; then
  labels+=(--label "org.opencontainers.image.source=$source_url")
else
  note "no git remote 'origin': org.opencontainers.image.source is left out (pass --source URL)"
fi
"${bh[@]}" config \
  --entrypoint '["/opt/lorafleet/bin/lorafleet"]' \
  --cmd '["serve","--http","0.0.0.0:8000","--listen","tcp://0.0.0.0:5555"]' \
  --port 8000/tcp --port 5555/tcp --user 10001:10001 --workingdir /tmp --stop-signal SIGTERM \
  --created-by "COPY /opt/lorafleet (lorafleet $version, $(echo "$revision" | cut -c1-12))" \
  "${envs[@]}" "${labels[@]}" "$ctr"
phase "committing $tag"
previous=$("${bh[@]}" inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null || true)
"${bh[@]}" commit --quiet --rm "$ctr" "$tag" > /dev/null
containers=()
# The image this tag named before, now untagged: removed unless a container or another tag holds it.
if [ -n "$previous" ] && [ "$previous" != "$("${bh[@]}" inspect --type image --format '{{.FromImageID}}' "$tag")" ]; then
  "${bh[@]}" images --noheading --no-trunc --format '{{.ID}} {{.Name}}' \
    | grep -Eq "^(sha256:)?$previous +[^< ]" || "${bh[@]}" rmi "$previous" > /dev/null 2>&1 || true
fi

if [ -n "$archive" ]; then
  phase "writing the OCI archive $archive"
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive"
  "${bh[@]}" push --quiet "$tag" "oci-archive:$archive:$tag" > /dev/null
fi
phase ""

# ---- what it weighs --------------------------------------------------------------------------
size=$("${bh[@]}" images --noheading --format '{{.Size}}' "$tag" | head -1)
note "built $tag in $((SECONDS - build_start)) s: $size uncompressed"
app=$(du -sb "$work/app" | cut -f1)
note "  /opt/lorafleet $(mib "$app") MiB: binary $(mib "$(stat -c %s "$opt/bin/lorafleet")") MiB," \
  "models $(mib "$(du -sb "$opt/share" | cut -f1)") MiB$([ ! -d "$opt/lib" ] \
  || echo ", libraries from no package $(mib "$(du -sb "$opt/lib" | cut -f1)") MiB")"
note "  root $(mib "$(stat -c %s "$runtime_tar")") MiB; largest packages (KiB):" \
  "$(tar -xOf "$runtime_tar" ./var/lib/dpkg/status | awk '/^Package:/ {p=$2} /^Installed-Size:/ {print $2, p}' \
     | sort -rn | head -6 | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
[ -z "$archive" ] || note "  archive $archive: $(mib "$(stat -c %s "$archive")") MiB"
note "run it: podman${driver:+ --storage-driver $driver}${storage_root:+ --root $storage_root --runroot $storage_root/run}" \
  "run --rm -p 8000:8000 $tag"
