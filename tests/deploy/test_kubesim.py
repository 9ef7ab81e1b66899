#!/usr/bin/python3
"""The kubelet simulation's pure parts (tests/deploy/kubesim): $(VAR) expansion and the pod's
environment, the path / Service / wildcard rewriting, probe timing and thresholds, the grace
left after preStop, rolling-update and scale-in decisions, the autoscaler's figure, and the
test's own checks, each with a case that fails if the rule is broken.

    tests/deploy/test_kubesim.py
"""
import asyncio
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubesim import manifest as mf  # noqa: E402
from kubesim import report  # noqa: E402
from kubesim.autoscale import (ScaleMetric, Scrape, Term, _hpa, _scaled_object, parse_matchers,  # noqa: E402
                               parse_prometheus, parse_query)
from kubesim.manifest import ManifestError  # noqa: E402
from kubesim.probe import (ProbeKind, ProbeSpec, ProbeState, Verdict, http_get, next_tick,  # noqa: E402
                           probe_due, stop_timeout)
from kubesim.rollout import (PodView, deletion_order, plan_recreate, plan_rolling, resolve_surge,  # noqa: E402
                             surge_and_unavailable)


class Expansion(unittest.TestCase):
    env = {"POD_IP": "127.0.0.11", "N": "4"}

    def test_defined_variables_are_replaced(self):
        self.assertEqual(mf.expand("$(POD_IP):8081", self.env.get), "127.0.0.11:8081")
        self.assertEqual(mf.expand("--threads=$(N)$(N)", self.env.get), "--threads=44")

    def test_undefined_stay_as_written(self):
        self.assertEqual(mf.expand("$(NOPE)/x", self.env.get), "$(NOPE)/x")

    def test_escapes_and_stray_dollars(self):
        self.assertEqual(mf.expand("$$(POD_IP)", self.env.get), "$(POD_IP)")
        self.assertEqual(mf.expand("a$b $", self.env.get), "a$b $")
        self.assertEqual(mf.expand("$(POD_IP", self.env.get), "$(POD_IP")


