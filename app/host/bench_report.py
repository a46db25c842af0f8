"""Bench results as a report: ours vs onnxruntime-web per case, like-for-like ratios, the geometric mean,
the printed table and the chart. Pure Python (CPython tooling; unit-tested without a browser).

Ratios are ours / theirs (below 1: we are faster), always between numbers taken the same way: GPU time
(timestamp-query) against GPU time where the peer exposes it (onnxruntime-web's JSEP build), else wall time
against wall time (both with the input already on the GPU and the output left there, to
queue.onSubmittedWorkDone). A case's headline ratio is against the faster of the peer's EPs: the largest of
its ratios. A refused case (ORT cannot run it) has no ratio and stays out of the geometric mean.
"""
from __future__ import annotations

import math

EPS = ("webgpu", "jsep")


def compare(ours: dict, theirs: dict) -> dict | None:
    """{ratio, method} for one EP's result against ours, or None when the EP refused the case."""
    if theirs.get("error") or not theirs.get("median_ms"):
        return None
    if theirs.get("source") == "timestamp-query" and ours.get("source") == "timestamp-query":
        return {"ratio": ours["median_ms"] / theirs["median_ms"], "method": "gpu"}
    return {"ratio": ours["wall_median_ms"] / theirs["wall_median_ms"], "method": "wall"}


def combine(ours: dict, ort: dict[str, dict], diffs: dict[str, float | None]) -> dict:
    """One JSON row: our row, each EP's result (y dropped), the like-for-like ratios and the headline ratio."""
    row = {k: v for k, v in ours.items() if k not in ("y", "inputs")}
    row["ort"] = {ep: {k: v for k, v in r.items() if k != "y"} | {"max_abs_diff": diffs.get(ep)}
                  for ep, r in ort.items()}
    ratios = {ep: compare(ours, r) for ep, r in ort.items()}
    row["ratios"] = ratios
    valid = [r["ratio"] for r in ratios.values() if r]
    row["ratio_vs_faster"] = max(valid) if valid else None
    return row


def geometric_mean(values) -> float | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    if any(v <= 0 for v in values):
        raise ValueError("the geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ms(value) -> str:
    return f"{value:9.2f}" if value is not None else f"{'-':>9s}"


def _ep_cell(row: dict, ep: str) -> str:
    r = row["ort"].get(ep)
    if r is None:
        return f"{'not run':>23s}"
    if r.get("error"):
        return f"{'refused':>23s}"
    kind = "gpu" if r["source"] == "timestamp-query" else "wall"
    diff = r.get("max_abs_diff")
    return f"{r['median_ms']:9.2f} {kind:4s} {diff if diff is not None else float('nan'):8.1e}"


HEADER = (f"{'case':24s} {'variant':30s} {'ours gpu':>9s} {'ours wall':>9s} {'GFLOP/s':>8s} "
          f"{'ort-webgpu ms      diff':>23s} {'ort-jsep ms        diff':>23s} {'ours/ort':>9s}")


def format_row(row: dict) -> str:
    """One table line; a refused EP prints 'refused' (its error is listed under the table)."""
    ratio = row.get("ratio_vs_faster")
    ours_gpu = row["median_ms"] if row["source"] != "wall" else None
    return (f"{row['case']:24s} {row['variant'][:30]:30s} {_ms(ours_gpu)} {_ms(row['wall_median_ms'])} "
            f"{row['gflops'] or 0:8.3f} {_ep_cell(row, 'webgpu')} {_ep_cell(row, 'jsep')} "
            + (f"{ratio:9.3f}" if ratio is not None else f"{'-':>9s}"))


def summary(rows: list[dict]) -> list[str]:
    """Lines under the table: refusals with ORT's words, then the geometric means."""
    lines = []
    for row in rows:
        for ep, r in row["ort"].items():
            if r.get("error"):
                lines.append(f"  {row['case']}: onnxruntime-web {ep} refused: {r['error']}")
    gm = geometric_mean(r.get("ratio_vs_faster") for r in rows)
    counted = sum(1 for r in rows if r.get("ratio_vs_faster") is not None)
    for ep in EPS:
        ep_gm = geometric_mean((r["ratios"].get(ep) or {}).get("ratio") for r in rows)
        if ep_gm is not None:
            lines.append(f"geometric mean ours/ort-{ep}: {ep_gm:.3f} (speed-up {1 / ep_gm:.2f}x)")
    if gm is None:
        lines.append("geometric mean ours/ort (faster EP): - (ORT ran no case)")
    else:
        lines.append(f"geometric mean ours/ort (faster EP per case, {counted} of {len(rows)} cases): {gm:.3f} "
                     f"(speed-up {1 / gm:.2f}x)")
    return lines


def chart_svg(rows: list[dict], title: str) -> str:
    """A horizontal bar chart (log scale) of ours vs each EP per case (each one's median_ms: GPU time where
    its source is timestamp-query), as standalone SVG; the bench runner screenshots it to a PNG."""
    series = [("ours", "#1f77b4", lambda r: r["median_ms"]),
              ("onnxruntime-web webgpu EP", "#ff7f0e", lambda r: _ep_value(r, "webgpu")),
              ("onnxruntime-web jsep", "#2ca02c", lambda r: _ep_value(r, "jsep"))]
    values = [f(r) for r in rows for _, _, f in series if f(r)]
    lo, hi = math.log10(min(values)) - 0.1, math.log10(max(values)) + 0.1
    left, width, bar, gap = 200, 560, 9, 12
    group = bar * len(series) + gap
    height = 70 + group * len(rows) + 40
    x = lambda v: left + (math.log10(v) - lo) / (hi - lo) * width  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" height="{height}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{title}</text>']
    for i, (name, color, _) in enumerate(series):
        out.append(f'<rect x="{left + i * 190 - 150}" y="32" width="12" height="12" fill="{color}"/>'
                   f'<text x="{left + i * 190 - 134}" y="43">{name}</text>')
    top = 60
    for j, row in enumerate(rows):
        y0 = top + j * group
        out.append(f'<text x="{left - 6}" y="{y0 + group / 2}" text-anchor="end">{row["case"]}</text>')
        for i, (name, color, f) in enumerate(series):
            v = f(row)
            if v:
                out.append(f'<rect x="{left}" y="{y0 + i * bar}" width="{x(v) - left:.1f}" height="{bar - 1}" '
                           f'fill="{color}"/>')
            else:
                out.append(f'<text x="{left + 3}" y="{y0 + i * bar + bar - 1}" font-size="9">{name}: refused</text>')
    axis_y = top + group * len(rows) + 5
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + width}" y2="{axis_y}" stroke="black"/>')
    for p in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** p
            if lo <= math.log10(v) <= hi:
                out.append(f'<line x1="{x(v):.1f}" y1="{top - 4}" x2="{x(v):.1f}" y2="{axis_y}" stroke="#ddd"/>'
                           f'<text x="{x(v):.1f}" y="{axis_y + 15}" text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{left + width / 2}" y="{axis_y + 32}" text-anchor="middle">milliseconds (log scale, '
               'lower is faster)</text></svg>')
    return "\n".join(out)


def _ep_value(row: dict, ep: str):
    r = row["ort"].get(ep)
    return None if not r or r.get("error") else r["median_ms"]
