"""`python -m app bench`: runs bench.json's cases on real WebGPU (headless Chromium or Node), prints a table
and writes JSON. With `--against ort`, each case also runs on onnxruntime-web's two WebGPU builds in the
same page (web/ort-bench.mjs), interleaved case by case with ours, and the table ends with the geometric
mean of ours/theirs (app/host/bench_report.py says how the ratios are taken)."""
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
json.dumps(await bench.run_case(kernel, case, variants, runs=RUNS, warmup=WARMUP, repeats=REPEATS))
"""

COUNT = """
import json
from app import bench
json.dumps([c["name"] for c in bench.load(BENCH_TEXT, TIER)])
"""


RUN_PYTHON = """async (code) => {
    const { bootApp } = await import("/web/boot.mjs");
    const { pyodide } = await bootApp();
    return await pyodide.runPythonAsync(code);
}"""


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
            yield lambda code: page.evaluate(RUN_PYTHON, code)
    finally:
        server.shutdown()


# One case in the page: ours (resident timing, app.bench.run_resident), then each ORT EP on the same data.
AGAINST_ORT = """async ({caseJson, runs, warmup, eps}) => {
    const { bootApp } = await import("/web/boot.mjs");
    const { benchOrt } = await import("/web/ort-bench.mjs");
    const { pyodide } = await bootApp();
    pyodide.globals.set("bench_case_json", caseJson);
    const proxy = await pyodide.runPythonAsync(`
import json
from app import bench, get_kernel
_kernel = await get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
await bench.run_resident(_kernel, json.loads(bench_case_json), runs=${runs}, warmup=${warmup})`);
    const ours = proxy.toJs({ dict_converter: Object.fromEntries });
    proxy.destroy();
    const f32 = (bytes) => new Float32Array(bytes.slice().buffer);
    const y = f32(ours.y);
    const inputs = Object.fromEntries(Object.entries(ours.inputs).map(([k, v]) => [k, f32(v)]));
    delete ours.y; delete ours.inputs;
    const ort = {}, diffs = {};
    for (const ep of eps) {
        const r = await benchOrt(JSON.parse(caseJson), { runs, warmup, ep, inputs });
        if (r.y) {
            let diff = r.y.length === y.length ? 0 : Infinity;
            for (let i = 0; i < y.length && diff !== Infinity; i++) diff = Math.max(diff, Math.abs(r.y[i] - y[i]));
            diffs[ep] = Number.isNaN(diff) ? null : diff;
            delete r.y;
        }
        ort[ep] = r;
    }
    return { ours, ort, diffs };
}"""

CASE_JSON = """
import json
from app import bench
json.dumps(bench.load(BENCH_TEXT, TIER)[INDEX])
"""


def _fill(code: str, **values) -> str:
    for key, value in values.items():
        code = code.replace(key, repr(value))
    return code


def main(tier: str = "small", host: str = "browser", variants: str | None = None, runs: int = 5,
         out: str | None = None, bench_path: str | None = None, against: str | None = None,
         plot: str | None = None, warmup: int = 1, repeats: int = 1) -> int:
    text = Path(bench_path or ROOT / "bench.json").read_text()
    if against:
        if host != "browser":
            raise SystemExit("--against ort runs onnxruntime-web in the browser page: use --host browser")
        if variants:
            raise SystemExit("--against ort times the planner's choice: leave out --variants")
        return _against_ort(text, tier, runs, warmup, out, plot)
    if plot:
        raise SystemExit("--plot draws ours vs onnxruntime-web: add --against ort")
    chosen = variants.split(",") if variants and variants != "all" else variants
    rows = []
    with python_runner(host) as run:
        names = json.loads(run(_fill(COUNT, BENCH_TEXT=text, TIER=tier)))
        print(f"{'case':28s} {'variant':42s} {'median ms':>10s} {'min ms':>10s} {'GFLOP/s':>9s}", flush=True)
        for index, name in enumerate(names):
            code = _fill(RUN_CASE, BENCH_TEXT=text, TIER=tier, INDEX=index, VARIANTS=chosen, RUNS=runs,
                         WARMUP=warmup, REPEATS=repeats)
            for row in json.loads(run(code)):
                rows.append(row)
                print(f"{row['case']:28s} {row['variant']:42s} {row['median_ms']:10.3f} {row['min_ms']:10.3f} "
                      f"{row['gflops'] or 0:9.3f}", flush=True)
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
        print(f"wrote {out}")
    return 0


def _against_ort(text: str, tier: str, runs: int, warmup: int, out: str | None, plot: str | None) -> int:
    from . import bench_report
    from .browser import app_page
    from .server import start_background

    rows = []
    server, url = start_background()
    try:
        with app_page(url) as page:
            page.set_default_timeout(600_000)
            def run(code):
                return page.evaluate(RUN_PYTHON, code)

            names = json.loads(run(_fill(COUNT, BENCH_TEXT=text, TIER=tier)))
            adapter = page.evaluate("""async () => {
                const a = await navigator.gpu.requestAdapter();
                return a ? [a.info.vendor, a.info.architecture, a.info.device].filter(Boolean).join("/") : "none"; }""")
            print(f"adapter {adapter}; {runs} timed runs after {warmup} warm-up, per case: ours, then ORT webgpu, "
                  "then ORT jsep", flush=True)
            print(bench_report.HEADER, flush=True)
            for index in range(len(names)):
                case_json = run(_fill(CASE_JSON, BENCH_TEXT=text, TIER=tier, INDEX=index))
                got = page.evaluate(AGAINST_ORT, {"caseJson": case_json, "runs": runs, "warmup": warmup,
                                                  "eps": list(bench_report.EPS)})
                row = bench_report.combine(got["ours"], got["ort"], got["diffs"])
                rows.append(row)
                print(bench_report.format_row(row), flush=True)
            for line in bench_report.summary(rows):
                print(line)
            if plot:
                title = chart_title(tier, adapter, rows)
                _screenshot_svg(page.context.browser, bench_report.chart_svg(rows, title), plot)
                print(f"wrote {plot}")
    finally:
        server.shutdown()
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
        print(f"wrote {out}")
    return 0


def chart_title(tier: str, adapter: str, rows: list[dict]) -> str:
    sources = {r["source"] for r in rows} | {o["source"] for r in rows for o in r["ort"].values() if not o.get("error")}
    what = "median GPU ms, timestamp-query" if sources == {"timestamp-query"} else "median ms (GPU where timed, else wall)"
    return f"bench.json {tier} tier on {adapter}: ours vs onnxruntime-web, {what}"


def _screenshot_svg(browser, svg: str, path: str) -> None:
    """Renders the SVG chart in a fresh page of the same headless Chromium and saves it as PNG."""
    page = browser.new_page()
    try:
        page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
        page.locator("svg").screenshot(path=path)
    finally:
        page.close()
