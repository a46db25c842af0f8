"""Time from page load to a first result in headless Chromium, ours beside onnxruntime-web's, on one layer
(tools/first_result.mjs): a first visit (a new browser context: empty HTTP cache, empty IndexedDB) and a revisit
(the same context, the page loaded again), alternated for a few rounds.

    python3 tools/first_result.py [--rounds 3] [--out build/first-result.json]
    python3 tools/first_result.py summary FILE.jsonl     # the table of rows a Node run wrote (tools/gpu/run.sh firstresult)

Ours is the package as a web app hosts it (`python -m app export`, imported by URL); onnxruntime-web is its native
WebGPU build (ort.webgpu.min.mjs, what `bench --against ort` calls "webgpu") from node_modules, its one-node model
made by tools/gpu/first_result.mjs. Served from one static server with no caching headers (the browser's heuristic
cache applies, as on a plain host).
"""
from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAY_MS = 3000  # how long a visit stays before the next, for either package
sys.path.insert(0, str(ROOT))


class Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript", ".js": "text/javascript",
                      ".wasm": "application/wasm"}

    def log_message(self, *args):
        pass


def summary(rows: list[dict]) -> str:
    """Median (and range) of each side's times per visit, as a markdown table."""
    lines = ["| who | visit | runs | ready (ms) | first result (ms) |", "|---|---|---|---|---|"]
    for who in ("ours", "ort"):
        for visit in ("first", "revisit", "new signature"):
            picked = [r for r in rows if r.get("who") == who and r.get("visit") == visit and "resultMs" in r]
            if not picked:
                continue
            ready = [r.get("kernelMs", r.get("sessionMs")) for r in picked]
            result = [r["resultMs"] for r in picked]
            span = lambda xs: f"{statistics.median(xs):.0f} ({min(xs):.0f}-{max(xs):.0f})"  # noqa: E731
            lines.append(f"| {who} | {visit} | {len(picked)} | {span(ready)} | {span(result)} |")
    return "\n".join(lines)


def measure(rounds: int, kernel: str | None = None) -> list[dict]:
    from app.host.browser import CHROMIUM, FLAGS
    from app.host.export import export
    from playwright.sync_api import sync_playwright

    site = ROOT / "build" / "first-result"
    if kernel:  # an export made elsewhere (another tree's): served from here
        shutil.rmtree(site / "kernel", ignore_errors=True)
        shutil.copytree(kernel, site / "kernel")
    else:
        export(site / "kernel")
    subprocess.run(["node", str(ROOT / "tools" / "gpu" / "first_result.mjs"), "model", str(site / "layer.onnx")],
                   check=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    page_url = (f"{base}tools/first_result.html?kernel={base}build/first-result/kernel/"
                f"&ort={base}node_modules/onnxruntime-web/dist/&model={base}build/first-result/layer.onnx")
    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            for round_ in range(rounds):
                for who in ("ours", "ort"):
                    context = browser.new_context()
                    page = context.new_page()
                    page.set_default_timeout(600_000)
                    # ours also on a revisit that calls a signature no stored plan holds
                    visits = ("first", "revisit") + (("new signature",) if who == "ours" else ())
                    for visit in visits:
                        page.goto(f"{page_url}&who={who}" + ("&layer=new" if visit == "new signature" else ""))
                        row = page.evaluate("window.firstResult")
                        row.update(visit=visit, round=round_)
                        rows.append(row)
                        print(json.dumps({k: v for k, v in row.items() if k not in ("y", "phases")}), flush=True)
                        page.wait_for_timeout(STAY_MS)  # a page stays open past its first result (what it does behind it)
                    context.close()
            browser.close()
    finally:
        server.shutdown()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/first_result.py")
    parser.add_argument("command", nargs="?", default="measure", choices=["measure", "summary"])
    parser.add_argument("file", nargs="?", help="summary: a JSON-lines file of rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "build" / "first-result.json"))
    parser.add_argument("--kernel", help="an exported folder to time instead of exporting this tree")
    args = parser.parse_args(argv)
    if args.command == "summary":
        rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.startswith("{")]
        print(summary(rows))
        return 0
    rows = measure(args.rounds, args.kernel)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(summary(rows))
    ours_phases = next((r["phases"] for r in rows if r.get("who") == "ours" and r.get("phases")), [])
    for p in ours_phases:
        print(f"  {p['phase']:<24} at {p['startMs']:7.0f} ms, {p['ms'] or 0:6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
