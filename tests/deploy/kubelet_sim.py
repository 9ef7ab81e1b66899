#!/usr/bin/python3
"""The Kubernetes manifests (deploy/kubernetes, rendered by kustomize) run as a kubelet would run
them, as local processes, under a load of 64 streams that scales the workers 2 -> 4 -> 1 and
rolls every worker; then every reply is checked and replayed.

What is simulated, as Kubernetes does it:
- Deployments: replicas, pod templates, `kubectl scale`, `kubectl rollout restart` (a new
  revision), RollingUpdate within maxSurge / maxUnavailable / minReadySeconds (a new pod Ready
  before an old one goes when maxUnavailable is 0), Recreate, which pods a scale-in deletes.
- Each container: the image's ENTRYPOINT (/opt/lorafleet/bin/lorafleet: the built binary) and
  CMD, overridden by command / args; $(VAR) expansion from env (value, fieldRef status.podIP,
  metadata.name and the other downward-API fields, resourceFieldRef, ConfigMap and Secret refs,
  envFrom); HOSTNAME = the pod's name as the container runtime sets it; restartPolicy Always with
  CrashLoopBackOff; restarts counted with their cause.
- Volumes: the ConfigMap's and Secrets' keys as files (Secrets mode 0400, owned by the user that
  runs the test), emptyDir as a directory. The placeholder Secrets are replaced by test material
  made with openssl (kubesim/secrets.py: a cluster CA and a node certificate for mutual TLS, a
  self-signed HTTPS certificate, an API key file).
- Probes: startupProbe first, liveness and readiness only after it succeeded; initialDelaySeconds,
  periodSeconds, timeoutSeconds, successThreshold, failureThreshold; httpGet over HTTP and HTTPS
  (no certificate check, like the kubelet), tcpSocket, exec. A failed liveness or startup probe
  restarts the container (preStop, SIGTERM, SIGKILL after the grace period, as the kubelet kills).
  Readiness decides a Service's endpoints: the load connects to the router's client Service once
  it has a Ready endpoint.
- Deletion (scale-in, rollout, teardown): the pod leaves the endpoints, the preStop hook runs
  (the native `sleep` action, exec, httpGet), then SIGTERM, then SIGKILL when
  terminationGracePeriodSeconds, counted from the deletion, is over (at least 2 s after SIGTERM).
- The autoscaler's signal: the HorizontalPodAutoscaler's (or KEDA ScaledObject's) metric computed
  from every worker pod's /metrics the way the controller does, against the object's threshold.

The one liberty taken with what a pod sees: it has no mount namespace, network namespace or
cluster DNS of its own here, so paths and names in what the manifests give the program are
rewritten to what stands for them on this host: every volume's mountPath (and the image's own
paths) to the pod's directory under the work directory, in args, env values and the ConfigMap's
file contents; Service names (short and FQDN forms) to their backing pod's address, a Service
port to its target port; a wildcard listen address (0.0.0.0) to the pod's own address. Every
pod has its own loopback address (127.X.Y.11, .12, ...), so all traffic stays on 127.0.0.0/8.

Not simulated: a scheduler or several nodes (one shared host, no topology spread), network
policies, image pulls, resource requests and limits (no cgroups: threads 1 per worker is what
keeps them apart), the securityContext (the processes run as the test's user, on a writable
filesystem), ServiceMonitors, PodDisruptionBudgets (they bound evictions, and nothing is
evicted here), service-link environment variables, the HPA acting on its own (the test scales
by hand and evaluates the HPA's metric at 2 and 4 workers).

Checks (exit 1 on any violation, a table of what happened either way): every request ended with
exactly one terminal reply, `done`, and nothing after it; none lost; token indices without gaps;
each text and token sequence identical to a calm replay of the same request; no container
restarted (liveness or otherwise); every deleted worker answered 503 on /ready before its process
exited, and exited 0 within its grace period; rollout deletions kept the available pods at
replicas - maxUnavailable; the autoscaler's figure above its threshold at 2 workers, below at 4.
Exit 77 (skipped) without kubectl or kustomize, or without the overlay.

    kubelet_sim.py --binary build/release/tools/lorafleet [--source .] [--overlay DIR | --manifests FILE]
        [--component deploy/kubernetes/components/keda] [--work-dir DIR] [--verbose]
"""
import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubesim import manifest as mf  # noqa: E402
from kubesim.autoscale import autoscalers  # noqa: E402
from kubesim.pod import Image  # noqa: E402
from kubesim.scenario import Scenario, ScenarioConfig  # noqa: E402
from kubesim.secrets import SecretMaker  # noqa: E402

