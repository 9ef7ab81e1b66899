"""The test's story (kubelet_sim.py's docstring): bring the manifests up, put the load on, measure
the autoscaler's signal at the first two worker counts, roll every worker, scale in, stop the
load, replay it calmly, tear down; then the checks of report.py over what was recorded.

    start --> load --> measure(2) --> scale 4 --> measure(4) --> rollout restart --> scale 1
          --> stop load --> scale 2 --> replay --> teardown --> checks
"""
import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from . import manifest as mf
from . import report
from .autoscale import Autoscaler, Scrape, parse_prometheus
from .cluster import SimCluster
from .pod import Image, SimPod
from .probe import http_get
from .secrets import SecretMaker

LOAD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "load.py")


@dataclass
class ScenarioConfig:
    streams: int
    replicas: Tuple[int, int, int]  # measured, measured and rolled, scaled in to
    scrapes: int
    adapters: str
    work_dir: str
    verbose: bool = False
    settle_s: float = 4.0           # after a scale step is Ready, before measuring
    hold_s: float = 5.0             # load on the scaled-in cluster before it stops
    ready_timeout_s: float = 150.0
    request_timeout_s: float = 150.0
    replay_concurrency: int = 16


@dataclass
class Measurement:
    """The autoscaler's figure for one metric, scrape by scrape, at a number of workers."""
    workers: int
    metric: str
    threshold: float
    compared: str       # how the pods' values make the figure
    waiting_only: bool  # the metric reads vllm:num_requests_waiting alone (the one checked)
    figures: List[float] = field(default_factory=list)
    desired: List[int] = field(default_factory=list)

    @property
    def median(self) -> float:
        return report.median(self.figures)


class LoadProcess:
    """load.py run, as its own process (the event loop that probes stays responsive)."""

    def __init__(self, work_dir: str):
        self.out = os.path.join(work_dir, "load.json")
        self.stop_file = os.path.join(work_dir, "load.stop")
        self.log = os.path.join(work_dir, "load.log")
        self.proc: Optional[asyncio.subprocess.Process] = None

    async def start(self, endpoint: str, config: ScenarioConfig) -> None:
        with open(self.log, "ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, LOAD_SCRIPT, "run", f"tcp://{endpoint}", self.out, self.stop_file,
                "--streams", str(config.streams), "--adapters", config.adapters,
                "--request-timeout", str(config.request_timeout_s), stdout=log, stderr=asyncio.subprocess.STDOUT)

    async def stop(self, timeout_s: float) -> dict:
        open(self.stop_file, "w").close()
        rc = await asyncio.wait_for(self.proc.wait(), timeout_s)
        if rc != 0:
            raise RuntimeError(f"the load exited with {rc} (see {self.log})")
        with open(self.out) as f:
            return json.load(f)


async def replay(endpoint: str, config: ScenarioConfig, timeout_s: float) -> dict:
    out = os.path.join(config.work_dir, "replay.json")
    with open(os.path.join(config.work_dir, "load.log"), "ab") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, LOAD_SCRIPT, "replay", f"tcp://{endpoint}", os.path.join(config.work_dir, "load.json"),
            out, "--concurrency", str(config.replay_concurrency), stdout=log, stderr=asyncio.subprocess.STDOUT)
        rc = await asyncio.wait_for(proc.wait(), timeout_s)
    if rc != 0:
        raise RuntimeError(f"the replay exited with {rc}")
    with open(out) as f:
        return json.load(f)


def metrics_endpoint(pod: SimPod) -> Tuple[int, str, bool]:
    """Where Prometheus scrapes a pod (its prometheus.io annotations, else its readiness probe's
    port): port, path, https."""
    c = pod.spec["containers"][0]
    port = pod.annotations.get("prometheus.io/port") or c["readinessProbe"]["httpGet"]["port"]
    return (mf.container_port(c, port), pod.annotations.get("prometheus.io/path", "/metrics"),
            pod.annotations.get("prometheus.io/scheme", "http") == "https")