class ContainerEnv(unittest.TestCase):
    pod = mf.PodFields("worker-abc", "lorafleet", "127.0.0.12", "uid", "node", "127.0.0.1", {"app": "x"})

    def data(self, kind, name):
        return {"token": b"s3cret"} if kind == "Secret" else {"mode": b"fast"}

    def test_downward_api_hostname_and_order(self):
        c = {"env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                     {"name": "ADDR", "value": "$(POD_IP):8081"},
                     {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                     {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}}],
             "envFrom": [{"configMapRef": {"name": "c"}, "prefix": "CM_"}]}
        env = mf.container_env(c, self.pod, self.data, {"PATH": "/bin"})
        self.assertEqual(env["ADDR"], "127.0.0.12:8081")
        self.assertEqual(env["HOSTNAME"], "worker-abc")
        self.assertEqual(env["NAME"], "worker-abc")
        self.assertEqual((env["APP"], env["TOKEN"], env["CM_mode"], env["PATH"]), ("x", "s3cret", "fast", "/bin"))

    def test_a_later_variable_is_not_seen_by_an_earlier_one(self):
        c = {"env": [{"name": "A", "value": "$(B)"}, {"name": "B", "value": "b"}]}
        self.assertEqual(mf.container_env(c, self.pod, self.data, {})["A"], "$(B)")

    def test_resource_field_ref_rounds_up(self):
        c = {"resources": {"limits": {"cpu": "1500m"}},
             "env": [{"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}
        self.assertEqual(mf.container_env(c, self.pod, self.data, {})["CPUS"], "2")

    def test_unknown_field_ref_is_refused(self):
        c = {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]}
        with self.assertRaises(mf.ManifestError):
            mf.container_env(c, self.pod, self.data, {})

    def test_named_ports(self):
        c = {"name": "w", "ports": [{"name": "probe", "containerPort": 8081}]}
        self.assertEqual((mf.container_port(c, "probe"), mf.container_port(c, 9000)), (8081, 9000))
        with self.assertRaises(mf.ManifestError):
            mf.container_port(c, "http")


class Rewriting(unittest.TestCase):
    def test_paths_longest_prefix_at_component_boundaries(self):
        mounts = [("/etc/lorafleet", "/h/a"), ("/etc/lorafleet/config", "/h/config")]
        self.assertEqual(mf.rewrite_paths('file = "/etc/lorafleet/config/cluster.toml"', mounts),
                         'file = "/h/config/cluster.toml"')
        self.assertEqual(mf.rewrite_paths("/etc/lorafleet/configs/x /etc/lorafleetx", mounts),
                         "/h/a/configs/x /etc/lorafleetx")
        self.assertEqual(mf.rewrite_paths("/opt/etc/lorafleet/x", mounts), "/opt/etc/lorafleet/x")

    def test_paths_one_pass(self):
        # The host path lies under /tmp, itself a mount: it must not be rewritten again.
        mounts = [("/tmp", "/tmp/run/pods/p/volumes/tmp"), ("/etc/tls", "/tmp/run/pods/p/volumes/tls")]
        self.assertEqual(mf.rewrite_paths("--tls-ca /etc/tls/ca.crt --dir /tmp/x", mounts),
                         "--tls-ca /tmp/run/pods/p/volumes/tls/ca.crt --dir /tmp/run/pods/p/volumes/tmp/x")

    hosts = {**{f: mf.HostTarget("127.0.0.11", {7070: 7070})
                for f in mf.service_host_forms("lorafleet-router-cluster", "lf")},
             **{f: mf.HostTarget("127.0.0.11", {80: 8000}) for f in mf.service_host_forms("lorafleet-router", "lf")}}

    def test_service_names_every_form_and_ports(self):
        self.assertEqual(mf.rewrite_hosts("--join lorafleet-router-cluster:7070", self.hosts), "--join 127.0.0.11:7070")
        self.assertEqual(mf.rewrite_hosts("http://lorafleet-router.lf.svc.cluster.local:80/v1", self.hosts),
                         "http://127.0.0.11:8000/v1")
        self.assertEqual(mf.rewrite_hosts('host = "lorafleet-router.lf.svc."', self.hosts), 'host = "127.0.0.11"')

    def test_service_names_not_inside_other_words_or_paths(self):
        for text in ("/etc/lorafleet-router/x", "my-lorafleet-router", "lorafleet-router-other:1",
                     "lorafleet-router.example.com"):
            self.assertEqual(mf.rewrite_hosts(text, self.hosts), text)

    def test_wildcards(self):
        self.assertEqual(mf.rewrite_wildcards('listen = "0.0.0.0:8000" tcp://0.0.0.0:5555 tcp://*:1 [::]:2',
                                              "127.0.0.9"),
                         'listen = "127.0.0.9:8000" tcp://127.0.0.9:5555 tcp://127.0.0.9:1 127.0.0.9:2')
        self.assertEqual(mf.rewrite_wildcards("10.0.0.0/8 0.0.0.01", "127.0.0.9"), "10.0.0.0/8 0.0.0.01")


class Kustomization(unittest.TestCase):
    def test_components_by_relative_path(self):
        import tempfile
        import yaml
        with tempfile.TemporaryDirectory() as tmp:
            mf.write_kustomization(tmp, "/repo/deploy/overlays/small", ["/repo/deploy/components/keda"])
            with open(os.path.join(tmp, "kustomization.yaml")) as f:
                k = yaml.safe_load(f)
        self.assertEqual(os.path.normpath(os.path.join(tmp, k["resources"][0])), "/repo/deploy/overlays/small")
        self.assertFalse(os.path.isabs(k["components"][0]))


class Probes(unittest.TestCase):
    def test_defaults(self):
        self.assertEqual(ProbeSpec.from_manifest({}), ProbeSpec(0, 10, 1, 1, 3))

    def test_readiness_needs_its_success_threshold_and_drops_at_failure_threshold(self):
        s = ProbeState(ProbeKind.readiness, ProbeSpec(success_threshold=2, failure_threshold=3))
        self.assertEqual(s.verdict, Verdict.failure)
        self.assertIsNone(s.record(True))
        self.assertEqual(s.record(True), Verdict.success)
        self.assertIsNone(s.record(False))
        self.assertIsNone(s.record(False))
        self.assertIsNone(s.record(True))  # the run of failures starts over
        self.assertIsNone(s.record(False))
        self.assertIsNone(s.record(False))
        self.assertEqual(s.record(False), Verdict.failure)
        self.assertFalse(s.on_hold)

    def test_liveness_failure_holds_until_restart(self):
        s = ProbeState(ProbeKind.liveness, ProbeSpec(failure_threshold=2))
        self.assertEqual(s.verdict, Verdict.success)
        s.record(False)
        self.assertEqual(s.record(False), Verdict.failure)
        self.assertTrue(s.on_hold)
        self.assertFalse(probe_due(ProbeKind.liveness, s, 0.0, 100.0, True, False))
        s.reset()
        self.assertTrue(probe_due(ProbeKind.liveness, s, 0.0, 100.0, True, False))

    def test_ticks(self):
        self.assertEqual(next_tick(10.0, 5, 3.0), 10.0)
        self.assertEqual(next_tick(10.0, 5, 10.0), 10.0)
        self.assertEqual(next_tick(10.0, 5, 10.1), 15.0)
        self.assertEqual(next_tick(10.0, 5, 25.0), 25.0)

    def test_startup_gates_the_others_and_initial_delay_counts_whole_seconds(self):
        startup = ProbeState(ProbeKind.startup, ProbeSpec())
        ready = ProbeState(ProbeKind.readiness, ProbeSpec(initial_delay_s=5))
        self.assertTrue(probe_due(ProbeKind.startup, startup, 0.0, 0.0, False, False))
        self.assertFalse(probe_due(ProbeKind.startup, startup, 0.0, 9.0, True, False))
        self.assertFalse(probe_due(ProbeKind.readiness, ready, 0.0, 9.0, False, False))
        self.assertFalse(probe_due(ProbeKind.readiness, ready, 0.0, 4.99, True, False))
        self.assertTrue(probe_due(ProbeKind.readiness, ready, 0.0, 5.0, True, False))
        self.assertFalse(probe_due(ProbeKind.readiness, ready, None, 9.0, True, False))

    def test_only_readiness_runs_while_terminating(self):
        live = ProbeState(ProbeKind.liveness, ProbeSpec())
        ready = ProbeState(ProbeKind.readiness, ProbeSpec())
        self.assertFalse(probe_due(ProbeKind.liveness, live, 0.0, 9.0, True, True))
        self.assertTrue(probe_due(ProbeKind.readiness, ready, 0.0, 9.0, True, True))

    def test_grace_left_after_pre_stop(self):
        self.assertEqual(stop_timeout(40, 0.0), 40)
        self.assertEqual(stop_timeout(40, 5.9), 35)
        self.assertEqual(stop_timeout(3, 5.0), 2)
        self.assertEqual(stop_timeout(0, 0.0), 2)

    def test_http_get_status_timeout_and_refusal(self):
        async def scenario():
            async def handle(reader, writer):
                line = await reader.readline()
                if b"/slow" in line:
                    await asyncio.sleep(2)
                code = b"503 Service Unavailable" if b"/ready" in line else b"200 OK"
                writer.write(b"HTTP/1.1 " + code + b"\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
                writer.close()
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            got = [await http_get("127.0.0.1", port, p, timeout=0.5) for p in ("/health", "/ready", "/slow")]
            server.close()
            await server.wait_closed()
            got.append(await http_get("127.0.0.1", port, "/health", timeout=0.5))
            return got
        self.assertEqual(asyncio.run(scenario()), [(200, b"ok"), (503, b"ok"), (None, b""), (None, b"")])


def views(prefix, n, ready=True, t0=0.0):
    return [PodView(f"{prefix}{i}", ready, ready, t0 + i, t0 + i if ready else None) for i in range(n)]


class Rollout(unittest.TestCase):
    def test_surge_rounding(self):
        self.assertEqual((resolve_surge("25%", 2, True), resolve_surge("25%", 2, False)), (1, 0))
        self.assertEqual(surge_and_unavailable({}, 4), (1, 1))
        self.assertEqual(surge_and_unavailable({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}, 4), (0, 1))

    def test_new_pod_ready_before_an_old_one_goes(self):
        old = views("old", 4)
        self.assertEqual(plan_rolling(4, 1, 0, [], old).create, 1)
        starting = views("new", 1, ready=False, t0=10)
        self.assertEqual(plan_rolling(4, 1, 0, starting, old), plan_rolling(4, 1, 0, starting, old).__class__())
        ready = views("new", 1, t0=10)
        plan = plan_rolling(4, 1, 0, ready, old)
        self.assertEqual([p.name for p in plan.delete], ["old3"])  # the newest old pod first
        self.assertEqual(plan_rolling(4, 1, 0, ready, old[:3]).create, 1)

    def test_max_unavailable_lets_old_pods_go_first(self):
        plan = plan_rolling(4, 0, 2, [], views("old", 4))
        self.assertEqual((plan.create, len(plan.delete)), (0, 2))

    def test_scale_in_deletes_unready_then_most_recently_ready(self):
        pods = [PodView("a", True, True, 0, 5.0), PodView("b", False, False, 1), PodView("c", True, True, 2, 9.0)]
        self.assertEqual([p.name for p in deletion_order(pods)], ["b", "c", "a"])
        self.assertEqual([p.name for p in plan_rolling(1, 1, 0, pods, []).delete], ["b", "c"])

    def test_recreate(self):
        self.assertEqual(len(plan_recreate(1, [], views("old", 1), 0).delete), 1)
        self.assertEqual(plan_recreate(1, [], [], 1).create, 0)
        self.assertEqual(plan_recreate(1, [], [], 0).create, 1)


METRICS = """# HELP vllm:num_requests_waiting Requests waiting.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="default"} 7
vllm:num_requests_running{model_name="a,b\\"c"} 16
lorafleet:node_ready 1
"""


def scrape(pod, waiting, running=16.0, namespace="lf"):
    return Scrape(pod, namespace, [("vllm:num_requests_waiting", {"model_name": "default"}, waiting),
                                   ("vllm:num_requests_running", {"model_name": "default"}, running)])


class Autoscaling(unittest.TestCase):
    def test_prometheus_text(self):
        samples = parse_prometheus(METRICS)
        self.assertEqual(samples[1], ("vllm:num_requests_running", {"model_name": 'a,b\\"c'}, 16.0))
        s = Scrape("p", "lf", samples)
        self.assertEqual(s.series("vllm:num_requests_waiting", ()), [7.0])
        self.assertEqual(s.series("vllm:num_requests_waiting", parse_matchers('model_name="x"')), [])

    def test_hpa_pods_metric(self):
        hpa = _hpa({"metadata": {"name": "w"}, "spec": {"scaleTargetRef": {"name": "workers"}, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu"}},
            {"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"},
                                      "target": {"type": "AverageValue", "averageValue": "4"}}}]}})
        self.assertEqual(hpa.target, "workers")
        (m,) = hpa.metrics
        two = [scrape("a", 16), scrape("b", 14)]
        self.assertEqual((m.figure(two), m.desired_replicas(two, 2)), (15.0, 8))
        self.assertEqual(m.desired_replicas([scrape("a", 4), scrape("b", 4.2)], 2), 2)  # within the tolerance

    def test_keda_queries_with_target_labels(self):
        so = _scaled_object({"metadata": {"name": "w"}, "spec": {"scaleTargetRef": {"name": "workers"}, "triggers": [
            {"type": "prometheus", "name": "waiting", "metadata": {
                "query": 'sum(vllm:num_requests_waiting{namespace="lf", pod=~"worker-.*"})', "threshold": "8"}},
            {"type": "prometheus", "name": "demand", "metadata": {
                "query": "sum(vllm:num_requests_running) + sum(vllm:num_requests_waiting)", "threshold": "16"}}]}})
        waiting, demand = so.metrics
        pods = [scrape("worker-a", 10), scrape("worker-b", 6), scrape("router-x", 100),
                scrape("worker-c", 50, namespace="other")]
        self.assertEqual(waiting.figure(pods), 16 / 4)  # AverageValue: the sum over the replicas
        self.assertEqual(demand.figure(pods[:2]), (32 + 16) / 2)
        self.assertEqual(demand.desired_replicas(pods[:2], 2), 3)
        self.assertEqual(waiting.metrics, {"vllm:num_requests_waiting"})
        total = ScaleMetric("x", "m", False, 8.0, (Term("sum", "vllm:num_requests_waiting"),))
        self.assertEqual(total.figure(pods[:2]), 16.0)
        with self.assertRaises(ManifestError):
            parse_query("rate(x[5m])")

    def test_matchers(self):
        ms = parse_matchers('a="1", b!="2", c=~"x.*", d!~"y"')
        self.assertTrue(all(m.ok({"a": "1", "b": "3", "c": "xz", "d": "yy"}) for m in ms))
        self.assertEqual([m.ok({"a": "2", "b": "2", "c": "zx", "d": "y"}) for m in ms], [False] * 4)


