"""Times variants side by side on one request in headless Chromium (development aid; the benchmark
runner comes with bench.json).

    python tools/time_variants.py '{"x": [1, 64, 32, 32], "w": [64, 32, 4, 4], "bias": true,
                                    "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}}' nchw2d_gather other_variant
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.host.browser import app_page  # noqa: E402
from app.host.server import start_background  # noqa: E402

CODE = """
import json, numpy as np, app
from app.timing import time_call
spec = json.loads(SPEC)
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(0)
inputs = {"x": rng.uniform(-1, 1, spec["x"]).astype(np.float32), "w": rng.uniform(-1, 1, spec["w"]).astype(np.float32)}
if spec.get("bias"):
    inputs["b"] = rng.uniform(-1, 1, spec["w"][1] * spec.get("attributes", {}).get("group", 1)).astype(np.float32)
rows = []
for variant in VARIANTS:
    try:
        rows.append(await time_call(kernel, inputs, spec.get("attributes", {}), variant, warmup=1, runs=RUNS))
    except Exception as exc:
        rows.append({"variant": variant, "error": str(exc)})
json.dumps(rows)
"""


def main() -> None:
    spec, variants = sys.argv[1], sys.argv[2:] or [None]
    server, url = start_background()
    with app_page(url) as page:
        code = CODE.replace("SPEC", repr(spec)).replace("VARIANTS", repr(variants)).replace("RUNS", "5")
        rows = json.loads(page.evaluate("""async (code) => {
            const { bootApp } = await import("/web/boot.mjs");
            const { pyodide } = await bootApp();
            return await pyodide.runPythonAsync(code);
        }""", code))
    server.shutdown()
    for row in rows:
        if "error" in row:
            print(f"{row['variant']:40s} ERROR {row['error']}")
        else:
            print(f"{row['variant']:40s} median {row['median_ms']:9.3f} ms  min {row['min_ms']:9.3f} ms  ({row['source']})")


if __name__ == "__main__":
    main()
