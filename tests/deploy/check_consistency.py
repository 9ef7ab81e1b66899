#!/usr/bin/env python3
"""The rendered manifests agree with the program they run.

    check_consistency.py [RENDERED.yaml...]   (no files: renders every target with render.py)

For every target: each container's command line (after the kubelet's $(VAR) expansion) is read
the way lorafleet reads it, with the router's cluster.toml from its ConfigMap, and

  - every probe asks a path the program serves (/health, /ready, /metrics) on a port it binds, in
    the scheme it speaks there (HTTPS where [http] has a certificate);
  - every containerPort, Service port, NetworkPolicy port and ServiceMonitor endpoint is a port
    the args or the TOML bind; the workers' --join names the router's cluster Service and port;
  - every file the args or the TOML name lies in a mounted ConfigMap or Secret that has that key
    (and every mounted one is read); Secrets are 0440 at most;
  - terminationGracePeriodSeconds = preStop + --drain-timeout + a margin of 5-30 s;
  - cpu = --threads, memory covers --kv-cache-mb, GPU workers ask for a GPU;
  - the autoscalers' targets follow --max-seqs; security contexts are the agreed ones.

Exit 1 on any problem, 77 when there is nothing to render with (render.py).
"""
import os
import sys
import tempfile

import manifests as mf
from render import SKIP, kustomize_command, render_all

OBJECTS = [("Deployment", "lorafleet-router"), ("Deployment", "lorafleet-worker"),
           ("Service", "lorafleet-router"), ("Service", "lorafleet-router-cluster"),
           ("ConfigMap", "lorafleet-config"), ("PodDisruptionBudget", "lorafleet-worker")]
SECRETS = {"lorafleet-api-keys": {"keys.txt"}, "lorafleet-https": {"tls.crt", "tls.key"},
           "lorafleet-cluster-tls": {"ca.crt", "tls.crt", "tls.key"}}
IMAGE_DATA = "/opt/lorafleet/"   # in the image (deploy/image): the program and its models
WORKER_MEMORY_BASE_MI = 256 + 512  # adapter cache + model and runtime (base/worker.yaml)


def cpu(q):
    q = str(q)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def mebibytes(q):
    q = str(q)
    for suffix, factor in (("Ki", 1 / 1024), ("Mi", 1), ("Gi", 1024), ("Ti", 1024 ** 2)):
        if q.endswith(suffix):
            return float(q[:-2]) * factor
    return float(q) / 2 ** 20


