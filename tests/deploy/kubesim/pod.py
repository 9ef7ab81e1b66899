"""A simulated pod: what the kubelet and the container runtime do for one pod of a Deployment.

    pending --start()--> running --terminate()--> terminating --(every container exited)--> gone

Each container (container.py) is one local process whose argv is the image's ENTRYPOINT/CMD
overridden by the container's command/args, $(VAR)-expanded from its env, then localized
(manifest.rewrite_*: mount paths, Service names, wildcard addresses). The pod's volumes are files
under the pod's directory. terminate() is a deletion: the pod leaves the endpoints at once, then
every container stops as the kubelet stops it.
"""
import asyncio
import os
import signal
import stat
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from . import manifest as mf
from .container import SimContainer, Termination


@dataclass(frozen=True)
class Image:
    """The container image, as far as the pod sees it: its ENTRYPOINT and CMD, and where its files
    are on this host (for rewriting paths that name them)."""
    entrypoint: Tuple[str, ...]
    cmd: Tuple[str, ...]
    files: Tuple[Tuple[str, str], ...]  # (path in the image, path here)


@dataclass
class Runtime:
    """What every pod of the simulated node shares."""
    image: Image
    work_dir: str
    data: Callable[[str, str], Dict[str, bytes]]           # (kind, name) -> ConfigMap / Secret data
    hosts: Callable[[str], Mapping[str, mf.HostTarget]]    # namespace -> Service names there
    base_env: Mapping[str, str]
    log: Callable[[str], None]


