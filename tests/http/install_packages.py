#!/usr/bin/env python3
"""Install a test folder's npm packages (tests/http, tests/deploy) from its package-lock.json without npm.

Debian bookworm's `npm` package pulls in about 700 other packages (measured here: 255 s of
`apt-get install` on a fresh machine, longer than the whole of libtorch); the tests need only the
41 packages of package-lock.json. This reads the lock file, downloads each package's tarball from
the npm registry (or $NPM_REGISTRY), checks it against the lock's sha512 integrity, and unpacks it
where npm would put it (node_modules/<name>, nested paths included). No install scripts run (the
lock has none). `./setup.sh test` uses `npm ci` where npm is installed and this where it is not.

Usage: install_packages.py [DIR]   (DIR holds package-lock.json; default: this script's folder)
"""
import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import urllib.request

REGISTRY = os.environ.get("NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")


def tarball_url(name, version):
    base = name.split("/")[-1]
    return f"{REGISTRY}/{name}/-/{base}-{version}.tgz"


def check_integrity(data, integrity, what):
    algo, _, want = integrity.partition("-")
    if algo not in ("sha512", "sha384", "sha256", "sha1"):
        sys.exit(f"install_packages: {what}: unknown integrity algorithm {algo!r}")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        sys.exit(f"install_packages: {what}: the download does not match the lock's {algo} integrity")


def unpack(data, dest):
    """The tarball's single top folder (usually package/) becomes dest."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            parts = m.name.split("/", 1)
            if len(parts) < 2 or not parts[1] or ".." in parts[1].split("/"):
                continue
            if not (m.isfile() or m.isdir()):
                continue  # no links or devices from a tarball
            target = os.path.join(dest, parts[1])
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with tar.extractfile(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(target, 0o755 if m.mode & 0o111 else 0o644)


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "package-lock.json")) as f:
        lock = json.load(f)
    packages = {k: v for k, v in lock.get("packages", {}).items() if k.startswith("node_modules/")}
    if not packages:
        sys.exit("install_packages: package-lock.json lists no packages (lockfileVersion 2 or 3 needed)")
    modules = os.path.join(here, "node_modules")
    staging = modules + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    for key, meta in sorted(packages.items()):
        name = key.rsplit("node_modules/", 1)[1]
        version, integrity = meta.get("version"), meta.get("integrity")
        if not version or not integrity:
            sys.exit(f"install_packages: {key}: no version or integrity in the lock")
        url = meta.get("resolved") or tarball_url(name, version)
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                data = r.read()
        except OSError as e:
            sys.exit(f"install_packages: {name}@{version}: cannot download {url}: {e}")
        check_integrity(data, integrity, f"{name}@{version}")
        unpack(data, os.path.join(staging, key[len("node_modules/"):]))
    # Only a complete install replaces node_modules (an interrupted one leaves no half tree).
    shutil.rmtree(modules, ignore_errors=True)
    os.rename(staging, modules)
    print(f"install_packages: {len(packages)} packages into {modules}")


if __name__ == "__main__":
    main()
