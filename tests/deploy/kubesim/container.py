"""One container of a simulated pod: its process, its probes, its restarts and its stop.

The argv and environment come made (pod.py localizes them). The process runs in its own session,
so signals reach it alone. Probes run as probe.py describes; a container that exits, or fails its
liveness or startup probe, is restarted after CrashLoopBackOff's delay and counted. stop() is the
kubelet's kill: the preStop hook, SIGTERM, SIGKILL when the grace period (counted from the pod's
deletion) is over.

While a deleted pod's container stops, its readiness endpoint is also watched every 10 ms from
just before SIGTERM until the process exits: not something the kubelet does, but what the test
checks (a worker says 503 on /ready before it goes, and never 200 again after that).
"""
import asyncio
import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from . import manifest as mf
from .probe import (ProbeKind, ProbeSpec, ProbeState, Verdict, http_get, next_tick, probe_due,
                    probe_succeeded, stop_timeout)

if TYPE_CHECKING:
    from .pod import SimPod

BACKOFF_INITIAL_S = 10
BACKOFF_MAX_S = 300
READY_WATCH_INTERVAL_S = 0.01


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