class SimPod:
    def __init__(self, name: str, namespace: str, ip: str, template: dict, owner: str, revision: str,
                 runtime: Runtime, now: Callable[[], float]):
        self.name = name
        self.namespace = namespace
        self.ip = ip
        self.labels = dict(template.get("metadata", {}).get("labels") or {})
        self.annotations = dict(template.get("metadata", {}).get("annotations") or {})
        self.spec = template["spec"]
        self.owner = owner
        self.revision = revision
        self.runtime = runtime
        self.now = now
        self.dir = os.path.join(runtime.work_dir, "pods", name)
        self.grace_s = int(self.spec.get("terminationGracePeriodSeconds", 30))
        self.created = now()
        self.worker_start = self.created
        self.deleting: Optional[float] = None
        self.deletion_reason = ""
        self.ready_since: Optional[float] = None
        self.containers: List[SimContainer] = []
        self.events: List[Tuple[float, str]] = []
        self._tasks: List[asyncio.Task] = []
        self._mounts: Dict[str, List[Tuple[str, str]]] = {}
        self._volume_dirs: Dict[str, str] = {}

    # ---- status --------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.deleting is None and bool(self.containers) and all(c.ready for c in self.containers)

    @property
    def restarts(self) -> List[str]:
        return [r for c in self.containers for r in c.restarts]

    def available(self, min_ready_s: float) -> bool:
        return self.ready and self.ready_since is not None and self.now() - self.ready_since >= min_ready_s

    def readiness_changed(self) -> None:
        if self.ready and self.ready_since is None:
            self.ready_since = self.now()
            self.event("Ready")
        elif not self.ready and self.ready_since is not None:
            self.ready_since = None
            self.event("not Ready")

    def event(self, text: str) -> None:
        self.events.append((self.now(), text))
        self.runtime.log(f"{self.name}: {text}")

    # ---- localizing what the manifests say -----------------------------------------------------

    def localize(self, text: str, container: Optional[dict] = None) -> str:
        """Container paths, Service names and wildcard addresses as they are on this host."""
        mounts = list(self.runtime.image.files)
        mounts += self._mounts.get((container or self.spec["containers"][0])["name"], [])
        text = mf.rewrite_paths(text, mounts)
        text = mf.rewrite_hosts(text, self.runtime.hosts(self.namespace))
        return mf.rewrite_wildcards(text, self.ip)

    def localize_program(self, path: str) -> str:
        return dict(self.runtime.image.files).get(path, path)

    def fields(self) -> mf.PodFields:
        return mf.PodFields(self.name, self.namespace, self.ip, f"uid-{self.name}", "kubesim",
                            "127.0.0.1", self.labels, self.annotations,
                            self.spec.get("serviceAccountName", "default"))

    # ---- volumes -------------------------------------------------------------------------------

    def _plan_mounts(self) -> None:
        volumes = {v["name"]: v for v in self.spec.get("volumes") or []}
        for v in volumes:
            self._volume_dirs[v] = os.path.join(self.dir, "volumes", v)
        for c in self.spec["containers"]:
            mounts = []
            for m in c.get("volumeMounts") or []:
                if m["name"] not in volumes:
                    raise mf.ManifestError(f"pod {self.name}: mount of unknown volume {m['name']}")
                host = self._volume_dirs[m["name"]]
                mounts.append((m["mountPath"], os.path.join(host, m["subPath"]) if m.get("subPath") else host))
            self._mounts[c["name"]] = mounts

    def _write_volumes(self) -> None:
        mounting = {m["name"]: c for c in self.spec["containers"] for m in c.get("volumeMounts") or []}
        for v in self.spec.get("volumes") or []:
            target = self._volume_dirs[v["name"]]
            os.makedirs(target, exist_ok=True)
            if "emptyDir" in v:
                continue
            if "configMap" in v or "secret" in v:
                secret = "secret" in v
                src = v["secret"] if secret else v["configMap"]
                data = self.runtime.data("Secret" if secret else "ConfigMap",
                                         src["secretName"] if secret else src["name"])
                files = {i["key"]: i["path"] for i in src.get("items") or []} or {k: k for k in data}
                for key, rel in files.items():
                    content = data[key]
                    if not secret:  # the one liberty: paths in the config file, as mounted here
                        content = self.localize(content.decode(), mounting.get(v["name"])).encode()
                    path = os.path.join(target, rel)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as f:
                        f.write(content)
                    # Secrets: 0400, owned by whoever runs the test (the pod's fsGroup and the
                    # manifests' 0440 need a second user; the product accepts both).
                    os.chmod(path, stat.S_IRUSR if secret else int(src.get("defaultMode", 0o644)))
                continue
            raise mf.ManifestError(f"pod {self.name}: volume {v['name']} of kind "
                                   f"{sorted(k for k in v if k != 'name')} is not simulated")

    # ---- life ----------------------------------------------------------------------------------

    def _argv(self, c: dict, env: Mapping[str, str]) -> List[str]:
        image = self.runtime.image
        if "command" in c:
            argv = list(c["command"]) + list(c.get("args") or [])
        else:
            argv = list(image.entrypoint) + list(c["args"] if "args" in c else image.cmd)
        argv = [self.localize(mf.expand(str(a), env.get), c) for a in argv]
        argv[0] = self.localize_program(argv[0])
        return argv

    def _env(self, c: dict) -> Dict[str, str]:
        env = mf.container_env(c, self.fields(), self.runtime.data, {})
        env = {k: (v if k == "HOSTNAME" else self.localize(v, c)) for k, v in env.items()}
        return {**self.runtime.base_env, **env}

    async def start(self) -> None:
        for key in ("initContainers", "ephemeralContainers"):
            if self.spec.get(key):
                raise mf.ManifestError(f"pod {self.name}: {key} are not simulated")
        os.makedirs(self.dir, exist_ok=True)
        self._plan_mounts()
        self._write_volumes()
        for c in self.spec["containers"]:
            env_container_view = mf.container_env(c, self.fields(), self.runtime.data, {})
            self.containers.append(SimContainer(self, c, self._argv(c, env_container_view), self._env(c)))
        self.worker_start = self.now()
        for c in self.containers:
            await c.start()
            self._tasks.append(asyncio.ensure_future(c.supervise()))
            self._tasks += [asyncio.ensure_future(c.probe_loop(k)) for k in c.probes]
        self.event(f"started at {self.ip}: {' '.join(self.containers[0].argv)}")

    def mark_deleted(self, reason: str) -> None:
        """The API server's part of a deletion (a deletionTimestamp): the pod leaves the endpoints
        and the controllers stop counting it at once, before the kubelet acts."""
        if self.deleting is None:
            self.deleting = self.now()
            self.deletion_reason = reason
            self.ready_since = None
            self.event(f"deleting ({reason}), grace {self.grace_s} s")

    async def terminate(self, reason: str) -> List[Termination]:
        """Deletion: out of the endpoints at once; preStop, SIGTERM, SIGKILL at the grace period."""
        self.mark_deleted(reason)
        results = await asyncio.gather(*(c.stop(reason, self.grace_s) for c in self.containers))
        for task in self._tasks:
            task.cancel()
        return list(results)

    def failures(self) -> List[BaseException]:
        """Exceptions that ended this pod's probe or supervision tasks (a bug, or something the
        manifests ask that is not simulated)."""
        return [t.exception() for t in self._tasks if t.done() and not t.cancelled() and t.exception()]

    def kill_processes(self) -> None:
        """After a failure or a timeout: SIGKILL whatever still runs (safe once the loop is gone)."""
        for c in self.containers:
            if c.proc is not None and c.proc.returncode is None:
                try:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
