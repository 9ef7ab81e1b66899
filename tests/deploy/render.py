#!/usr/bin/env python3
"""Render every kustomize target of deploy/kubernetes with `kubectl kustomize`.

    render.py [OUTDIR]    writes OUTDIR/TARGET.yaml for every target, prints one line each;
                          exit 1 when any target fails to render, 77 when no kubectl (or
                          kustomize) new enough for components is installed

Targets: the base, each overlay as it is, and overlays with the optional components added the way
a user adds them (a `components:` list in the overlay's kustomization.yaml), rendered from a copy
of the tree. The KEDA component's thresholds are written for small-cpu's MAX_SEQS, so it is
rendered with small-cpu only (check_consistency.py holds them to MAX_SEQS).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
TREE = os.path.join(SOURCE, "deploy", "kubernetes")
OVERLAYS = ("small-cpu", "large-cpu", "gpu")

# (target name, overlay or "base", components added to it)
TARGETS = [("base", "base", ())] + [(o, o, ()) for o in OVERLAYS] + [
    ("small-cpu+keda+prometheus-operator", "small-cpu", ("keda", "prometheus-operator")),
    ("large-cpu+prometheus-operator", "large-cpu", ("prometheus-operator",)),
    ("gpu+prometheus-operator", "gpu", ("prometheus-operator",)),
    ("small-cpu+no-example-secrets", "small-cpu", ("no-example-secrets",)),
]
SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def kustomize_command():
    """`kubectl kustomize` (kustomize v4 or newer: components), else `kustomize build`, else None."""
    if shutil.which("kubectl"):
        try:
            out = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True,
                                 text=True, timeout=60).stdout
            version = json.loads(out).get("kustomizeVersion", "v0")
            if int(version.lstrip("v").split(".")[0]) >= 4:
                return ["kubectl", "kustomize"]
        except (ValueError, OSError, subprocess.TimeoutExpired):
            pass
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


def add_components(kustomization, components):
    """Appends a components: list to a kustomization.yaml (the overlays have none of their own)."""
    with open(kustomization) as f:
        text = f.read()
    if "\ncomponents:" in text:
        raise SystemExit(f"render.py: {kustomization} already lists components; merge them here")
    with open(kustomization, "a") as f:
        f.write("components:\n" + "".join(f"  - ../../components/{c}\n" for c in components))


def render_all(outdir, command):
    """Renders every target into outdir; returns {target: path} and a list of failures."""
    rendered, failures = {}, []
    with tempfile.TemporaryDirectory(prefix="lf-kustomize-") as tmp:
        for name, where, components in TARGETS:
            tree = os.path.join(tmp, name, "kubernetes")
            shutil.copytree(TREE, tree)
            target = os.path.join(tree, where if where == "base" else os.path.join("overlays", where))
            if components:
                add_components(os.path.join(target, "kustomization.yaml"), components)
            run = subprocess.run(command + [target], capture_output=True, text=True, timeout=120)
            if run.returncode != 0 or not run.stdout.strip():
                failures.append(f"{name}: {run.stderr.strip() or 'empty output'}")
                continue
            path = os.path.join(outdir, name + ".yaml")
            with open(path, "w") as f:
                f.write(run.stdout)
            rendered[name] = path
    return rendered, failures


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="lf-rendered-")
    os.makedirs(outdir, exist_ok=True)
    command = kustomize_command()
    if command is None:
        print("render: skipped: no kubectl with kustomize v4+ (components) and no kustomize binary")
        return SKIP
    rendered, failures = render_all(outdir, command)
    for name, path in rendered.items():
        with open(path) as f:
            kinds = sum(1 for line in f if line.startswith("kind:"))
        print(f"render: {name}: {kinds} objects -> {path}")
    for failure in failures:
        print(f"render: FAILED {failure}")
    print(f"render: {len(rendered)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
