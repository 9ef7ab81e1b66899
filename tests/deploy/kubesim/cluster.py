"""The simulated cluster: the API server's objects (pods, Services' endpoints), the Deployments'
controllers and one node's kubelet, all in one asyncio loop.

Pod addresses are loopback addresses of a /24 of 127.0.0.0/8 chosen per run (127.X.Y.11 upward,
never reused), so pods never share a port and nothing leaves the host. A Service name resolves to
its first backing pod that is not being deleted (what its ClusterIP would lead to); `endpoints`
are the Ready ones (all of them with publishNotReadyAddresses), as the EndpointSlice controller
publishes them.
"""
import asyncio
import json
import os
import random
from typing import Dict, List, Mapping

from . import manifest as mf
from .container import Termination
from .pod import Runtime, SimPod
from .rollout import SimDeployment, pod_suffix
from .secrets import SecretMaker


def pod_network(seed: int) -> str:
    """A /24 of loopback addresses for one run ("127.X.Y.")."""
    return f"127.{100 + seed % 100}.{(seed // 100) % 250 + 1}."


class SimCluster:
    def __init__(self, manifests: mf.Manifests, runtime_args: dict, secrets: SecretMaker, seed: int):
        self.manifests = manifests
        self.services = manifests.services()
        self.secrets = secrets
        self.pods: List[SimPod] = []
        self.terminations: Dict[str, List[Termination]] = {}
        self.deployments: Dict[str, SimDeployment] = {}
        self.gone: List[SimPod] = []  # deleted pods, for the report
        self._secret_data: Dict[str, Dict[str, bytes]] = {}
        self._net = pod_network(seed)
        self._next_host = 11
        self._rng = random.Random(seed)
        self._loop = asyncio.get_event_loop()
        self._t0 = self._loop.time()
        self._tasks: List[asyncio.Task] = []
        self._deleting: List[asyncio.Task] = []
        self.runtime = Runtime(data=self.data, hosts=self.hosts, **runtime_args)

    def now(self) -> float:
        """Seconds since the simulation began."""
        return self._loop.time() - self._t0

    # ---- what pods read ------------------------------------------------------------------------

    def data(self, kind: str, name: str) -> Dict[str, bytes]:
        """A ConfigMap as rendered; a Secret as made for the test (same keys, real material)."""
        if kind == "ConfigMap":
            return self.manifests.config_data(kind, name)
        if name not in self._secret_data:
            keys = self.manifests.config_data(kind, name).keys()
            self._secret_data[name] = self.secrets.make(name, keys)
        return self._secret_data[name]

    def backing_pods(self, svc: mf.Service, ready_only: bool) -> List[SimPod]:
        return [p for p in self.pods if p.namespace == svc.namespace and p.deleting is None
                and mf.selector_matches(svc.selector, p.labels) and (p.ready or not ready_only)]

    def hosts(self, namespace: str) -> Mapping[str, mf.HostTarget]:
        out: Dict[str, mf.HostTarget] = {}
        for svc in self.services:
            pods = self.backing_pods(svc, ready_only=False)
            if not pods:
                continue
            pod = pods[0]
            ports = {p.port: self.target_port(pod, p.target) for p in svc.ports}
            forms = mf.service_host_forms(svc.name, svc.namespace)
            if svc.namespace != namespace:
                forms = forms[1:]  # the short name resolves only in the Service's own namespace
            out.update({f: mf.HostTarget(pod.ip, ports) for f in forms})
        return out

    @staticmethod
    def target_port(pod: SimPod, target: object) -> int:
        for c in pod.spec["containers"]:
            try:
                return mf.container_port(c, target)
            except mf.ManifestError:
                continue
        raise mf.ManifestError(f"pod {pod.name} has no port {target}")

    def service(self, name: str) -> mf.Service:
        for svc in self.services:
            if svc.name == name:
                return svc
        raise mf.ManifestError(f"the manifests have no Service named {name}")

    def endpoints(self, svc: mf.Service, port_name: str) -> List[str]:
        """HOST:PORT of the Service's endpoints for one of its ports."""
        port = svc.port_named(port_name)
        if port is None:
            raise mf.ManifestError(f"Service {svc.name} has no port named {port_name}")
        pods = self.backing_pods(svc, ready_only=not svc.publish_not_ready)
        return [f"{p.ip}:{self.target_port(p, port.target)}" for p in pods]

    # ---- pods ----------------------------------------------------------------------------------

    async def make_pod(self, deployment: SimDeployment, template: dict, revision: str) -> SimPod:
        ip = f"{self._net}{self._next_host}"
        self._next_host += 1
        if self._next_host > 254:
            raise RuntimeError("the run used up its 244 pod addresses")
        name = f"{deployment.name}-{revision}-{pod_suffix(self._rng)}"
        pod = SimPod(name, mf.namespace_of(deployment.obj), ip, json.loads(json.dumps(template)),
                     deployment.name, revision, self.runtime, self.now)
        self.pods.append(pod)
        await pod.start()
        return pod

    def delete_pod(self, pod: SimPod, reason: str) -> None:
        pod.mark_deleted(reason)

        async def delete() -> None:
            self.terminations[pod.name] = await pod.terminate(reason)
            self.pods.remove(pod)
            self.gone.append(pod)
        self._deleting.append(asyncio.ensure_future(delete()))

    def pods_of(self, deployment: str) -> List[SimPod]:
        return [p for p in self.pods if p.owner == deployment]

    # ---- deployments ---------------------------------------------------------------------------

    def start_order(self) -> List[dict]:
        """Deployments whose pods back a Service that another Deployment names come first (that
        name is rewritten to their pod's address when the other's pods start)."""
        objs = self.manifests.of_kind("Deployment")

        def referenced_by_others(d: dict) -> bool:
            labels = d["spec"]["template"]["metadata"].get("labels") or {}
            names = [s for s in self.services if mf.selector_matches(s.selector, labels)]
            for other in objs:
                if other is d:
                    continue
                text = json.dumps(other["spec"]["template"]) + self._mounted_config_text(other)
                if any(mf.rewrite_hosts(text, {f: mf.HostTarget("x", {}) for f in
                                               mf.service_host_forms(s.name, s.namespace)}) != text for s in names):
                    return True
            return False
        return sorted(objs, key=lambda d: not referenced_by_others(d))

    def _mounted_config_text(self, d: dict) -> str:
        names = [v["configMap"]["name"] for v in d["spec"]["template"]["spec"].get("volumes") or [] if "configMap" in v]
        return "".join(b.decode() for n in names for b in self.manifests.config_data("ConfigMap", n).values())

    async def start(self, ready_timeout_s: float) -> None:
        """Each Deployment's controller, in start order; the next starts once the previous one's
        pods exist (Services they back can then be resolved)."""
        for obj in self.start_order():
            dep = SimDeployment(obj, self.make_pod, self.delete_pod, lambda n=obj["metadata"]["name"]: self.pods_of(n),
                                self.now)
            self.deployments[dep.name] = dep
            await dep.sync()
            self._tasks.append(asyncio.ensure_future(dep.run()))
        await self.wait(lambda: all(d.settled() for d in self.deployments.values()), ready_timeout_s,
                        "every Deployment ready")

    async def wait(self, condition, timeout_s: float, what: str, poll_s: float = 0.1) -> float:
        """Waits for condition() with a bound; returns how long it took."""
        start = self.now()
        while not condition():
            self.raise_failures()
            if self.now() - start > timeout_s:
                raise TimeoutError(f"not within {timeout_s:.0f} s: {what}")
            await asyncio.sleep(poll_s)
        return self.now() - start

    def raise_failures(self) -> None:
        """A controller, a deletion or a pod's task that ended with an exception stops the run."""
        tasks = self._tasks + self._deleting
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception():
                raise t.exception()
        for p in self.pods:
            for e in p.failures():
                raise e

    async def wait_settled(self, deployment: str, timeout_s: float) -> float:
        dep = self.deployments[deployment]
        return await self.wait(lambda: dep.settled() and not self._pending_deletions(deployment), timeout_s,
                               f"{deployment} settled at {dep.replicas} Ready pods of revision {dep.revision}")

    def _pending_deletions(self, deployment: str) -> bool:
        return any(p.owner == deployment and p.deleting is not None for p in self.pods)

    async def delete_all(self, timeout_s: float) -> None:
        """Everything goes, as when the namespace is deleted (the controllers stop first)."""
        for t in self._tasks:
            t.cancel()
        for p in list(self.pods):
            if p.deleting is None:
                self.delete_pod(p, "teardown")
        await self.wait(lambda: not self.pods, timeout_s, "every pod gone")

    def all_pods(self) -> List[SimPod]:
        return sorted(self.gone + self.pods, key=lambda p: p.created)

    @property
    def log_dir(self) -> str:
        return os.path.join(self.runtime.work_dir, "pods")