def record(i, **kw):
    r = {"i": i, "accepted": 1, "tokens": [[0, 1, "a"], [1, 2, "b"]], "terminal": "done", "code": "",
         "message": "", "after_terminal": [], "resumed": 0}
    r.update(kw)
    return r


class Checks(unittest.TestCase):
    def test_replies(self):
        self.assertEqual(report.check_replies([record(1)]), [])
        bad = report.check_replies([record(1, terminal=None), record(2, after_terminal=["token"]),
                                    record(3, tokens=[[0, 1, "a"], [0, 1, "a"]]),
                                    record(4, terminal="error", code="internal"),
                                    record(5, accepted=2)])
        self.assertEqual(len(bad), 5, bad)

    def test_stops(self):
        good = report.StopView("p", "scale-in", 40, 0, False, 1.2, True, False, [200, 503, None])
        self.assertEqual(report.check_stops([good]), [])
        for change in ({"said_not_ready": False}, {"ready_again": True}, {"rc": 1}, {"sigkilled": True},
                       {"exit_after_s": 41.0}):
            self.assertEqual(len(report.check_stops([report.StopView(**{**good.__dict__, **change})])), 1, change)

    def test_termination_readiness_sequence(self):
        from kubesim.container import Termination
        t = Termination("scale-in", 40, 0.0, ready_codes=[(0, 200), (1, 503), (2, None)])
        self.assertTrue(t.said_not_ready())
        self.assertFalse(t.ready_again_after_not_ready())
        t.ready_codes.append((3, 200))
        self.assertTrue(t.ready_again_after_not_ready())
        self.assertEqual(report.compress([200, 503, 503, None]), "200, 503 x2, refused")


if __name__ == "__main__":
    unittest.main()
