"""`python -m app device [--host browser|node]`: what the adapter offers, as the package sees it (JSON)."""
from __future__ import annotations

import json

from .bench_runner import python_runner

DEVICE = """
import json
from app import bridge, get_kernel
json.dumps(bridge.device_info(await get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)))
"""


def main(host: str = "browser") -> int:
    with python_runner(host) as run:
        info = json.loads(run(DEVICE))
    print(json.dumps(info, indent=1))
    return 0
