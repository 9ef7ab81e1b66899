"""Rendered manifests as lorafleet sees them: the objects of one target, each container's command
line after the kubelet's $(VAR) expansion, and what that command line makes the program bind,
serve and read (from its flags and, for the router, from the cluster.toml it is given).

Used by check_consistency.py (the structure) and check_args.py (the program's own argument check).
"""
import base64
import os
import re
import tomllib
from dataclasses import dataclass, field

import yaml

# What the program serves on an HTTP port: the router's [http] listen (docs/http.md) and a worker's
# --probe-listen (the probe server) both answer these.
PROBE_PATHS = ("/health", "/ready", "/metrics")

# Flags whose value is a file the program reads; TOML keys likewise ((table, key) pairs).
FILE_FLAGS = ("--tls-ca", "--tls-cert", "--tls-key", "--join-token-file", "--api-key-file",
              "--model", "--adapters", "--draft-model")
TOML_FILES = (("http", "tls_cert"), ("http", "tls_key"), ("auth", "key_file"),
              ("security.nodes", "ca_file"), ("security.nodes", "certificate"),
              ("security.nodes", "key"), ("security.nodes", "join_token_file"),
              ("cluster", "model_dir"), ("cluster", "tokenizer_dir"), ("cluster", "adapter_dir"))


def report_per_file(tool, files, check):
    """Runs `check(path) -> [problem]` on each rendered file, prints `TOOL: NAME: ok` or its
    problems, then `TOOL: N passed, M failed`; the exit status (1 when any file failed)."""
    failed = 0
    for path in files:
        problems = check(path)
        name = os.path.basename(path).removesuffix(".yaml")
        print(f"{tool}: {name}: " + ("ok" if not problems else f"FAILED ({len(problems)} problem(s))"))
        for p in problems:
            print(f"  {p}")
        failed += bool(problems)
    print(f"{tool}: {len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


def load(path):
    """{(kind, name): object} of a rendered file."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def expand(text, env):
    """The kubelet's $(VAR) expansion: $(NAME) becomes env[NAME] when defined and stays as written
    otherwise; $$ is a literal $ (so $$(NAME) is not expanded)."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", sub, text)


def flag(args, name):
    """The value after `name` in args (the last one when repeated), or None."""
    value = None
    for i, a in enumerate(args[:-1]):
        if a == name:
            value = args[i + 1]
    return value


def host_port(text):
    """("HOST", PORT) of HOST:PORT or tcp://HOST:PORT."""
    text = text.removeprefix("tcp://")
    host, _, port = text.rpartition(":")
    return host, int(port)


@dataclass
class Port:
    number: int
    what: str                        # http, probe, zmq, cluster
    paths: tuple = ()                # HTTP paths served; () for non-HTTP ports
    scheme: str = "HTTP"


@dataclass
class Container:
    """One container of a Deployment, with the program's view of its command line."""
    deployment: dict
    spec: dict
    env: dict                        # literal env values; fieldRef values as in `field_values`
    args: list                       # after $(VAR) expansion
    role: str = ""                   # router or worker
    config: dict = field(default_factory=dict)     # the router's parsed cluster.toml
    config_path: str = ""
    ports: dict = field(default_factory=dict)      # port number -> Port the program binds
    files: list = field(default_factory=list)      # (path, where it is named) the program reads

    @property
    def pod(self):
        return self.deployment["spec"]["template"]["spec"]

    @property
    def name(self):
        return f"{self.deployment['metadata']['name']}/{self.spec['name']}"

    def container_port(self, ref):
        """A probe's or Service's port (a name or a number) as the container's port number."""
        if isinstance(ref, int):
            return ref
        for p in self.spec.get("ports", []):
            if p.get("name") == ref:
                return p["containerPort"]
        return None

    def mount_for(self, path):
        """The volumeMount whose mountPath holds path (the longest), or None."""
        best = None
        for m in self.spec.get("volumeMounts", []):
            mp = m["mountPath"].rstrip("/")
            if path.startswith(mp + "/") and (best is None or len(mp) > len(best["mountPath"])):
                best = m
        return best

    def volume(self, name):
        return next((v for v in self.pod.get("volumes", []) if v["name"] == name), None)


