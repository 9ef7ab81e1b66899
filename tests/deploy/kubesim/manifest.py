"""The rendered manifests, read as the API server and the kubelet read them; pure helpers only
(no processes, no clock), so each is tested directly (tests/deploy/test_kubesim.py).

- `render` runs `kubectl kustomize` (or `kustomize build`) and `Manifests` indexes the objects.
- `expand` is the kubelet's $(VAR) expansion of env values, command and args.
- `container_env` builds a container's environment as the kubelet does (fieldRef, resourceFieldRef,
  configMapKeyRef, secretKeyRef, envFrom), HOSTNAME set to the pod's name like the runtime does.
- `rewrite_paths`, `rewrite_hosts`, `rewrite_wildcards` are what stands in for the pod's own mount
  namespace, cluster DNS and network namespace on one shared host (kubelet_sim.py's docstring).
"""
import base64
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

CLUSTER_DOMAIN = "cluster.local"


class ManifestError(Exception):
    """The manifests ask for something this simulation does not do, or are inconsistent."""


# ---- rendering and indexing ------------------------------------------------------------------

def kustomize_command() -> Optional[List[str]]:
    """The command that renders a kustomization directory, or None when neither tool is here."""
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


def render(overlay_dir: str) -> str:
    cmd = kustomize_command()
    if cmd is None:
        raise ManifestError("neither kubectl nor kustomize is installed")
    out = subprocess.run(cmd + [overlay_dir], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise ManifestError(f"{' '.join(cmd)} {overlay_dir} failed: {out.stderr.strip()}")
    return out.stdout


def write_kustomization(dir: str, overlay: str, components: Sequence[str]) -> str:
    """A kustomization in `dir` of the overlay with components added (kustomize takes only
    relative paths to them); returns `dir`."""
    rel = lambda p: os.path.relpath(os.path.abspath(p), dir)  # noqa: E731
    with open(os.path.join(dir, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                        "resources": [rel(overlay)], "components": [rel(c) for c in components]}, f)
    return dir


def load_objects(text: str) -> List[dict]:
    return [o for o in yaml.safe_load_all(text) if o]


@dataclass(frozen=True)
class ServicePort:
    name: str
    port: int
    target: object  # an int, or the name of a container port


@dataclass(frozen=True)
class Service:
    name: str
    namespace: str
    selector: Mapping[str, str]
    ports: Tuple[ServicePort, ...]
    publish_not_ready: bool

    def port_named(self, name: str) -> Optional[ServicePort]:
        return next((p for p in self.ports if p.name == name), None)

    def port_numbered(self, port: int) -> Optional[ServicePort]:
        return next((p for p in self.ports if p.port == port), None)


def parse_service(obj: dict) -> Service:
    spec = obj.get("spec", {})
    if spec.get("type", "ClusterIP") not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ManifestError(f"Service {obj['metadata']['name']}: type {spec['type']} is not simulated")
    ports = tuple(ServicePort(p.get("name", ""), int(p["port"]), p.get("targetPort", p["port"]))
                  for p in spec.get("ports", []))
    return Service(obj["metadata"]["name"], namespace_of(obj), dict(spec.get("selector") or {}),
                   ports, bool(spec.get("publishNotReadyAddresses", False)))


def namespace_of(obj: dict) -> str:
    return obj.get("metadata", {}).get("namespace", "default")


class Manifests:
    """The rendered objects by kind and name."""

    def __init__(self, objects: Sequence[dict]):
        self.objects = list(objects)
        self._by_kind: Dict[str, Dict[str, dict]] = {}
        for o in self.objects:
            self._by_kind.setdefault(o.get("kind", ""), {})[o["metadata"]["name"]] = o

    def of_kind(self, kind: str) -> List[dict]:
        return list(self._by_kind.get(kind, {}).values())

    def get(self, kind: str, name: str) -> dict:
        try:
            return self._by_kind[kind][name]
        except KeyError:
            raise ManifestError(f"the manifests have no {kind} named {name}") from None

    def services(self) -> List[Service]:
        return [parse_service(o) for o in self.of_kind("Service")]

    def config_data(self, kind: str, name: str) -> Dict[str, bytes]:
        """A ConfigMap's or Secret's keys and contents (Secret data decoded from base64)."""
        obj = self.get(kind, name)
        out = {k: v.encode() for k, v in (obj.get("data") or {}).items()} if kind == "ConfigMap" else \
            {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        out.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
        out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return out


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


# ---- the kubelet's $(VAR) expansion (k8s.io/kubernetes third_party/forked/golang/expansion) ----

def expand(text: str, lookup: Callable[[str], Optional[str]]) -> str:
    """$(NAME) becomes NAME's value when defined and stays as written otherwise; $$ is a literal
    $; any other $ is kept as is."""
    out = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            if nxt == "$":
                out.append("$")
                advance = 1
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close < 0:
                    out.append("$(")
                    advance = 1
                else:
                    name = text[cursor + 2:close]
                    value = lookup(name)
                    out.append(value if value is not None else f"$({name})")
                    advance = close - cursor
            else:
                out.append("$" + nxt)
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


# ---- a container's environment ----------------------------------------------------------------

@dataclass
class PodFields:
    """What a downward-API fieldRef can read."""
    name: str
    namespace: str
    ip: str
    uid: str
    node_name: str
    host_ip: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    service_account: str = "default"


def field_ref(path: str, pod: PodFields) -> str:
    simple = {"metadata.name": pod.name, "metadata.namespace": pod.namespace, "metadata.uid": pod.uid,
              "spec.nodeName": pod.node_name, "spec.serviceAccountName": pod.service_account,
              "status.hostIP": pod.host_ip, "status.hostIPs": pod.host_ip, "status.podIP": pod.ip,
              "status.podIPs": pod.ip}
    if path in simple:
        return simple[path]
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return (pod.labels if m.group(1) == "labels" else pod.annotations).get(m.group(2), "")
    raise ManifestError(f"fieldRef {path} is not simulated")


def parse_quantity(q: object) -> float:
    """A resource quantity ("500m", "2", "1Gi", "128M") as a plain number."""
    s = str(q)
    suffixes = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20,
                "Gi": 2**30, "Ti": 2**40}
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", s)
    if not m or (m.group(2) and m.group(2) not in suffixes):
        raise ManifestError(f"cannot read the quantity {s!r}")
    return float(m.group(1)) * suffixes.get(m.group(2), 1)


def resource_field_ref(ref: dict, container: dict) -> str:
    """limits.cpu and friends, rounded up to the divisor as the kubelet does (limits default to
    the node's allocatable, which this simulation does not know: they must be set)."""
    resource = ref["resource"]
    section, _, name = resource.partition(".")
    value = (container.get("resources", {}).get(section) or {}).get(name)
    if value is None:
        raise ManifestError(f"resourceFieldRef {resource}: the container sets no {resource}")
    divisor = parse_quantity(ref.get("divisor", "1"))
    return str(int(math.ceil(parse_quantity(value) / divisor)))


def container_env(container: dict, pod: PodFields, data: Callable[[str, str], Dict[str, bytes]],
                  base: Mapping[str, str]) -> Dict[str, str]:
    """The environment the process sees: `base` (the image's), HOSTNAME (the runtime's), envFrom,
    then env in order, each value expanded against the variables before it."""
    env: Dict[str, str] = dict(base)
    env["HOSTNAME"] = pod.name
    for src in container.get("envFrom") or []:
        kind, ref = ("ConfigMap", src["configMapRef"]) if "configMapRef" in src else ("Secret", src["secretRef"])
        for k, v in data(kind, ref["name"]).items():
            env[src.get("prefix", "") + k] = v.decode()
    for var in container.get("env") or []:
        name = var["name"]
        if "value" in var:
            env[name] = expand(str(var["value"]), env.get)
            continue
        src = var.get("valueFrom", {})
        if "fieldRef" in src:
            env[name] = field_ref(src["fieldRef"]["fieldPath"], pod)
        elif "resourceFieldRef" in src:
            env[name] = resource_field_ref(src["resourceFieldRef"], container)
        elif "configMapKeyRef" in src or "secretKeyRef" in src:
            kind, ref = ("ConfigMap", src["configMapKeyRef"]) if "configMapKeyRef" in src else \
                ("Secret", src["secretKeyRef"])
            env[name] = data(kind, ref["name"])[ref["key"]].decode()
        else:
            env[name] = ""
    return env


def container_port(container: dict, port: object) -> int:
    """A probe's or Service's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ManifestError(f"container {container.get('name')} has no port named {port}")


# ---- what stands in for the pod's mount namespace, cluster DNS and network namespace ----------

_PATH_CHAR = r"[\w.~/-]"


def rewrite_paths(text: str, mounts: Sequence[Tuple[str, str]]) -> str:
    """Every path that starts with one of the container paths (at a path-component boundary)
    gets the host path instead; the longest container path wins. One pass, so a host path that
    lies under another container path (the work directory under /tmp) is never rewritten twice."""
    table = {c.rstrip("/"): h for c, h in mounts}
    if not table:
        return text
    alternatives = "|".join(re.escape(c) for c in sorted(table, key=len, reverse=True))
    pattern = rf"(?<!{_PATH_CHAR})({alternatives})(?=/|$|[^\w.~-])"
    return re.sub(pattern, lambda m: table[m.group(1)], text)


def service_host_forms(name: str, namespace: str) -> List[str]:
    """The names cluster DNS answers for a Service, from the pod's namespace."""
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}"]


