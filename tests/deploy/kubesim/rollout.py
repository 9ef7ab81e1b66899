"""Deployments as the deployment and ReplicaSet controllers run them (pkg/controller/deployment
rolling.go, recreate.go; replica_set.go's getPodsToDelete).

The decisions are pure (`plan_rolling`, `plan_recreate`, `deletion_order`, `resolve_surge`) and
tested on lists of pod views; `SimDeployment` applies them to SimPods every quarter second.

A rolling update never lets the pods that are not being deleted exceed replicas + maxSurge, and
deletes an old pod only while the available ones (Ready for minReadySeconds) stay at least
replicas - maxUnavailable without it: with maxSurge 1 and maxUnavailable 0 a new pod must be Ready
before an old one goes. Pods being deleted count for neither, as in a ReplicaSet's status.
Scaling in deletes not-Ready pods first, then the ones Ready most recently.
"""
import asyncio
import hashlib
import json
import math
import random
import string
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from .manifest import ManifestError


@dataclass(frozen=True)
class PodView:
    """What the controllers look at."""
    name: str
    ready: bool
    available: bool
    created: float
    ready_since: Optional[float] = None


@dataclass(frozen=True)
class Plan:
    create: int = 0
    delete: Tuple[PodView, ...] = ()


def resolve_surge(value: object, replicas: int, round_up: bool) -> int:
    """maxSurge (rounded up) or maxUnavailable (rounded down): a count or a percentage."""
    if isinstance(value, int):
        return value
    s = str(value)
    if s.endswith("%"):
        exact = replicas * float(s[:-1]) / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(s)