# Values the kubelet fills from the pod (env valueFrom.fieldRef), for expanding args here.
FIELD_VALUES = {"status.podIP": "127.0.0.1", "metadata.name": "lorafleet-worker-0", "spec.nodeName": "node-0"}


def container_env(spec):
    env = {}
    for e in spec.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = FIELD_VALUES.get(e["valueFrom"]["fieldRef"]["fieldPath"], "")
    return env


def config_map_file(objects, container, path):
    """The text of a file that a ConfigMap volume puts at path, or None."""
    mount = container.mount_for(path)
    if not mount:
        return None
    vol = container.volume(mount["name"])
    if not vol or "configMap" not in vol:
        return None
    cm = objects.get(("ConfigMap", vol["configMap"]["name"]))
    key = volume_key(vol["configMap"], path[len(mount["mountPath"].rstrip("/")) + 1:])
    return None if cm is None or key is None else cm.get("data", {}).get(key)


def volume_key(source, relative):
    """The ConfigMap / Secret key a volume shows at `relative` (its items, else the key itself)."""
    items = source.get("items")
    if not items:
        return relative if "/" not in relative else None
    return next((i["key"] for i in items if i["path"] == relative), None)


def secret_value(secret, key):
    if key in secret.get("stringData", {}):
        return secret["stringData"][key].encode()
    if key in secret.get("data", {}):
        return base64.b64decode(secret["data"][key])
    return None


def toml_get(config, dotted, key):
    table = config
    for part in dotted.split("."):
        table = table.get(part, {})
    return table.get(key)


def containers(objects):
    """Every container of every Deployment, with the program's view filled in."""
    out = []
    for (kind, _), d in sorted(objects.items()):
        if kind != "Deployment":
            continue
        for spec in d["spec"]["template"]["spec"]["containers"]:
            env = container_env(spec)
            args = [expand(str(a), env) for a in spec.get("command", []) + spec.get("args", [])]
            c = Container(deployment=d, spec=spec, env=env, args=args)
            describe_program(objects, c)
            out.append(c)
    return out


def describe_program(objects, c):
    """Fills role, config, ports and files from c.args (the image's ENTRYPOINT is lorafleet)."""
    args = c.args
    if len(args) >= 2 and args[0] == "node" and not args[1].startswith("--"):
        c.role = "router"
        c.config_path = args[1]
        c.files.append((args[1], "the config argument"))
        text = config_map_file(objects, c, args[1])
        if text is not None:
            c.config = tomllib.loads(text)
            describe_router_ports(c)
            for table, key in TOML_FILES:
                value = toml_get(c.config, table, key)
                if value:
                    c.files.append((value, f"[{table}] {key}"))
    elif args[:1] == ["node"] and "--join" in args:
        c.role = "worker"
        probe = flag(args, "--probe-listen")
        if probe:
            c.ports[host_port(probe)[1]] = Port(host_port(probe)[1], "probe", PROBE_PATHS)
    for name in FILE_FLAGS:
        value = flag(args, name)
        if value:
            c.files.append((value, name))


def describe_router_ports(c):
    cfg = c.config
    http = cfg.get("http", {})
    if "listen" in http:
        port = host_port(http["listen"])[1]
        c.ports[port] = Port(port, "http", PROBE_PATHS, "HTTPS" if http.get("tls_cert") else "HTTP")
    listen = cfg.get("gateway", {}).get("listen", "tcp://127.0.0.1:5555")
    if listen.startswith("tcp://"):
        port = host_port(listen)[1]
        c.ports[port] = Port(port, "zmq")
    router = cfg.get("cluster", {}).get("router_node")
    node = next((n for n in cfg.get("nodes", []) if n.get("name") == router), {})
    if "port" in node:
        c.ports[node["port"]] = Port(node["port"], "cluster")


def selects(selector, labels):
    """Does a label selector ({matchLabels, matchExpressions} or a Service's map) match labels?"""
    if selector is None:
        return False
    match = selector.get("matchLabels", selector if "matchExpressions" not in selector else {})
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for e in selector.get("matchExpressions", []):
        value, op = labels.get(e["key"]), e["operator"]
        if op == "In" and value not in e["values"] or op == "NotIn" and value in e.get("values", []):
            return False
        if op == "Exists" and value is None or op == "DoesNotExist" and value is not None:
            return False
    return True
