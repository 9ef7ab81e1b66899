#!/usr/bin/env python3
"""Every container command line of the rendered overlays passes the program's own argument check.

    check_args.py LORAFLEET_BINARY [RENDERED.yaml...]   (no files: renders the overlays)

For each Deployment container: the args after the kubelet's $(VAR) expansion, the container's env,
HOSTNAME set to a pod name, and LF_CHECK_ARGS=1, which makes any `lorafleet` command check its
arguments (and, for `node CONFIG`, load and check the config and its files), print
"lorafleet: arguments ok" and exit 0 without starting anything.

The files the pod would see are laid out under a temporary root as the kubelet mounts them
(ConfigMap and Secret keys, Secret files 0440 in this process's group, as fsGroup makes them),
and every mount path in the args and the TOML is moved under that root. The base's Secrets are
placeholders that the router refuses on purpose; here they are replaced with material made by
openssl (a cluster CA and node certificate, a self-signed HTTPS certificate, an API key line).
Then one flag is broken on purpose, which must exit 2, so a check mode that checks nothing fails;
and the router given the placeholders themselves must refuse them (exit 2): they fail closed.

Exit 1 on any failure, 77 when nothing can render or openssl is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import manifests as mf
from render import SKIP, kustomize_command, render_all

OK_LINE = "lorafleet: arguments ok"
POD_NAMES = {"lorafleet-router": "lorafleet-router-6d4b8f7c9-x2kqp",
             "lorafleet-worker": "lorafleet-worker-5f9c7b6d48-8zq4m"}


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_material(directory):
    """{(secret name, key): bytes} replacing the placeholders, made with the openssl CLI."""
    def req(name, *extra):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                *extra, cwd=directory)
    req("ca", "-x509", "-days", "2", "-out", "ca.crt")
    req("node", "-out", "node.csr")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "node.crt", cwd=directory)
    req("https", "-x509", "-days", "2", "-addext", "subjectAltName=DNS:lorafleet-router", "-out", "https.crt")

    def read(name):
        with open(os.path.join(directory, name), "rb") as f:
            return f.read()
    return {("lorafleet-cluster-tls", "ca.crt"): read("ca.crt"),
            ("lorafleet-cluster-tls", "tls.crt"): read("node.crt"),
            ("lorafleet-cluster-tls", "tls.key"): read("node.key"),
            ("lorafleet-https", "tls.crt"): read("https.crt"),
            ("lorafleet-https", "tls.key"): read("https.key"),
            ("lorafleet-api-keys", "keys.txt"): b"ops admin sk-check-args-0123456789abcdef\n"}


def lay_out(objects, c, root, material):
    """Writes c's ConfigMap / Secret / emptyDir mounts under root; returns the mount paths."""
    mounts = []
    for m in c.spec.get("volumeMounts", []):
        vol = c.volume(m["name"]) or {}
        where = root + m["mountPath"]
        os.makedirs(where, exist_ok=True)
        mounts.append(m["mountPath"])
        if "configMap" in vol:
            cm = objects[("ConfigMap", vol["configMap"]["name"])]
            for key, text in cm.get("data", {}).items():
                write(os.path.join(where, key), move_paths(text, c, root).encode(),
                      vol["configMap"].get("defaultMode", 0o644))
        elif "secret" in vol:
            name = vol["secret"]["secretName"]
            secret = objects.get(("Secret", name), {"data": {}})
            keys = set(secret.get("data", {})) | {k for (n, k) in material if n == name}
            for key in keys:
                value = material.get((name, key)) or mf.secret_value(secret, key)
                write(os.path.join(where, key), value, vol["secret"].get("defaultMode", 0o644))
    return mounts


def write(path, data, mode):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def move_paths(text, c, root):
    """Moves every mount path of c named in text (an arg, or a quoted TOML string) under root, in
    one pass (root itself lies under the /tmp mount)."""
    mounts = sorted((m["mountPath"].rstrip("/") for m in c.spec.get("volumeMounts", [])), key=len, reverse=True)
    pattern = '(^|")(' + "|".join(re.escape(m) for m in mounts) + ")(?=/)"
    return re.sub(pattern, lambda m: m.group(1) + root + m.group(2), text, flags=re.M)


def has_check_mode(binary):
    """Does the binary know LF_CHECK_ARGS? One that does not would start the nodes for real (bind
    the router's ports, connect out), so it is never run here."""
    with open(binary, "rb") as f:
        return OK_LINE.encode() in f.read()


def run_check(binary, c, root):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root, "LF_CHECK_ARGS": "1",
           "HOSTNAME": POD_NAMES.get(c.deployment["metadata"]["name"], "lorafleet-pod")}
    env.update(c.env)
    args = [move_paths(a, c, root) for a in c.args]
    run = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=120)
    return run, args


def has_placeholders(objects):
    return any(v.startswith(b"PLACEHOLDER") for (kind, _), o in objects.items() if kind == "Secret"
               for v in (mf.secret_value(o, k) for k in o.get("data", {})))


def check_target(binary, path, material):
    objects = mf.load(path)
    failures = []
    for c in mf.containers(objects):
        args = list(c.args)
        with tempfile.TemporaryDirectory(prefix="lf-pod-") as root:
            lay_out(objects, c, root, material)
            run, ran = run_check(binary, c, root)
            out = (run.stdout + run.stderr).strip()
            if run.returncode != 0 or OK_LINE not in run.stdout:
                failures.append(f"{c.name}: exit {run.returncode}: {out}\n    lorafleet {' '.join(ran)}")
                continue
            c.args = args + ["--no-such-flag"]
            bad, _ = run_check(binary, c, root)
            c.args = args
            if bad.returncode != 2:
                failures.append(f"{c.name}: a bad flag (--no-such-flag) exited {bad.returncode}, expected 2")
        if c.role == "router" and has_placeholders(objects):
            # Fail closed: with the base's placeholder Secrets the router must refuse to start.
            with tempfile.TemporaryDirectory(prefix="lf-pod-") as root:
                lay_out(objects, c, root, {})
                placeholder, _ = run_check(binary, c, root)
            if placeholder.returncode != 2:
                failures.append(f"{c.name}: the placeholder Secrets were accepted (exit {placeholder.returncode})")
    return failures


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary, files = os.path.abspath(sys.argv[1]), sys.argv[2:]
    if not has_check_mode(binary):
        print(f"check_args: FAILED: {binary} has no LF_CHECK_ARGS mode (no {OK_LINE!r} in it); not run")
        print("check_args: 0 passed, 1 failed")
        return 1
    if not shutil.which("openssl"):
        print("check_args: skipped: no openssl to make the test certificates")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="lf-check-args-") as tmp:
        if not files:
            command = kustomize_command()
            if command is None:
                print("check_args: skipped: no kubectl with kustomize v4+ to render with")
                return SKIP
            rendered, failures = render_all(tmp, command)
            if failures:
                print("\n".join(f"check_args: render FAILED {f}" for f in failures))
                return 1
            files = [rendered[o] for o in ("small-cpu", "large-cpu", "gpu")]
        material_dir = os.path.join(tmp, "material")
        os.makedirs(material_dir)
        material = make_material(material_dir)
        return mf.report_per_file("check_args", files, lambda path: check_target(binary, path, material))


if __name__ == "__main__":
    sys.exit(main())
