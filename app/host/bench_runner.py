"""`python -m app bench`: runs bench.json's cases on real WebGPU (headless Chromium or Node), prints a table
and writes JSON. With `--against ort`, each case also runs on onnxruntime-web's two WebGPU builds in the
same page or process (web/views/compare.mjs), in alternating runs: end to end, GPU-resident and GPU time, and the
table ends with the geometric means (app/host/bench_report.py). `--breakdown` prints where a call's time
goes instead (first call and repeat calls, CPU data and GPU-resident tensors)."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from ..contract import ROOT

IN_PAGE = """async ([module, fn, args]) => (await import(module))[fn](...args)"""


class PageHost:
    """A booted app page as a host: bridge calls and the comparison module's functions."""

    def __init__(self, page):
        self.page = page

    def py(self, name: str, *args):
        return self.page.evaluate(IN_PAGE, ["/web/runtime/index.mjs", "callPython", [name, *args]])

    def call(self, method: str, *args):  # compare / breakdown, as the Node host names them
        fn = {"compare": "compareCase", "breakdown": "breakdownCase"}[method]
        return self.page.evaluate(IN_PAGE, ["/web/views/compare.mjs", fn, list(args)])


@contextmanager
def open_host(host: str):
    """Yields a host with py(name, *args) (app.bridge) and call("compare" | "breakdown", case, options)."""
    if host == "node":
        from .node import NodeHost

        with NodeHost() as node:
            yield node
        return
    from .browser import app_page
    from .server import start_background

    server, url = start_background()
    try:
        with app_page(url) as page:
            page.set_default_timeout(600_000)
            yield PageHost(page)
    finally:
        server.shutdown()


def check_tier(doc: dict, tier: str, source: str) -> None:
    """Stops, naming the tiers there are, where the bench file `source` has no tier `tier`."""
    tiers = doc.get("tiers", {})
    if tier not in tiers:
        raise SystemExit(f"no tier {tier!r} in {source}: its tiers are {sorted(tiers)}")


def main(tier: str = "small", host: str = "browser", variants: str | None = None, runs: int = 5,
         out: str | None = None, bench_path: str | None = None, against: str | None = None,
         plot: str | None = None, warmup: int = 1, repeats: int = 1, breakdown: bool = False,
         autotune: bool = False) -> int:
    text = Path(bench_path or ROOT / "bench.json").read_text()
    check_tier(json.loads(text), tier, bench_path or "bench.json")
    if (against or breakdown) and variants:
        raise SystemExit("--against ort and --breakdown time the planner's choice: leave out --variants")
    if plot and not against:
        raise SystemExit("--plot draws ours vs onnxruntime-web: add --against ort")
    if plot and host != "browser":
        raise SystemExit("--plot draws in the browser: use --host browser")
    if against and breakdown:
        raise SystemExit("--against ort and --breakdown are separate runs: pick one")
    if autotune and (variants or against or breakdown):
        raise SystemExit("--autotune times the choice autotuning makes: leave out --variants, --against, --breakdown")
    with open_host(host) as app:
        cases = app.py("bench_cases", text, tier)
        if breakdown:
            rows = _breakdown(app, cases, runs)
        elif against:
            rows = _against_ort(app, cases, runs, warmup, plot, tier, host)
        else:
            rows = _ours(app, cases, variants, runs, warmup, repeats, autotune)
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
        print(f"wrote {out}")
    return 1 if any(not r.get("check", {"ok": True})["ok"] for r in rows) else 0


def _ours(app, cases, variants, runs, warmup, repeats, autotune=False) -> list[dict]:
    chosen = variants.split(",") if variants and variants not in ("all", "candidates") else variants
    rows = []
    print(f"{'case':28s} {'variant':42s} {'median ms':>10s} {'min ms':>10s} {'GFLOP/s':>9s}  check", flush=True)
    for case in cases:
        for row in app.py("bench_rows", case, chosen, runs, warmup, repeats, autotune):
            if autotune:
                a = row["autotune"]
                print(f"{row['case']:28s} autotune: {a['candidates']} candidates timed, {a['search_ms']:.0f} ms of "
                      f"search", flush=True)
            rows.append(row)
            c = row["check"]
            verdict = f"ok ({c['checked']}, max err {c['max_abs_err']:.1e})" if c["ok"] else \
                f"WRONG ({c['checked']}, max err {c['max_abs_err']:.3g})"
            print(f"{row['case']:28s} {row['variant']:42s} {row['median_ms']:10.3f} {row['min_ms']:10.3f} "
                  f"{row['gflops'] or 0:9.3f}  {verdict}", flush=True)
    wrong = [f"{r['case']} [{r['variant']}]" for r in rows if not r["check"]["ok"]]
    if wrong:
        print(f"{len(wrong)} row(s) differ from the reference beyond tolerance: {', '.join(wrong)}")
    return rows


def _against_ort(app, cases, runs, warmup, plot, tier, host) -> list[dict]:
    from . import bench_report

    adapter = app.py("report_device")
    label = "/".join(p for p in (adapter["vendor"], adapter["architecture"], adapter["device"]) if p) or "unknown"
    print(f"adapter {label} ({host}); medians of {runs} alternating rounds after {warmup} warm-up, ms; "
          "ort = the faster onnxruntime-web build", flush=True)
    print(bench_report.HEADER, flush=True)
    rows = []
    for case in cases:
        row = bench_report.combine(app.call("compare", case, {"runs": runs, "warmup": warmup}))
        rows.append(row)
        print(bench_report.format_row(row), flush=True)
    for line in bench_report.summary(rows):
        print(line)
    if plot:
        title = f"bench.json {tier} tier on {label}: ours vs onnxruntime-web, end to end (median ms)"
        _screenshot_svg(app.page.context.browser, bench_report.chart_svg(rows, title), plot)
        print(f"wrote {plot}")
    return rows


def _breakdown(app, cases, runs) -> list[dict]:
    rows = []
    for case in cases:
        row = app.call("breakdown", case, {"runs": runs})
        rows.append(row)
        print(f"== {row['case']}")
        for mode in ("first_call", "repeat_cpu", "repeat_resident"):
            stages = "  ".join(f"{name} {ms:.3f}" for name, ms in row[mode].items() if name != "python")
            print(f"  {mode:16s} {stages}")
        python = row["first_call"].get("python")
        if python:
            print("  first call in Python: " + "  ".join(f"{k} {v:.3f}" for k, v in python.items()))
    return rows


def _screenshot_svg(browser, svg: str, path: str) -> None:
    """Renders the SVG chart in a fresh page of the same headless Chromium and saves it as PNG."""
    page = browser.new_page()
    try:
        page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
        page.locator("svg").screenshot(path=path)
    finally:
        page.close()
