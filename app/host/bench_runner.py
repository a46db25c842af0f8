"""`python -m app bench`: runs bench.json's cases on real WebGPU (headless Chromium or Node), prints a table
and writes JSON."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from ..contract import ROOT

RUN_CASE = """
import json
from app import bench, get_kernel
kernel = await get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
case = bench.load(BENCH_TEXT, TIER)[INDEX]
variants = bench.all_variants() if VARIANTS == "all" else VARIANTS
json.dumps(await bench.run_case(kernel, case, variants, runs=RUNS))
"""

COUNT = """
import json
from app import bench
json.dumps([c["name"] for c in bench.load(BENCH_TEXT, TIER)])
"""


@contextmanager
def python_runner(host: str):
    """Yields run(code) -> the value of its last expression, evaluated in Pyodide on the chosen host."""
    if host == "node":
        from .node import NodeHost

        with NodeHost() as node:
            yield lambda code: node.call("python", code)
        return
    from .browser import app_page
    from .server import start_background

    server, url = start_background()
    try:
        with app_page(url) as page:
            page.set_default_timeout(600_000)
            yield lambda code: page.evaluate("""async (code) => {
                const { bootApp } = await import("/web/boot.mjs");
                const { pyodide } = await bootApp();
                return await pyodide.runPythonAsync(code);
            }""", code)
    finally:
        server.shutdown()


def _fill(code: str, **values) -> str:
    for key, value in values.items():
        code = code.replace(key, repr(value))
    return code


def main(tier: str = "small", host: str = "browser", variants: str | None = None, runs: int = 5,
         out: str | None = None, bench_path: str | None = None) -> int:
    text = Path(bench_path or ROOT / "bench.json").read_text()
    chosen = variants.split(",") if variants and variants != "all" else variants
    rows = []
    with python_runner(host) as run:
        names = json.loads(run(_fill(COUNT, BENCH_TEXT=text, TIER=tier)))
        print(f"{'case':28s} {'variant':42s} {'median ms':>10s} {'min ms':>10s} {'GFLOP/s':>9s}", flush=True)
        for index, name in enumerate(names):
            code = _fill(RUN_CASE, BENCH_TEXT=text, TIER=tier, INDEX=index, VARIANTS=chosen, RUNS=runs)
            for row in json.loads(run(code)):
                rows.append(row)
                print(f"{row['case']:28s} {row['variant']:42s} {row['median_ms']:10.3f} {row['min_ms']:10.3f} "
                      f"{row['gflops'] or 0:9.3f}", flush=True)
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
        print(f"wrote {out}")
    return 0