class Checker:
    def __init__(self, objects, target):
        self.objects, self.target, self.problems = objects, target, []
        self.containers = mf.containers(objects)
        self.router = next((c for c in self.containers if c.role == "router"), None)
        self.worker = next((c for c in self.containers if c.role == "worker"), None)
        self.external_secrets = not any(k == "Secret" for k, _ in objects)

    def problem(self, text):
        self.problems.append(text)

    def run(self):
        for steps in (self.objects_present, self.services, self.network_policies, self.autoscaling,
                      self.service_monitors, self.rollout):
            steps()
        for c in self.containers:
            self.security(c)
            self.ports_and_probes(c)
            self.files(c)
            self.shutdown(c)
        if self.router:
            self.router_config(self.router)
        if self.worker:
            self.worker_resources(self.worker)
            self.worker_join(self.worker)
        return self.problems

    # -- objects ---------------------------------------------------------------------------------
    def objects_present(self):
        for key in OBJECTS:
            if key not in self.objects:
                self.problem(f"{key[0]} {key[1]} is missing")
        if ("ConfigMap", "lorafleet-config") in self.objects and \
                "cluster.toml" not in self.objects[("ConfigMap", "lorafleet-config")].get("data", {}):
            self.problem("ConfigMap lorafleet-config has no key cluster.toml")
        present = {n for k, n in self.objects if k == "Secret"}
        if present and present != set(SECRETS):
            self.problem(f"Secrets {sorted(present)}: expected all of {sorted(SECRETS)} or none")
        for name, keys in SECRETS.items():
            s = self.objects.get(("Secret", name))
            if s and not keys <= set(s.get("data", {})) | set(s.get("stringData", {})):
                self.problem(f"Secret {name} lacks keys {sorted(keys - set(s.get('data', {})))}")
        if not self.router or not self.worker:
            self.problem("no router container (node CONFIG) or no worker container (node --join)")

    # -- each container --------------------------------------------------------------------------
    def security(self, c):
        pod, sc = c.pod.get("securityContext", {}), c.spec.get("securityContext", {})
        want_pod = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001}
        for k, v in want_pod.items():
            if pod.get(k) != v:
                self.problem(f"{c.name}: pod securityContext.{k} is {pod.get(k)!r}, expected {v!r}")
        if pod.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            self.problem(f"{c.name}: pod seccompProfile is not RuntimeDefault")
        if sc.get("readOnlyRootFilesystem") is not True or sc.get("allowPrivilegeEscalation") is not False:
            self.problem(f"{c.name}: needs readOnlyRootFilesystem true and allowPrivilegeEscalation false")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            self.problem(f"{c.name}: capabilities must drop ALL")
        tmp = next((m for m in c.spec.get("volumeMounts", []) if m["mountPath"] == "/tmp"), None)
        if not tmp or "emptyDir" not in (c.volume(tmp["name"]) or {}):
            self.problem(f"{c.name}: /tmp is not an emptyDir (the root file system is read-only)")

    def ports_and_probes(self, c):
        if not c.ports:
            self.problem(f"{c.name}: the program binds no port that could be probed ({c.args})")
            return
        declared = {p["containerPort"]: p.get("name") for p in c.spec.get("ports", [])}
        for number in declared:
            if number not in c.ports:
                self.problem(f"{c.name}: containerPort {number} is not a port the program binds "
                             f"(it binds {sorted(c.ports)})")
        for number, port in c.ports.items():
            if number not in declared:
                self.problem(f"{c.name}: the program binds {number} ({port.what}) but no containerPort names it")
        want = {"livenessProbe": "/health", "readinessProbe": "/ready", "startupProbe": "/health"}
        for probe, path in want.items():
            p = c.spec.get(probe)
            if not p or "httpGet" not in p:
                self.problem(f"{c.name}: no {probe} with httpGet")
                continue
            get = p["httpGet"]
            number = c.container_port(get.get("port"))
            port = c.ports.get(number)
            if port is None or not port.paths:
                self.problem(f"{c.name}: {probe} port {get.get('port')!r} is not an HTTP port the program binds")
                continue
            if get.get("path") not in port.paths or get.get("path") != path:
                self.problem(f"{c.name}: {probe} asks {get.get('path')}, expected {path} (served: {port.paths})")
            if get.get("scheme", "HTTP") != port.scheme:
                self.problem(f"{c.name}: {probe} scheme {get.get('scheme', 'HTTP')}, the port speaks {port.scheme}")
        start = c.spec.get("startupProbe", {})
        if c.role == "worker" and start.get("periodSeconds", 10) * start.get("failureThreshold", 3) < 300:
            self.problem(f"{c.name}: startupProbe allows under 300 s for loading the model")

    def files(self, c):
        read_volumes = set()
        for path, where in c.files:
            if path.startswith(IMAGE_DATA):
                continue
            mount = c.mount_for(path)
            if not mount:
                self.problem(f"{c.name}: {where} {path} is under no volumeMount")
                continue
            vol = c.volume(mount["name"]) or {}
            source = vol.get("configMap") or vol.get("secret")
            if source is None:
                self.problem(f"{c.name}: {where} {path} is on volume {mount['name']}, not a ConfigMap or Secret")
                continue
            read_volumes.add(mount["name"])
            key = mf.volume_key(source, path[len(mount["mountPath"].rstrip("/")) + 1:])
            kind, name = ("ConfigMap", source["name"]) if "configMap" in vol else ("Secret", source["secretName"])
            obj = self.objects.get((kind, name))
            if key is None:
                self.problem(f"{c.name}: {where} {path}: volume {mount['name']} shows no such key")
            elif obj is None:
                if not (kind == "Secret" and self.external_secrets):
                    self.problem(f"{c.name}: {where} {path}: {kind} {name} is not in the render")
            elif key not in obj.get("data", {}) and key not in obj.get("stringData", {}):
                self.problem(f"{c.name}: {where} {path}: {kind} {name} has no key {key}")
            if kind == "Secret" and source.get("defaultMode", 0o644) & 0o037:
                self.problem(f"{c.name}: Secret volume {mount['name']} mode {source.get('defaultMode', 0o644):o}: "
                             "group write or others reach the keys (0440 is the most)")
        for m in c.spec.get("volumeMounts", []):
            vol = c.volume(m["name"]) or {}
            if ("configMap" in vol or "secret" in vol) and m["name"] not in read_volumes:
                self.problem(f"{c.name}: volume {m['name']} at {m['mountPath']} is mounted but nothing reads it")

    def shutdown(self, c):
        drain = mf.flag(c.args, "--drain-timeout")
        if drain is None:
            self.problem(f"{c.name}: no --drain-timeout (the grace period is derived from it)")
            return
        pre = c.spec.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        grace = c.pod.get("terminationGracePeriodSeconds", 30)
        margin = grace - pre - int(drain)
        if not 5 <= margin <= 30:
            self.problem(f"{c.name}: terminationGracePeriodSeconds {grace} = preStop {pre} + drain "
                         f"{drain} + {margin}: the margin must be 5-30 s")
        if c.role == "router" and pre == 0:
            self.problem(f"{c.name}: the router needs a preStop sleep (endpoints go before SIGTERM)")

    # -- the router's config ---------------------------------------------------------------------
    def router_config(self, c):
        cfg = c.config
        if not cfg:
            self.problem(f"{c.name}: {c.config_path} is in no mounted ConfigMap")
            return
        router = cfg.get("cluster", {}).get("router_node")
        if mf.flag(c.args, "--name") != router:
            self.problem(f"{c.name}: --name {mf.flag(c.args, '--name')} is not router_node {router}")
        node = next((n for n in cfg.get("nodes", []) if n.get("name") == router), None)
        if not node or node.get("workers", {}).get("count") != 0 or len(cfg.get("nodes", [])) != 1:
            self.problem(f"{c.name}: cluster.toml must list only the router node, with workers.count = 0")
        elif node.get("bind") != "0.0.0.0":
            self.problem(f"{c.name}: the router's CAF port must bind 0.0.0.0 (workers are other pods)")
        if (cfg.get("http", {}).get("listen") != "0.0.0.0:8000"
                or cfg.get("gateway", {}).get("listen") != "tcp://0.0.0.0:5555"):
            self.problem(f"{c.name}: [http] listen must be 0.0.0.0:8000 and [gateway] listen tcp://0.0.0.0:5555")
        if not cfg.get("security", {}).get("nodes", {}).get("ca_file") and \
                not cfg.get("security", {}).get("nodes", {}).get("join_token_file"):
            self.problem(f"{c.name}: a CAF port beyond loopback needs [security.nodes] TLS or a join token")

    # -- workers ---------------------------------------------------------------------------------
    def worker_resources(self, c):
        res = c.spec.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        threads = int(mf.flag(c.args, "--threads") or 0)
        if threads < 1 or cpu(req.get("cpu", 0)) != threads or cpu(lim.get("cpu", 0)) != threads:
            self.problem(f"{c.name}: cpu request {req.get('cpu')} / limit {lim.get('cpu')} != --threads {threads}")
        kv = int(mf.flag(c.args, "--kv-cache-mb") or 1024)
        device = mf.flag(c.args, "--device") or "cpu"
        mem_req, mem_lim = mebibytes(req.get("memory", 0)), mebibytes(lim.get("memory", 0))
        if mem_req != mem_lim:
            self.problem(f"{c.name}: memory request {req.get('memory')} != limit {lim.get('memory')}")
        if device == "cpu" and mem_req < kv + WORKER_MEMORY_BASE_MI:
            self.problem(f"{c.name}: memory {req.get('memory')} < --kv-cache-mb {kv} + {WORKER_MEMORY_BASE_MI} Mi")
        if device.startswith("cuda") and int(lim.get("nvidia.com/gpu", 0)) < 1:
            self.problem(f"{c.name}: --device {device} without an nvidia.com/gpu limit")

    def worker_join(self, c):
        join = mf.flag(c.args, "--join")
        host, port = mf.host_port(join)
        svc = self.objects.get(("Service", host))
        router = self.router
        if svc is None or router is None:
            self.problem(f"{c.name}: --join {join}: no Service {host} (or no router)")
            return
        sp = next((p for p in svc["spec"]["ports"] if p["port"] == port), None)
        target = router.container_port(sp.get("targetPort", port)) if sp else None
        if target is None or router.ports.get(target, mf.Port(0, "")).what != "cluster":
            self.problem(f"{c.name}: --join {join} does not reach the router's CAF port")
        if not svc["spec"].get("publishNotReadyAddresses"):
            self.problem(f"Service {host}: publishNotReadyAddresses must be true "
                         "(the router is unready until a worker joins)")
        if not mf.selects(svc["spec"].get("selector"), router.deployment["spec"]["template"]["metadata"]["labels"]):
            self.problem(f"Service {host} does not select the router pod")
        beats = router.config.get("heartbeat", {})
        for flag_name, key, default in (("--heartbeat-interval-ms", "interval_ms", 1000),
                                        ("--heartbeat-timeout-ms", "timeout_ms", 5000)):
            if int(mf.flag(c.args, flag_name) or default) != beats.get(key, default):
                self.problem(f"{c.name}: {flag_name} differs from the router's [heartbeat] {key}")
        tls = router.config.get("security", {}).get("nodes", {})
        if bool(tls.get("ca_file")) != bool(mf.flag(c.args, "--tls-ca")):
            self.problem(f"{c.name}: --tls-ca must be given exactly when the router has [security.nodes] ca_file")
        elif tls.get("ca_file"):
            def source(container, path):
                m = container.mount_for(path)
                vol = container.volume(m["name"]) if m else None
                return (vol or {}).get("secret", {}).get("secretName"), os.path.basename(path)
            if source(c, mf.flag(c.args, "--tls-ca")) != source(router, tls["ca_file"]):
                self.problem(f"{c.name}: the worker's --tls-ca and the router's ca_file "
                             "come from different Secret keys")

    # -- other objects ---------------------------------------------------------------------------
    def pods(self):
        return [(c, c.deployment["spec"]["template"]["metadata"]["labels"]) for c in self.containers]

    def services(self):
        for (kind, name), svc in self.objects.items():
            if kind != "Service":
                continue
            chosen = [c for c, labels in self.pods() if mf.selects(svc["spec"].get("selector"), labels)]
            if not chosen:
                self.problem(f"Service {name} selects no pod")
            for p in svc["spec"]["ports"]:
                for c in chosen:
                    number = c.container_port(p.get("targetPort", p["port"]))
                    if number not in c.ports:
                        self.problem(f"Service {name} port {p['port']} -> {p.get('targetPort')}: "
                                     f"{c.name} binds no such port")

    def workers_only(self, peers, own_labels):
        """Do NetworkPolicy peers admit the worker pods and nothing else (not even their own pod)?"""
        workers = [labels for c, labels in self.pods() if c.role == "worker"]
        return bool(peers) and all(
            set(f) == {"podSelector"} and all(mf.selects(f["podSelector"], w) for w in workers)
            and not mf.selects(f["podSelector"], own_labels) for f in peers)

    def network_policies(self):
        policies = [o for (k, _), o in self.objects.items() if k == "NetworkPolicy"]
        for c, labels in self.pods():
            rules = [r for p in policies if mf.selects(p["spec"]["podSelector"], labels)
                     for r in p["spec"].get("ingress", [])]
            if not rules:
                self.problem(f"{c.name}: no NetworkPolicy selects its pods")
                continue
            allowed = {}
            for r in rules:
                for p in r.get("ports", []):
                    number = c.container_port(p["port"])
                    if number not in c.ports:
                        self.problem(f"{c.name}: a NetworkPolicy opens {p['port']}, which the program does not bind")
                    allowed.setdefault(number, []).append(r)
            for number, port in c.ports.items():
                rs = allowed.get(number, [])
                if not rs:
                    self.problem(f"{c.name}: no NetworkPolicy rule admits port {number} ({port.what})")
                elif port.what == "cluster" and not all(self.workers_only(r.get("from", []), labels) for r in rs):
                    self.problem(f"{c.name}: the cluster port {number} must be open to worker pods only")
                elif port.what in ("http", "zmq") and not any(not r.get("from") for r in rs):
                    self.problem(f"{c.name}: client port {number} ({port.what}) must be open to every client")
                elif port.what == "probe" and not any(
                        f.get("podSelector") == {} for r in rs for f in r.get("from", [{"podSelector": {}}])):
                    self.problem(f"{c.name}: the probe port must be open to the namespace (Prometheus)")
        pdb = self.objects.get(("PodDisruptionBudget", "lorafleet-worker"))
        worker_labels = self.worker.deployment["spec"]["template"]["metadata"]["labels"] if self.worker else {}
        if pdb and self.worker and not mf.selects(pdb["spec"]["selector"], worker_labels):
            self.problem("PodDisruptionBudget lorafleet-worker does not select the worker pods")

    def autoscaling(self):
        if not self.worker:
            return
        seqs = int(mf.flag(self.worker.args, "--max-seqs") or 64)
        hpa = self.objects.get(("HorizontalPodAutoscaler", "lorafleet-worker"))
        keda = self.objects.get(("ScaledObject", "lorafleet-worker"))
        if bool(hpa) == bool(keda):
            self.problem("exactly one of HorizontalPodAutoscaler and ScaledObject lorafleet-worker must be rendered")
        if hpa:
            if hpa["spec"]["scaleTargetRef"].get("name") != "lorafleet-worker":
                self.problem("the HPA does not scale Deployment lorafleet-worker")
            targets = {m["pods"]["metric"]["name"]: m["pods"]["target"]
                       for m in hpa["spec"]["metrics"] if m["type"] == "Pods"}
            for metric, value in (("vllm:num_requests_waiting", seqs / 4), ("vllm:num_requests_running", seqs)):
                t = targets.get(metric, {})
                if t.get("type") != "AverageValue" or float(t.get("averageValue", -1)) != value:
                    self.problem(f"HPA {metric}: expected AverageValue {value:g} for --max-seqs {seqs}, got {t}")
        if keda:
            if keda["spec"]["scaleTargetRef"].get("name") != "lorafleet-worker":
                self.problem("the ScaledObject does not scale lorafleet-worker")
            triggers = {t.get("name"): t["metadata"] for t in keda["spec"]["triggers"]}
            for name, metric, value in (("waiting", "vllm:num_requests_waiting", seqs / 2),
                                        ("demand", "vllm:num_requests_running", seqs)):
                t = triggers.get(name, {})
                if metric not in t.get("query", "") or float(t.get("threshold", -1)) != value:
                    self.problem(f"ScaledObject trigger {name}: expected {metric} with threshold {value:g} "
                                 f"for --max-seqs {seqs}")

    def service_monitors(self):
        for (kind, name), sm in self.objects.items():
            if kind != "ServiceMonitor":
                continue
            services = [s for (k, _), s in self.objects.items() if k == "Service"
                        and mf.selects(sm["spec"]["selector"], s["metadata"].get("labels", {}))]
            for ep in sm["spec"]["endpoints"]:
                found = False
                for s in services:
                    sp = next((p for p in s["spec"]["ports"] if p.get("name") == ep.get("port")), None)
                    if not sp:
                        continue
                    for c, labels in self.pods():
                        if not mf.selects(s["spec"].get("selector"), labels):
                            continue
                        port = c.ports.get(c.container_port(sp.get("targetPort", sp["port"])))
                        found = True
                        where, path, scheme = f"ServiceMonitor {name} port {ep.get('port')}", \
                            ep.get("path", "/metrics"), ep.get("scheme", "http")
                        if not port or path not in port.paths:
                            self.problem(f"{where}: {c.name} serves no {path} there")
                        elif scheme.upper() != port.scheme:
                            self.problem(f"{where}: scheme {scheme}, the port speaks {port.scheme}")
                if not found:
                    self.problem(f"ServiceMonitor {name}: endpoint port {ep.get('port')} is in no selected Service")
                ca = ep.get("tlsConfig", {}).get("ca", {}).get("secret")
                secret = self.objects.get(("Secret", ca["name"]), {}) if ca else {}
                if ca and not self.external_secrets and ca["key"] not in secret.get("data", {}):
                    self.problem(f"ServiceMonitor {name}: tlsConfig CA {ca} is not in the render")

    def rollout(self):
        w = self.objects.get(("Deployment", "lorafleet-worker"))
        if w and w["spec"].get("strategy", {}).get("rollingUpdate") != {"maxUnavailable": 0, "maxSurge": 1}:
            self.problem("Deployment lorafleet-worker: rolling update must be maxUnavailable 0, maxSurge 1")
        r = self.objects.get(("Deployment", "lorafleet-router"))
        if r and (r["spec"].get("replicas") != 1 or r["spec"].get("strategy", {}).get("type") != "Recreate"):
            self.problem("Deployment lorafleet-router: one replica, strategy Recreate (two routers are two clusters)")


def check_file(path):
    return Checker(mf.load(path), os.path.basename(path)).run()


def main():
    files = sys.argv[1:]
    tmp = None
    if not files:
        command = kustomize_command()
        if command is None:
            print("consistency: skipped: no kubectl with kustomize v4+ to render with")
            return SKIP
        tmp = tempfile.TemporaryDirectory(prefix="lf-rendered-")
        rendered, failures = render_all(tmp.name, command)
        if failures:
            print("\n".join(f"consistency: render FAILED {f}" for f in failures))
            return 1
        # The base alone is not what is applied (no namespace, no image choice): the overlays are.
        files = [rendered[name] for name in rendered if name != "base"]
    return mf.report_per_file("consistency", files, check_file)


if __name__ == "__main__":
    sys.exit(main())
