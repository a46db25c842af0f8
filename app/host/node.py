"""The app in Node.js with Dawn's WebGPU: a child process running web/node-host.mjs, spoken to in JSON lines.

On a machine without a GPU, Dawn runs on Chromium's SwiftShader Vulkan driver (VK_ICD_FILENAMES); on a
GPU machine the caller's Vulkan environment (VK_DRIVER_FILES) is left as it is.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..contract import ROOT
from .assets import BUILD, ensure_pyodide_assets
from .server import bundle_bytes

SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
NODE = os.environ.get("NODE", "node")


def node_env() -> dict:
    env = dict(os.environ)
    if "VK_DRIVER_FILES" not in env and "VK_ICD_FILENAMES" not in env and SWIFTSHADER_ICD.exists():
        env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
    return env


class NodeHost:
    """`with NodeHost() as host: host.py("bench_cases", text, "small")`: methods of web/node-host.mjs."""

    def __init__(self):
        ensure_pyodide_assets()
        (BUILD / "bundle.zip").write_bytes(bundle_bytes())
        self._ids = itertools.count(1)
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([NODE, str(ROOT / "web" / "node-host.mjs"), str(BUILD)], cwd=ROOT,
                                     env=node_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True)
        hello = self._read()
        if not hello.get("ready"):
            raise RuntimeError(f"the Node host did not start: {hello}")
        self.load_ms = hello["loadMs"]

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._stderr.seek(0)
                tail = self._stderr.read()[-2000:]
                raise RuntimeError(f"the Node host exited (status {self.proc.wait()}): {tail}")
            if line.startswith("{"):
                return json.loads(line)
            # Dawn and the driver print their own warnings on stdout: pass them on, they are not replies.
            print(f"[node] {line.rstrip()}", file=sys.stderr, flush=True)

    def call(self, method: str, *params):
        request_id = next(self._ids)
        self.proc.stdin.write(json.dumps({"id": request_id, "method": method, "params": list(params)}) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if reply.get("id") != request_id:
            raise RuntimeError(f"the Node host answered out of order: {reply}")
        if "error" in reply:
            raise RuntimeError(f"Node host: {reply['error']}")
        return reply["result"]

    def py(self, name: str, *args):
        """app.bridge.<name>(*args) in the host's Pyodide (the one way into Python), JSON in and out."""
        return self.call("call", name, list(args))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
