"""A kubelet-style simulation of rendered Kubernetes manifests as local processes
(tests/deploy/kubelet_sim.py is the test that drives it; each module's docstring says its part)."""
