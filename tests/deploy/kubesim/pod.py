"""A simulated pod: what the kubelet and the container runtime do for one pod of a Deployment.

    pending --start()--> running --terminate()--> terminating --(every container exited)--> gone

Each container is one local process (its own session, so signals reach it alone) whose argv is
the image's ENTRYPOINT/CMD overridden by the container's command/args, $(VAR)-expanded from its
env, then localized (manifest.rewrite_*: mount paths, Service names, wildcard addresses). The
pod's volumes are files under the pod's directory. Probes run as probe.py describes; a container
that exits, or fails its liveness or startup probe, is restarted after CrashLoopBackOff's delay
and counted. terminate() runs what the kubelet runs on deletion: the preStop hook, SIGTERM,
SIGKILL when the grace period (counted from the deletion) is over.

While a container stops, the pod also watches its readiness endpoint every 10 ms from just before
SIGTERM until the process exits: not something the kubelet does, but what the test checks (a
worker says 503 on /ready before it goes, and never 200 again after that).
"""
import asyncio
import os
import signal
import stat
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from . import manifest as mf
from .probe import (ProbeKind, ProbeSpec, ProbeState, Verdict, http_get, next_tick, probe_due,
                    probe_succeeded, stop_timeout)

BACKOFF_INITIAL_S = 10
BACKOFF_MAX_S = 300
READY_WATCH_INTERVAL_S = 0.01


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


@dataclass
class Termination:
    """One container's stop: when each step happened (loop time) and what it saw."""
    reason: str
    grace_s: int
    started: float
    prestop_s: float = 0.0
    sigterm_at: Optional[float] = None
    exited_at: Optional[float] = None
    rc: Optional[int] = None
    sigkilled: bool = False
    ready_codes: List[Tuple[float, Optional[int]]] = field(default_factory=list)

    @property
    def exit_after_s(self) -> Optional[float]:
        return None if self.exited_at is None else self.exited_at - self.started

    def said_not_ready(self) -> bool:
        return any(code == 503 for _, code in self.ready_codes)

    def ready_again_after_not_ready(self) -> bool:
        seen_503 = False
        for _, code in self.ready_codes:
            seen_503 = seen_503 or code == 503
            if seen_503 and probe_succeeded(code):
                return True
        return False


