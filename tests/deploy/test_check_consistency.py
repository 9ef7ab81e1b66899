#!/usr/bin/env python3
"""check_consistency.py finds planted violations: each case below breaks one agreement in a
rendered target (small-cpu with the keda and prometheus-operator components) and expects the
problem it must report. Exit 77 when there is nothing to render with."""
import copy
import sys
import tempfile

import manifests as mf
from check_consistency import Checker
from render import SKIP, kustomize_command, render_all

TARGET = "small-cpu+keda+prometheus-operator"


def deployment(objs, name):
    return objs[("Deployment", name)]


def container(objs, name):
    return deployment(objs, name)["spec"]["template"]["spec"]["containers"][0]


def env(objs, name, value):
    for e in container(objs, "lorafleet-worker")["env"]:
        if e["name"] == name:
            e["value"] = value


def args(objs, deploy, old, new):
    c = container(objs, deploy)
    c["args"] = [new if a == old else a for a in c["args"]]


def toml(objs, old, new):
    cm = objs[("ConfigMap", "lorafleet-config")]
    assert old in cm["data"]["cluster.toml"], old
    cm["data"]["cluster.toml"] = cm["data"]["cluster.toml"].replace(old, new)


def volume(objs, deploy, name):
    return next(v for v in deployment(objs, deploy)["spec"]["template"]["spec"]["volumes"] if v["name"] == name)


def mount(objs, deploy, name):
    return next(m for m in container(objs, deploy)["volumeMounts"] if m["name"] == name)


# (what is broken, how, a piece of the expected problem)
CASES = [
    ("router readiness path", lambda o: container(o, "lorafleet-router")["readinessProbe"]["httpGet"].update(path="/readyz"),
     "readinessProbe asks /readyz"),
    ("router probe over plain HTTP", lambda o: container(o, "lorafleet-router")["livenessProbe"]["httpGet"].update(scheme="HTTP"),
     "scheme HTTP, the port speaks HTTPS"),
    ("worker containerPort", lambda o: container(o, "lorafleet-worker")["ports"][0].update(containerPort=8082),
     "containerPort 8082 is not a port the program binds"),
    ("worker probe port in args", lambda o: args(o, "lorafleet-worker", "$(POD_IP):8081", "$(POD_IP):9090"),
     "binds 9090 (probe) but no containerPort"),
    ("http listen moved", lambda o: toml(o, 'listen = "0.0.0.0:8000"', 'listen = "0.0.0.0:8443"'),
     "containerPort 8000 is not a port the program binds"),
    ("Secret key missing", lambda o: o[("Secret", "lorafleet-cluster-tls")]["data"].pop("tls.key"),
     "has no key tls.key"),
    ("mount path moved", lambda o: mount(o, "lorafleet-worker", "cluster-tls").update(mountPath="/etc/lorafleet/tls"),
     "is under no volumeMount"),
    ("Secret readable by others", lambda o: volume(o, "lorafleet-router", "api-keys")["secret"].update(defaultMode=0o444),
     "others reach the keys"),
    ("grace period too short", lambda o: deployment(o, "lorafleet-router")["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=30),
     "the margin must be 5-30 s"),
    ("cpu != threads", lambda o: container(o, "lorafleet-worker")["resources"]["limits"].update(cpu="2"),
     "!= --threads 1"),
    ("K/V pool beyond memory", lambda o: env(o, "KV_CACHE_MB", "4096"),
     "< --kv-cache-mb 4096"),
    ("ScaledObject threshold", lambda o: o[("ScaledObject", "lorafleet-worker")]["spec"]["triggers"][0]["metadata"].update(threshold="16"),
     "trigger waiting: expected vllm:num_requests_waiting with threshold 8"),
    ("max_seqs changed alone", lambda o: env(o, "MAX_SEQS", "32"),
     "threshold 16 for --max-seqs 32"),
    ("cluster port open to all", lambda o: o[("NetworkPolicy", "lorafleet-router")]["spec"]["ingress"][1].pop("from"),
     "open to worker pods only"),
    ("cluster Service hides an unready router", lambda o: o[("Service", "lorafleet-router-cluster")]["spec"].update(publishNotReadyAddresses=False),
     "publishNotReadyAddresses must be true"),
    ("join port", lambda o: args(o, "lorafleet-worker", "lorafleet-router-cluster:7070", "lorafleet-router-cluster:7071"),
     "does not reach the router's CAF port"),
    ("heartbeat mismatch", lambda o: args(o, "lorafleet-worker", "5000", "9000"),
     "--heartbeat-timeout-ms differs"),
    ("ServiceMonitor scheme", lambda o: o[("ServiceMonitor", "lorafleet")]["spec"]["endpoints"][1].update(scheme="http"),
     "scheme http, the port speaks HTTPS"),
    ("unread mount", lambda o: mount(o, "lorafleet-router", "api-keys").update(mountPath="/etc/lorafleet/unused")
     or toml(o, 'key_file = "/etc/lorafleet/auth/keys.txt"', 'key_file = "/etc/lorafleet/https/keys.txt"'),
     "mounted but nothing reads it"),
    ("two routers", lambda o: deployment(o, "lorafleet-router")["spec"].update(replicas=2),
     "one replica, strategy Recreate"),
]


def main():
    command = kustomize_command()
    if command is None:
        print("consistency self-test: skipped: no kubectl with kustomize v4+ to render with")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        rendered, failures = render_all(tmp, command)
        if failures:
            print("\n".join(failures))
            return 1
        objects = mf.load(rendered[TARGET])
    passed = failed = 0
    baseline = Checker(copy.deepcopy(objects), TARGET).run()
    if baseline:
        print(f"FAIL unbroken {TARGET}: {baseline}")
        failed += 1
    for what, breaks, expected in CASES:
        objs = copy.deepcopy(objects)
        breaks(objs)
        problems = Checker(objs, TARGET).run()
        if any(expected in p for p in problems):
            passed += 1
            print(f"ok   {what}")
        else:
            failed += 1
            print(f"FAIL {what}: expected a problem with {expected!r}, got {problems}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