@dataclass(frozen=True)
class HostTarget:
    """Where a Service name leads here: the backing pod's address, and its ports by Service port."""
    ip: str
    ports: Mapping[int, int]


# A host name: not inside a longer name, not a path component (after one '/', unlike a URL's "//").
_HOST_RUN = re.compile(r"(?<![\w.-])(?<!(?<!/)/)([A-Za-z0-9][A-Za-z0-9.-]*)(?::(\d+))?(?![\w.-])")


def rewrite_hosts(text: str, hosts: Mapping[str, HostTarget]) -> str:
    """A Service name (any DNS form, with a trailing dot or not), with or without a port, becomes
    the backing pod's address, and a Service port its target port. Path components are left
    alone: a name right after a single '/' is not a host (after a URL's '//' it is)."""
    def repl(m: "re.Match[str]") -> str:
        host = m.group(1).rstrip(".")
        target = hosts.get(host)
        if target is None:
            return m.group(0)
        if m.group(2) is None:
            return target.ip
        port = int(m.group(2))
        return f"{target.ip}:{target.ports.get(port, port)}"
    return _HOST_RUN.sub(repl, text)


def rewrite_wildcards(text: str, pod_ip: str) -> str:
    """A listen address on every interface of the pod (0.0.0.0, [::], tcp://*) becomes the
    pod's own address: here all pods share the host's interfaces."""
    text = re.sub(r"(?<![\d.])0\.0\.0\.0(?![\d.])", pod_ip, text)
    text = text.replace("[::]", pod_ip)
    return re.sub(r"tcp://\*:", f"tcp://{pod_ip}:", text)