def surge_and_unavailable(strategy: dict, replicas: int) -> Tuple[int, int]:
    ru = strategy.get("rollingUpdate") or {}
    surge = resolve_surge(ru.get("maxSurge", "25%"), replicas, True)
    unavailable = resolve_surge(ru.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # the API refuses both 0; the controller's fallback
    return surge, unavailable


def deletion_order(pods: Sequence[PodView]) -> List[PodView]:
    """Which pods a ReplicaSet deletes first: not Ready, then Ready for the shortest time, then
    the newest."""
    return sorted(pods, key=lambda p: (p.ready, -(p.ready_since or 0.0), -p.created))


def plan_rolling(replicas: int, surge: int, unavailable: int, new: Sequence[PodView],
                 old: Sequence[PodView]) -> Plan:
    """One sync of a RollingUpdate Deployment: scale the new ReplicaSet up within the surge, or
    else the old ones down within the availability budget (one kind of step a sync)."""
    total = len(new) + len(old)
    if len(new) > replicas:
        return Plan(delete=tuple(deletion_order(new)[:len(new) - replicas]))
    if len(new) < replicas:
        create = min(replicas + surge - total, replicas - len(new))
        if create > 0:
            return Plan(create=create)
    if not old:
        return Plan()
    min_available = replicas - unavailable
    new_unavailable = sum(1 for p in new if not p.available)
    budget = total - min_available - new_unavailable
    if budget <= 0:
        return Plan()
    # First the old pods that are not available (within the budget), then as many available old
    # pods as keep min_available (not bounded by the budget: scaleDownOldReplicaSetsForRollingUpdate).
    unhealthy = [p for p in deletion_order(old) if not p.available][:budget]
    available = sum(1 for p in list(new) + list(old) if p.available)
    healthy = [p for p in deletion_order(old) if p.available]
    n = max(0, min(available - min_available, len(healthy)))
    return Plan(delete=tuple(unhealthy + healthy[:n]))


def plan_recreate(replicas: int, new: Sequence[PodView], old: Sequence[PodView],
                  old_terminating: int) -> Plan:
    """Recreate: every old pod goes, and the new ones start once none of them runs any more."""
    if old:
        return Plan(delete=tuple(old))
    if old_terminating:
        return Plan()
    if len(new) > replicas:
        return Plan(delete=tuple(deletion_order(new)[:len(new) - replicas]))
    return Plan(create=replicas - len(new))


def template_hash(template: dict) -> str:
    """The pod-template-hash of a template (a stable digest; not the controller's FNV)."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def pod_suffix(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))


@dataclass
class RolloutRecord:
    """A deletion by the rollout, with what was available without the deleted pod."""
    pod: str
    at: float
    available_after: int
    min_available: int


class SimDeployment:
    """One Deployment: its replicas, its template's revision, and a control loop over its pods.

    `make_pod(template, revision) -> pod` creates and starts a pod; `delete_pod(pod, reason)`
    starts its termination; `pods()` are this Deployment's pods, deleting ones included."""

    def __init__(self, obj: dict, make_pod: Callable, delete_pod: Callable, pods: Callable[[], list],
                 now: Callable[[], float]):
        self.name = obj["metadata"]["name"]
        self.obj = obj
        spec = obj["spec"]
        self.replicas = int(spec.get("replicas", 1))
        self.template = spec["template"]
        self.strategy = spec.get("strategy") or {"type": "RollingUpdate"}
        if self.strategy.get("type", "RollingUpdate") not in ("RollingUpdate", "Recreate"):
            raise ManifestError(f"Deployment {self.name}: strategy {self.strategy['type']} is not known")
        self.min_ready_s = float(spec.get("minReadySeconds", 0))
        self.revision = template_hash(self.template)
        self.rollout_deletions: List[RolloutRecord] = []
        self._make_pod = make_pod
        self._delete_pod = delete_pod
        self._pods = pods
        self._now = now
        self._restarts = 0

    # ---- what kubectl does ---------------------------------------------------------------------

    def scale(self, replicas: int) -> None:
        self.replicas = replicas

    def restart(self) -> None:
        """kubectl rollout restart: a new annotation on the template, so a new revision."""
        self._restarts += 1
        meta = self.template.setdefault("metadata", {})
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = f"sim-{self._restarts}"
        self.revision = template_hash(self.template)

    # ---- the controller ------------------------------------------------------------------------

    def view(self, pod) -> PodView:
        return PodView(pod.name, pod.ready, pod.available(self.min_ready_s), pod.created, pod.ready_since)

    def settled(self) -> bool:
        pods = self._pods()
        current = [p for p in pods if p.deleting is None and p.revision == self.revision]
        return len(pods) == len(current) == self.replicas and all(p.available(self.min_ready_s) for p in current)

    async def sync(self) -> None:
        pods = [p for p in self._pods() if p.deleting is None]
        new = [p for p in pods if p.revision == self.revision]
        old = [p for p in pods if p.revision != self.revision]
        by_name = {p.name: p for p in pods}
        if self.strategy.get("type", "RollingUpdate") == "Recreate":
            terminating_old = sum(1 for p in self._pods() if p.deleting is not None and p.revision != self.revision)
            plan = plan_recreate(self.replicas, [self.view(p) for p in new], [self.view(p) for p in old],
                                 terminating_old)
            min_available = 0
        else:
            surge, unavailable = surge_and_unavailable(self.strategy, self.replicas)
            plan = plan_rolling(self.replicas, surge, unavailable, [self.view(p) for p in new],
                                [self.view(p) for p in old])
            min_available = self.replicas - unavailable
        for _ in range(plan.create):
            await self._make_pod(self, self.template, self.revision)
        for view in plan.delete:
            pod = by_name[view.name]
            reason = "scale-in" if pod.revision == self.revision else "rollout"
            if reason == "rollout":
                left = sum(1 for p in pods if p is not pod and p.available(self.min_ready_s)
                           and p.name not in {v.name for v in plan.delete})
                self.rollout_deletions.append(RolloutRecord(pod.name, self._now(), left, min_available))
            self._delete_pod(pod, reason)

    async def run(self, period_s: float = 0.25) -> None:
        while True:
            await self.sync()
            await asyncio.sleep(period_s)