SKIP = 77
IMAGE_BIN = "/opt/lorafleet/bin/lorafleet"
IMAGE_MODELS = "/opt/lorafleet/share/lorafleet/models"
IMAGE_CMD = ("serve", "--http", "0.0.0.0:8000", "--listen", "tcp://0.0.0.0:5555")


def parse_args() -> argparse.Namespace:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True, help="the built lorafleet (stands for the image's)")
    p.add_argument("--source", default=os.path.normpath(os.path.join(here, "..", "..")))
    p.add_argument("--overlay", help="kustomization to render (default deploy/kubernetes/overlays/small-cpu)")
    p.add_argument("--component", action="append", default=[],
                   help="a kustomize component to add to the overlay (e.g. deploy/kubernetes/components/keda)")
    p.add_argument("--manifests", help="already rendered manifests (instead of --overlay)")
    p.add_argument("--streams", type=int, default=64)
    p.add_argument("--scale", default="2,4,1", help="worker replicas: measured at the first two, "
                   "rolled at the second, then scaled in to the third")
    p.add_argument("--scrapes", type=int, default=7, help="/metrics scrapes per measurement (median)")
    p.add_argument("--adapters", default="shakespeare,bible,fortunes")
    p.add_argument("--deadline", type=float, default=540, help="seconds for the whole run")
    p.add_argument("--work-dir", help="keep everything here (default: a temporary directory, "
                   "removed when the run passes)")
    p.add_argument("--verbose", action="store_true", help="print every pod event as it happens")
    return p.parse_args()


def read_manifests(args) -> str:
    if args.manifests:
        with open(args.manifests) as f:
            return f.read()
    overlay = args.overlay or os.path.join(args.source, "deploy", "kubernetes", "overlays", "small-cpu")
    if not os.path.isdir(overlay):
        print(f"kubelet_sim: skipped: no kustomization at {overlay}")
        sys.exit(SKIP)
    if mf.kustomize_command() is None:
        print("kubelet_sim: skipped: neither kubectl nor kustomize is installed")
        sys.exit(SKIP)
    if not args.component:
        return mf.render(overlay)
    with tempfile.TemporaryDirectory(prefix="kubelet-sim-kustomize-") as tmp:
        return mf.render(mf.write_kustomization(tmp, overlay, args.component))


def main() -> int:
    args = parse_args()
    manifests = mf.Manifests(mf.load_objects(read_manifests(args)))
    work = args.work_dir or tempfile.mkdtemp(prefix="kubelet-sim-")
    os.makedirs(work, exist_ok=True)
    scaling = [a for a in autoscalers(manifests) if a.metrics]
    if not scaling:
        print("kubelet_sim: the manifests have no HorizontalPodAutoscaler or ScaledObject with a metric")
        return 1
    replicas = [int(x) for x in args.scale.split(",")]
    config = ScenarioConfig(streams=args.streams, replicas=tuple(replicas), scrapes=args.scrapes,
                            adapters=args.adapters, work_dir=work, verbose=args.verbose)
    image = Image((IMAGE_BIN,), IMAGE_CMD, ((IMAGE_BIN, os.path.abspath(args.binary)),
                                             (IMAGE_MODELS, os.path.join(os.path.abspath(args.source), "models"))))
    started = time.monotonic()
    scenario = Scenario(manifests, scaling[0], image, SecretMaker(os.path.join(work, "secrets")), config)
    try:
        ok = asyncio.run(asyncio.wait_for(scenario.run(), args.deadline))
    except asyncio.TimeoutError:
        print(f"kubelet_sim: FAIL: the run took more than its {args.deadline:.0f} s")
        scenario.violations.append("the run took too long")
        ok = False
    except Exception:  # a broken simulation must show where
        traceback.print_exc()
        ok = False
    finally:
        scenario.kill_everything()
    print(scenario.summary(time.monotonic() - started))
    if ok and not scenario.violations:
        print("kubelet_sim: PASS")
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    scenario.print_logs()
    print(f"kubelet_sim: FAIL ({len(scenario.violations)} violations); logs in {work}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
