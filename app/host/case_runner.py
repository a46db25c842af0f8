"""Runs a case file through the real page in headless Chromium: Pyodide loads once, cases run one by one."""
from __future__ import annotations

import sys
from pathlib import Path

from .browser import app_page
from .server import start_background

KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose"
CASE_TIMEOUT_MS = 120_000

OPEN_CASES = """async ([id, text]) => {
  window.__caseKernel = await window.getKernel(id, {version: 1});
  return window.__caseKernel.loadCases(text);
}"""
RUN_CASE = "([i, variant]) => window.__caseKernel.runCase(i, variant)"


def format_line(result: dict) -> str:
    if result["status"] == "PASS" and result["max_abs_err"] is not None:
        detail = f"max_abs_err={result['max_abs_err']:.3g}"
    else:
        detail = result["detail"]
    return f"{result['status']} {result['name']} [{result['variant']}] {detail}".rstrip()


def run_on_page(page, text: str, variant: str | None = None):
    """Yields one result dict per case of the case-file text, run in an already booted app page."""
    page.set_default_timeout(CASE_TIMEOUT_MS)
    names = page.evaluate(OPEN_CASES, [KERNEL_ID, text])
    for i in range(len(names)):
        yield page.evaluate(RUN_CASE, [i, variant])


def iter_results(path: str | Path, variant: str | None = None):
    """Serves the app, boots it once in headless Chromium and yields the results of a case file."""
    server, url = start_background()
    try:
        with app_page(url) as page:
            yield from run_on_page(page, Path(path).read_text(), variant)
    finally:
        server.shutdown()


def main(path: str, variant: str | None = None) -> int:
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for result in iter_results(path, variant):
        counts[result["status"]] += 1
        print(format_line(result), flush=True)
    summary = f"{counts['PASS']} passed, {counts['FAIL']} failed"
    if counts["SKIP"]:
        summary += f", {counts['SKIP']} skipped"
    print(summary)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
