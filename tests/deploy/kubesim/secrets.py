"""Test Secrets in place of the manifests' placeholders, made with openssl.

Chosen by each Secret's keys, so any name works:
- ca.crt + tls.crt + tls.key: mutual TLS between nodes: a cluster CA and a node certificate it
  signed (CAF checks the signature, not the name, so one certificate serves every pod);
- tls.crt + tls.key alone: HTTPS: a self-signed certificate;
- keys.txt: an API key file (`NAME ROLE KEY`: one admin, one user key);
- a key ending in "token": a join token (64 hex digits).
Any other key is refused: the test would otherwise run with a placeholder the product rejects.
"""
import os
import secrets
import subprocess
from typing import Dict, Iterable

from .manifest import ManifestError


def _openssl(*args: str, cwd: str) -> None:
    out = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {out.stderr.strip()}")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class SecretMaker:
    """Makes the material once (a CA, a node certificate, an HTTPS certificate) under `dir`."""

    def __init__(self, dir: str):
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self.api_keys: Dict[str, str] = {}
        self._made = set()

    def _cluster_pki(self) -> None:
        if "pki" in self._made:
            return
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                 "/CN=lorafleet test cluster CA", "-keyout", "ca.key", "-out", "ca.crt", cwd=self.dir)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=lorafleet-node", "-keyout",
                 "node.key", "-out", "node.csr", cwd=self.dir)
        _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-out", "node.crt", cwd=self.dir)
        self._made.add("pki")

    def _https(self) -> None:
        if "https" in self._made:
            return
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                 "/CN=lorafleet-router", "-keyout", "https.key", "-out", "https.crt", cwd=self.dir)
        self._made.add("https")

    def _key_file(self) -> bytes:
        if not self.api_keys:
            self.api_keys = {"sim-admin": "sk-admin-" + secrets.token_hex(16),
                             "sim-user": "sk-user-" + secrets.token_hex(16)}
        return (f"sim-admin admin {self.api_keys['sim-admin']}\n"
                f"sim-user user {self.api_keys['sim-user']}\n").encode()

    def make(self, secret_name: str, keys: Iterable[str]) -> Dict[str, bytes]:
        keys = set(keys)
        out: Dict[str, bytes] = {}
        if {"ca.crt", "tls.crt", "tls.key"} <= keys:
            self._cluster_pki()
            out.update({"ca.crt": _read(os.path.join(self.dir, "ca.crt")),
                        "tls.crt": _read(os.path.join(self.dir, "node.crt")),
                        "tls.key": _read(os.path.join(self.dir, "node.key"))})
        elif {"tls.crt", "tls.key"} <= keys:
            self._https()
            out.update({"tls.crt": _read(os.path.join(self.dir, "https.crt")),
                        "tls.key": _read(os.path.join(self.dir, "https.key"))})
        for key in keys - set(out):
            if key == "keys.txt":
                out[key] = self._key_file()
            elif key.endswith("token"):
                out[key] = secrets.token_hex(32).encode()
            else:
                raise ManifestError(f"Secret {secret_name}: no test value for key {key}")
        return out
