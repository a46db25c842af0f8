"""Compiles WGSL shaders with naga, the compiler of wgpu (and so of Firefox), through wgpu-py (PyPI `wgpu`).

Usage: python -m tools.wgsl.naga   prints {ready, device} first, then reads one JSON shader {id, code,
features, limits} per line of stdin and answers each with one line {id, device, messages: [{type, message}],
error, note, cpu_ms} (or {id, device, skipped, cpu_ms}) before reading the next: tools/wgsl/check.py feeds several of these
processes one shader at a time, so should the native library crash it knows on which shader.

Each shader is parsed and validated by naga (create_shader_module) and built into a compute pipeline
(layout "auto"): naga's SPIR-V writer, then the Vulkan driver, as Firefox does. Here the adapter is Mesa's
lavapipe (mesa-vulkan-drivers); wgpu's own log lines at WARNING and above while a shader is handled are
reported as its warnings.
"""
from __future__ import annotations

import json
import logging
import sys
import time

# wgpu-native's names for the WebGPU features the templates enable.
FEATURES = {"shader-f16": "shader-f16", "subgroups": "subgroup"}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(record.getMessage())


def _device():
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise RuntimeError("wgpu found no adapter (install mesa-vulkan-drivers for lavapipe)")
    wanted = [name for name in FEATURES.values() if name in adapter.features]
    device = adapter.request_device_sync(required_features=wanted, required_limits={
        k: adapter.limits[k] for k in ("max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
                                       "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
                                       "max-storage-buffers-per-shader-stage") if k in adapter.limits})
    info = adapter.info
    name = f"naga/{info.get('backend_type', '')}:{info.get('device', '') or info.get('vendor', '')}"
    return device, {k for k, v in FEATURES.items() if v in wanted}, name


def _hyphenated(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


def check(device, name: str, shader: dict, collect: _Collect) -> dict:
    collect.records.clear()
    error = note = None
    over = [k for k, v in (shader.get("limits") or {}).items() if v > device.limits.get(_hyphenated(k), v)]
    try:
        module = device.create_shader_module(code=shader["code"])
        if over:
            note = f"pipeline not built: planned for devices with more than this one's {', '.join(over)}"
        else:
            device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    except Exception as exc:  # wgpu raises GPUValidationError (and others) with naga's full message
        error = str(exc)
    messages = [{"type": "warning", "message": m} for m in collect.records if not error or m not in error]
    return {"id": shader["id"], "device": name, "messages": messages, "error": error, "note": note}


def main() -> int:
    import wgpu  # noqa: F401  (creates its logger, which must exist before handlers are added)

    collect = _Collect()
    logging.getLogger("wgpu").addHandler(collect)
    logging.getLogger("wgpu").propagate = False  # its errors come back in our replies, not on stderr
    device, features, name = _device()
    out = sys.stdout
    out.write(json.dumps({"ready": True, "device": name, "features": sorted(features)}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        shader = json.loads(line)
        missing = [f for f in shader["features"] if f not in features]
        cpu = time.process_time()
        if missing:
            reply = {"id": shader["id"], "device": name, "skipped": f"needs {missing}"}
        else:
            reply = check(device, name, shader, collect)
        reply["cpu_ms"] = round((time.process_time() - cpu) * 1000)  # every thread of the process
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