class SimContainer:
    def __init__(self, pod: "SimPod", spec: dict, argv: List[str], env: Dict[str, str]):
        self.pod = pod
        self.spec = spec
        self.name = spec["name"]
        self.argv = argv
        self.env = env
        self.log_path = os.path.join(pod.dir, f"{self.name}.log")
        self.probes: Dict[ProbeKind, Tuple[ProbeState, dict]] = {}
        for kind, key in ((ProbeKind.startup, "startupProbe"), (ProbeKind.liveness, "livenessProbe"),
                          (ProbeKind.readiness, "readinessProbe")):
            if key in spec:
                self.probes[kind] = (ProbeState(kind, ProbeSpec.from_manifest(spec[key])), spec[key])
        self.proc: Optional[asyncio.subprocess.Process] = None
        self.started_at: Optional[float] = None
        self.started = False           # the startup probe has succeeded (or there is none)
        self.generation = 0            # bumped at every (re)start: a probe of an older one is void
        self.restarts: List[str] = []  # the cause of each restart
        self.termination: Optional[Termination] = None
        self._pending_cause: Optional[str] = None
        self._stopping: Optional[asyncio.Task] = None

    @property
    def ready(self) -> bool:
        if self.proc is None or self.proc.returncode is not None or not self.started:
            return False
        if ProbeKind.readiness in self.probes:
            return self.probes[ProbeKind.readiness][0].verdict == Verdict.success
        return True

    async def start(self) -> None:
        self.generation += 1
        for state, _ in self.probes.values():
            state.reset()
        self.started = ProbeKind.startup not in self.probes
        with open(self.log_path, "ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, cwd=self.pod.dir, stdin=asyncio.subprocess.DEVNULL,
                stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        self.started_at = self.pod.now()
        self.pod.event(f"{self.name}: started pid {self.proc.pid}")

    async def supervise(self) -> None:
        """restartPolicy Always: a container that exits while the pod is not being deleted starts
        again after CrashLoopBackOff's delay (10 s, doubling, at most 300 s)."""
        backoff = BACKOFF_INITIAL_S
        while True:
            rc = await self.proc.wait()
            if self.pod.deleting is not None:
                return
            cause = self._pending_cause or f"exited with {rc}"
            self._pending_cause = None
            self.restarts.append(cause)
            self.pod.event(f"{self.name}: {cause}; restart {len(self.restarts)} in {backoff} s")
            await asyncio.sleep(backoff)
            if self.pod.deleting is not None:
                return
            backoff = min(BACKOFF_MAX_S, backoff * 2)
            await self.start()

    async def probe_loop(self, kind: ProbeKind) -> None:
        state, raw = self.probes[kind]
        while self.pod.deleting is None or kind == ProbeKind.readiness:
            tick = next_tick(self.pod.worker_start, state.spec.period_s, self.pod.now())
            await asyncio.sleep(max(0.0, tick - self.pod.now()))
            if self.termination is not None and self.termination.exited_at is not None:
                return
            if not probe_due(kind, state, self.started_at, self.pod.now(), self.started,
                             self.pod.deleting is not None):
                continue
            generation = self.generation
            ok = await self.run_handler(raw, state.spec.timeout_s)
            if generation != self.generation:
                continue
            changed = state.record(ok)
            if changed is None:
                continue
            self.pod.event(f"{self.name}: {kind.value} probe -> {changed.value}")
            if kind == ProbeKind.startup and changed == Verdict.success:
                self.started = True
            elif changed == Verdict.failure and kind != ProbeKind.readiness:
                self._pending_cause = f"{kind.value} probe failed"
                grace = state.spec.grace_override_s
                asyncio.ensure_future(self.stop(f"{kind.value} probe failed",
                                                self.pod.grace_s if grace is None else int(grace)))
            self.pod.readiness_changed()

    async def run_handler(self, handler: dict, timeout_s: float) -> bool:
        """One probe or hook action (httpGet, tcpSocket, exec) against this container."""
        if "httpGet" in handler:
            h = handler["httpGet"]
            headers = {x["name"]: x["value"] for x in h.get("httpHeaders") or []}
            status, _ = await http_get(h.get("host", self.pod.ip), mf.container_port(self.spec, h["port"]),
                                       h.get("path", "/"), https=h.get("scheme", "HTTP") == "HTTPS",
                                       timeout=timeout_s, headers=headers)
            return probe_succeeded(status)
        if "tcpSocket" in handler:
            t = handler["tcpSocket"]
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection(
                    t.get("host", self.pod.ip), mf.container_port(self.spec, t["port"])), timeout_s)
                w.close()
                return True
            except (OSError, asyncio.TimeoutError):
                return False
        if "exec" in handler:
            argv = [self.pod.localize(a, self.spec) for a in handler["exec"]["command"]]
            argv[0] = self.pod.localize_program(argv[0])
            proc = await asyncio.create_subprocess_exec(*argv, env=self.env, cwd=self.pod.dir,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.DEVNULL)
            try:
                return await asyncio.wait_for(proc.wait(), timeout_s) == 0
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                return False
        raise mf.ManifestError(f"container {self.name}: a probe or hook of kind {sorted(handler)} is not simulated")

    def stop(self, reason: str, grace_s: int) -> "asyncio.Task":
        """Stops the running process (once; later calls join the first)."""
        if self._stopping is None or self._stopping.done():
            self._stopping = asyncio.ensure_future(self._stop(reason, grace_s))
        return self._stopping

    async def _stop(self, reason: str, grace_s: int) -> Termination:
        t = Termination(reason, grace_s, self.pod.now())
        if self.pod.deleting is not None:
            t.started = self.pod.deleting
            self.termination = t
        proc = self.proc
        pre_stop = (self.spec.get("lifecycle") or {}).get("preStop")
        if pre_stop and proc.returncode is None:
            await self.run_pre_stop(pre_stop, max(2, grace_s) - (self.pod.now() - t.started))
        t.prestop_s = self.pod.now() - t.started
        timeout = stop_timeout(grace_s, t.prestop_s)
        watch = None
        if self.termination is t and proc.returncode is None:
            await self.record_readiness(t, proc)  # what it said before SIGTERM
            watch = asyncio.ensure_future(self.watch_readiness(t, proc))
        if proc.returncode is None:
            t.sigterm_at = self.pod.now()
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except asyncio.TimeoutError:
                t.sigkilled = True
                self.pod.event(f"{self.name}: still running {timeout} s after SIGTERM: SIGKILL")
                os.killpg(proc.pid, signal.SIGKILL)
        t.rc = await proc.wait()
        t.exited_at = self.pod.now()
        if watch is not None:
            await watch
        self.pod.event(f"{self.name}: exited {t.rc} {t.exit_after_s:.2f} s after {reason}")
        return t

    async def run_pre_stop(self, hook: dict, budget_s: float) -> None:
        """The preStop hook, cut off when the grace period is used up (the kubelet gives up waiting)."""
        self.pod.event(f"{self.name}: preStop {sorted(hook)[0]}")
        if "sleep" in hook:
            await asyncio.sleep(min(float(hook["sleep"]["seconds"]), max(0.0, budget_s)))
            return
        try:
            await asyncio.wait_for(self.run_handler(hook, max(0.1, budget_s)), max(0.1, budget_s))
        except asyncio.TimeoutError:
            pass

    async def record_readiness(self, t: Termination, proc) -> None:
        """One look at the readiness endpoint (httpGet probes only), kept if the process still runs."""
        probe = self.probes.get(ProbeKind.readiness, (None, None))[1]
        if probe is None or "httpGet" not in probe:
            return
        h = probe["httpGet"]
        status, _ = await http_get(h.get("host", self.pod.ip), mf.container_port(self.spec, h["port"]),
                                   h.get("path", "/"), https=h.get("scheme", "HTTP") == "HTTPS", timeout=0.5)
        if proc.returncode is None:
            t.ready_codes.append((self.pod.now(), status))

    async def watch_readiness(self, t: Termination, proc) -> None:
        """What the readiness endpoint says from SIGTERM until the process is gone (the test's check)."""
        while proc.returncode is None:
            await self.record_readiness(t, proc)
            await asyncio.sleep(READY_WATCH_INTERVAL_S)


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
