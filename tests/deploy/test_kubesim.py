#!/usr/bin/python3
"""The kubelet simulation's pure parts (tests/deploy/kubesim): $(VAR) expansion and the pod's
environment, the path / Service / wildcard rewriting, each with a case that fails if the rule is
broken.

    tests/deploy/test_kubesim.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubesim import manifest as mf  # noqa: E402


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

    hosts = {**{f: mf.HostTarget("127.0.0.11", {7070: 7070}) for f in mf.service_host_forms("lorafleet-router-cluster", "lf")},
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


if __name__ == "__main__":
    unittest.main()
