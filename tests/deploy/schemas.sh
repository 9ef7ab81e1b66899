#!/bin/bash
# Every object of every rendered kustomize target (render.py) against the Kubernetes API schemas
# pinned in package-lock.json (validate_schemas.mjs). Exit 77 (skipped) when no kubectl or
# kustomize new enough to render is installed.
# Usage: schemas.sh [SOURCE_DIR]
# Needs node (>= 18) and tests/deploy/node_modules: `./setup.sh test` installs both.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v node > /dev/null || { echo "schemas: node is not installed: run ./setup.sh test"; exit 1; }
if [ ! -f "$here/node_modules/kubernetes-models/package.json" ]; then
  echo "schemas: the npm packages of tests/deploy are missing: run ./setup.sh test"
  echo "(or: python3 tests/http/install_packages.py tests/deploy)"
  exit 1
fi
echo "# node $(node --version), kubernetes-models $(node -p "require('$here/node_modules/kubernetes-models/package.json').version")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
python3 "$here/render.py" "$tmp" > "$tmp/render.log" || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$tmp/render.log"
  exit "$rc"
fi
cd "$here"  # node resolves the packages from here
node validate_schemas.mjs "$tmp"/*.yaml
