"""The app in Node.js with Dawn's WebGPU: a child process running web/views/node-host.mjs, spoken to in JSON lines.

On a machine without a GPU, Dawn runs on Chromium's SwiftShader Vulkan driver (VK_ICD_FILENAMES); on a
GPU machine the caller's Vulkan environment (VK_DRIVER_FILES) is left as it is.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..contract import ROOT
from .assets import BUILD, ensure_pyodide_assets
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
        ensure_pyodide_assets()
        (BUILD / "bundle.zip").write_bytes(bundle_bytes())
        self.child = JsonLinesChild([str(ROOT / "web" / "views" / "node-host.mjs"), str(BUILD)], "Node host", cwd=ROOT,
                                    env=node_env())
        if not self.child.hello.get("ready"):
            raise RuntimeError(f"the Node host did not start: {self.child.hello}")
        self.load_ms = self.child.hello["loadMs"]

    def call(self, method: str, *params):
        return self.child.call(method, *params)

    def py(self, name: str, *args):
        """app.bridge.<name>(*args) in the host's Pyodide (the one way into Python), JSON in and out."""
        return self.child.call("call", name, list(args))

    def close(self) -> None:
        self.child.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