class Scenario:
    def __init__(self, manifests: mf.Manifests, autoscaler: Autoscaler, image: Image, secrets: SecretMaker,
                 config: ScenarioConfig):
        self.manifests = manifests
        self.autoscaler = autoscaler
        self.workers = autoscaler.target
        self.image = image
        self.secrets = secrets
        self.config = config
        self.cluster: Optional[SimCluster] = None
        self.phases: List[Tuple[str, float]] = []
        self.measurements: List[Measurement] = []
        self.load: Optional[dict] = None
        self.replayed: Optional[dict] = None
        self.violations: List[str] = []
        self.endpoint = ""
        self.manifest_replicas = int(manifests.get("Deployment", self.workers)["spec"].get("replicas", 1))
        self._log = open(os.path.join(config.work_dir, "events.log"), "a")

    def log(self, text: str) -> None:
        line = f"{self.cluster.now() if self.cluster else 0.0:8.2f}  {text}"
        self._log.write(line + "\n")
        self._log.flush()
        if self.config.verbose:
            print(line, flush=True)

    async def phase(self, name: str, coro) -> object:
        start = self.cluster.now()
        self.log(f"== {name}")
        result = await coro
        self.phases.append((name, self.cluster.now() - start))
        return result

    # ---- the story -----------------------------------------------------------------------------

    async def run(self) -> bool:
        first, second, last = self.config.replicas
        self.manifests.get("Deployment", self.workers)["spec"]["replicas"] = first
        runtime = dict(image=self.image, work_dir=self.config.work_dir, base_env={"PATH": os.environ["PATH"]},
                       log=self.log)
        self.cluster = SimCluster(self.manifests, runtime, self.secrets, seed=os.getpid())
        try:
            await self.phase("start: every Deployment Ready", self.cluster.start(self.config.ready_timeout_s))
            self.endpoint = await self.phase("router Service has a Ready endpoint", self.client_endpoint())
            loader = LoadProcess(self.config.work_dir)
            await loader.start(self.endpoint, self.config)
            await self.phase(f"load on {first} workers, then measure", self.measure_after_settling(first))
            await self.scale(f"scale out to {second}", second)
            await self.phase(f"measure at {second}", self.measure_after_settling(second))
            await self.scale(f"rolling restart of {second}", second, restart=True)
            await self.scale(f"scale in to {last}", last)
            await self.phase(f"load on {last}", asyncio.sleep(self.config.hold_s))
            self.load = await self.phase("stop the load (in flight finishes)",
                                         loader.stop(self.config.request_timeout_s + 30))
            # Two workers replay in half the time one takes.
            await self.scale(f"scale out to {first} for the replay", first)
            self.replayed = await self.phase("calm replay", replay(self.endpoint, self.config, 240))
            await self.phase("teardown", self.cluster.delete_all(120))
        except BaseException:
            self.kill_everything()
            raise
        self.check()
        return True

    async def scale(self, name: str, replicas: int, restart: bool = False) -> None:
        """kubectl scale (and rollout restart), then wait until the workers have settled."""
        dep = self.cluster.deployments[self.workers]
        dep.scale(replicas)
        if restart:
            dep.restart()
        timeout = self.config.ready_timeout_s * (replicas if restart else 1)
        await self.phase(name, self.cluster.wait_settled(self.workers, timeout))

    async def client_endpoint(self) -> str:
        """HOST:PORT of the client Service's ZeroMQ port, once it has a Ready endpoint."""
        svc = next((s for s in self.cluster.services if s.port_named("zmq")), None)
        if svc is None:
            raise mf.ManifestError("no Service has a port named zmq (the clients' ZeroMQ port)")
        await self.cluster.wait(lambda: self.cluster.endpoints(svc, "zmq"), self.config.ready_timeout_s,
                                f"Service {svc.name} Ready")
        return self.cluster.endpoints(svc, "zmq")[0]

    async def measure_after_settling(self, workers: int) -> None:
        await asyncio.sleep(self.config.settle_s)
        ms = [Measurement(workers, m.name, m.threshold, m.compared, m.metrics == {"vllm:num_requests_waiting"})
              for m in self.autoscaler.metrics]
        for _ in range(self.config.scrapes):
            pods = [p for p in self.cluster.pods_of(self.workers) if p.deleting is None]
            texts = await asyncio.gather(*(self.scrape(p) for p in pods))
            scrapes = [Scrape(p.name, p.namespace, parse_prometheus(t)) for p, t in zip(pods, texts) if t is not None]
            for m, metric in zip(ms, self.autoscaler.metrics):
                m.figures.append(metric.figure(scrapes))
                m.desired.append(metric.desired_replicas(scrapes, len(pods)))
            await asyncio.sleep(1.0)
        self.measurements += ms
        for m in ms:
            self.log(f"measured {m.metric} at {workers} workers: {m.figures}")

    async def scrape(self, pod: SimPod) -> Optional[str]:
        port, path, https = metrics_endpoint(pod)
        status, body = await http_get(pod.ip, port, path, https=https, timeout=2.0)
        return body.decode() if status == 200 else None

    def kill_everything(self) -> None:
        if self.cluster is not None:
            for p in self.cluster.pods:
                p.kill_processes()

    # ---- verdicts ------------------------------------------------------------------------------

    def worker_stops(self) -> List[report.StopView]:
        out = []
        for pod in self.cluster.all_pods():
            for t in self.cluster.terminations.get(pod.name, []):
                if pod.owner == self.workers:
                    out.append(self.stop_view(pod, t))
        return out

    @staticmethod
    def stop_view(pod: SimPod, t) -> report.StopView:
        return report.StopView(pod.name, t.reason, t.grace_s, t.rc, t.sigkilled, t.exit_after_s,
                               t.said_not_ready(), t.ready_again_after_not_ready(), [c for _, c in t.ready_codes])

    def check(self) -> None:
        v = self.violations
        records = self.load["records"]
        v += report.check_replies(records)
        if self.load["stray"]:
            v.append(f"frames for no request of this client: {self.load['stray'][:3]}")
        if not any(r["resumed"] for r in records):
            v.append("no request moved mid-stream: the drains did not happen under load")
        v += report.check_replay(self.replayed)
        v += report.check_restarts({p.name: p.restarts for p in self.cluster.all_pods()})
        v += report.check_stops(self.worker_stops())
        for name, dep in self.cluster.deployments.items():
            for r in dep.rollout_deletions:
                if r.available_after < r.min_available:
                    v.append(f"{name}: the rollout deleted {r.pod} leaving {r.available_after} available "
                             f"(< {r.min_available})")
        first, second = self.config.replicas[:2]
        for m in self.measurements:
            if not m.waiting_only:
                continue
            if m.workers == first and not m.median > m.threshold:
                v.append(f"{m.metric}: {m.median:.2f} at {first} workers is not above the threshold {m.threshold:g}")
            # At the larger count the figure must not make the autoscaler add workers: below the
            # threshold, within the HPA's 10% tolerance (a ratio in [0.9, 1.1] leaves the replicas
            # as they are). Measured medians were 0.5-3.75 against 4 here; with 4 workers on 2
            # cores, requests that arrive during a step count as waiting until the next one.
            if m.workers == second and not m.median < m.threshold * 1.1:
                v.append(f"{m.metric}: {m.median:.2f} at {second} workers would scale out (threshold {m.threshold:g}, "
                         f"HPA tolerance 10%)")

    # ---- the report ----------------------------------------------------------------------------

    def summary(self, total_s: float) -> str:
        out = [f"kubelet_sim: {len(self.manifests.objects)} objects; workers: Deployment {self.workers} "
               f"(manifest replicas {self.manifest_replicas}); pods' work directory {self.config.work_dir}"]
        if self.phases:
            out += ["", report.table(["phase", "seconds"], self.phases)]
        if self.cluster is not None:
            out += ["", self.pod_table()]
        if self.load is not None:
            out += ["", self.load_table()]
        if self.measurements:
            out += ["", self.autoscaler_table()]
        out += ["", f"total {total_s:.1f} s"]
        if self.violations:
            out += ["", "VIOLATIONS:"] + [f"  - {x}" for x in self.violations]
        return "\n".join(out)

    def pod_table(self) -> str:
        rows = []
        for p in self.cluster.all_pods():
            t = (self.cluster.terminations.get(p.name) or [None])[0]
            ready_at = next((at for at, e in p.events if e == "Ready"), None)
            rows.append([p.name, p.ip, p.created, None if ready_at is None else ready_at - p.created,
                         p.deletion_reason or None, None if t is None else t.prestop_s,
                         None if t is None else t.exit_after_s, None if t is None else t.rc,
                         p.grace_s, None if t is None else report.compress([c for _, c in t.ready_codes]),
                         len(p.restarts)])
        headers = ["pod", "ip", "created s", "Ready after s", "deleted for", "preStop s", "exit after s", "rc",
                   "grace s", "/ready from just before SIGTERM to exit", "restarts"]
        return report.table(headers, rows)

    def load_table(self) -> str:
        recs = self.load["records"]
        done = [r for r in recs if r["terminal"] == "done"]
        tokens = sum(len(r["tokens"]) for r in recs)
        rows = [["requests", len(recs)], ["done", len(done)],
                ["errors", sum(1 for r in recs if r["terminal"] == "error")],
                ["lost (no terminal reply)", sum(1 for r in recs if r["terminal"] is None)],
                ["moved mid-stream (usage.resumed > 0)", sum(1 for r in recs if r["resumed"])],
                ["greedy / seeded", f"{sum(1 for r in recs if r['request'].get('temperature') == 0.0)} / "
                                    f"{sum(1 for r in recs if 'seed' in r['request'])}"],
                ["with an adapter", f"{sum(1 for r in recs if 'adapter' in r['request'])} "
                                    f"({','.join(self.load['adapters']) or 'none served'})"],
                ["streams", self.load["streams"]],
                ["tokens streamed", f"{tokens} in {self.load['seconds']:.1f} s "
                                    f"({tokens / self.load['seconds']:.0f}/s)"]]
        if self.replayed is not None:
            rows.append(["calm replay", f"{self.replayed['replayed']} requests in {self.replayed['seconds']:.1f} s, "
                                        f"{len(self.replayed['differences'])} differ"])
        return report.table(["load", "value"], rows)

    def autoscaler_table(self) -> str:
        rows = []
        for m in self.measurements:
            rows.append([m.workers, m.metric, m.compared, " ".join(f"{x:g}" for x in m.figures), m.median,
                         m.threshold, m.median / m.threshold, report.median(m.desired)])
        out = [report.table(["workers", "metric (" + self.autoscaler.metrics[0].source + ")", "as compared",
                             "per scrape", "median", "threshold", "median/threshold", "desired replicas"], rows)]
        for workers in sorted({m.workers for m in self.measurements}):
            desired = [report.median(m.desired) for m in self.measurements if m.workers == workers]
            out.append(f"at {workers} workers the autoscaler asks for {max(desired):g} (the largest of its metrics)")
        return "\n".join(out)

    def print_logs(self, lines: int = 12) -> None:
        """The last lines of every pod's container logs and of the load."""
        if self.cluster is None:
            return
        paths = [(p.name, c.log_path) for p in self.cluster.all_pods() for c in p.containers]
        paths.append(("load", os.path.join(self.config.work_dir, "load.log")))
        for name, path in paths:
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-lines:]
                print(f"--- {name}: {path}")
                print("".join(tail), end="")
