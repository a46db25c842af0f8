"""The app in Node.js with Dawn's WebGPU: a child process running web/views/node-host.mjs, spoken to in JSON lines.

On a machine without a GPU, Dawn runs on Chromium's SwiftShader Vulkan driver (VK_ICD_FILENAMES); on a
GPU machine the caller's Vulkan environment (VK_DRIVER_FILES) is left as it is.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..contract import ROOT
from .assets import ensure_pyodide_assets
from .child import JsonLinesChild
from .server import bundle_bytes

SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")


def node_env() -> dict:
    env = dict(os.environ)
    if "VK_DRIVER_FILES" not in env and "VK_ICD_FILENAMES" not in env and SWIFTSHADER_ICD.exists():
        env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
    return env


class NodeHost:
    """`with NodeHost() as host: host.py("bench_cases", text, "small")`: methods of web/views/node-host.mjs."""

    def __init__(self):
        # Each host boots from a folder of its own: the bundle of the sources as they are now, beside a link to
        # the shared, read-only build/pyodide. Hosts started at once (pytest workers, a command a test runs)
        # never read a bundle another one is rewriting.
        pyodide = ensure_pyodide_assets()
        self._assets = tempfile.TemporaryDirectory(prefix="convtranspose-node-host-")
        assets = Path(self._assets.name)
        (assets / "pyodide").symlink_to(pyodide)
        (assets / "bundle.zip").write_bytes(bundle_bytes())
        try:
            self.child = JsonLinesChild([str(ROOT / "web" / "views" / "node-host.mjs"), str(assets)], "Node host",
                                        cwd=ROOT, env=node_env())
            if not self.child.hello.get("ready"):
                raise RuntimeError(f"the Node host did not start: {self.child.hello}")
        except BaseException:
            self.close()
            raise
        self.load_ms = self.child.hello["loadMs"]

    def call(self, method: str, *params):
        return self.child.call(method, *params)

    def py(self, name: str, *args):
        """app.bridge.<name>(*args) in the host's Pyodide (the one way into Python), JSON in and out."""
        return self.child.call("call", name, list(args))

    def close(self) -> None:
        if hasattr(self, "child"):
            self.child.close()
        self._assets.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
