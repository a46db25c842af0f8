"""Bench results as a report: ours vs onnxruntime-web per case (web/views/compare.mjs rows), ratios, geometric
means, the printed table and the chart. Pure Python (CPython tooling; unit-tested without a browser).

Each row holds, for ours and each ORT build, medians of alternating runs measured the same way on both
sides: `e2e` (CPU x in, y back on the CPU in a new array, weights already on the GPU), `e2e_into` (the same, y
read into an array each side reuses: docs/models.md says how on each side), `resident` (x and y in GPU buffers,
to queue.onSubmittedWorkDone) and `gpu` (compute passes' timestamps). The table shows e2e, resident and gpu;
e2e_into has its geometric-mean line. Ratios are ours / theirs (below 1: we
are faster), against the faster ORT build per case and metric. A build that refused the case (ORT has no
3D ConvTranspose) has no ratio and stays out of the geometric means.
"""
from __future__ import annotations

import math

EPS = ("webgpu", "jsep")
METRICS = ("e2e", "e2e_into", "resident", "gpu")


def _ms_of(side: dict, metric: str) -> float | None:
    """A side's median for a metric; none for e2e_into where its y was not e2e's (it timed something else)."""
    if metric == "e2e_into" and side.get("into_same_as_e2e") is False:
        return None
    return side.get(f"{metric}_ms") or None


def faster(row: dict, metric: str) -> float | None:
    """The faster ORT build's median for a metric, or None when no build ran the case."""
    values = [_ms_of(r, metric) for r in row["ort"].values() if not r.get("error")]
    values = [v for v in values if v]
    return min(values) if values else None


def combine(row: dict) -> dict:
    """A compare row with its ratios: {metric: ours / faster ORT} and per build {ep: {metric: ratio}}."""
    out = dict(row)
    ours = row["ours"]
    out["ratios"] = {m: (_ms_of(ours, m) / faster(row, m)) if _ms_of(ours, m) and faster(row, m) else None
                     for m in METRICS}
    out["ep_ratios"] = {ep: {m: _ms_of(ours, m) / _ms_of(r, m) if _ms_of(ours, m) and _ms_of(r, m) else None
                             for m in METRICS}
                        for ep, r in row["ort"].items() if not r.get("error")}
    return out


def geometric_mean(values) -> float | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    if any(v <= 0 for v in values):
        raise ValueError("the geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ms(value) -> str:
    return f"{value:8.3f}" if value is not None else f"{'-':>8s}"


def _ratio(value) -> str:
    return f"{value:6.2f}" if value is not None else f"{'-':>6s}"


HEADER = (f"{'case':22s} {'variant':28s} | {'e2e ours':>8s} {'ort':>8s} {'ratio':>6s} | {'res ours':>8s} "
          f"{'ort':>8s} {'ratio':>6s} {'host':>7s} | {'gpu ours':>8s} {'ort':>8s} {'ratio':>6s} | {'err':>7s}")


def format_row(row: dict) -> str:
    """One table line (ms; `ort` is the faster build's median; host: ours until kernel() returns, resident)."""
    o, r = row["ours"], row["ratios"]
    err = o.get("max_abs_diff_reference")
    return (f"{row['case'][:22]:22s} {str(o.get('variant'))[:28]:28s} | {_ms(o.get('e2e_ms'))} {_ms(faster(row, 'e2e'))} "
            f"{_ratio(r['e2e'])} | {_ms(o.get('resident_ms'))} {_ms(faster(row, 'resident'))} {_ratio(r['resident'])} "
            f"{o.get('host_ms') or 0:7.3f} | {_ms(o.get('gpu_ms'))} {_ms(faster(row, 'gpu'))} {_ratio(r['gpu'])} | "
            f"{err if err is not None else float('nan'):7.1e}")


def summary(rows: list[dict]) -> list[str]:
    """Lines under the table: refusals with ORT's words, then the geometric means per metric and build."""
    lines = []
    for row in rows:
        for ep, r in row["ort"].items():
            if r.get("error"):
                lines.append(f"  {row['case']}: onnxruntime-web {ep} refused: {r['error']}")
    for m in METRICS:
        gm = geometric_mean(row["ratios"][m] for row in rows)
        counted = [row["ratios"][m] for row in rows if row["ratios"][m] is not None]
        if gm is None:
            lines.append(f"{m}: ORT ran no case")
            continue
        slower = sum(1 for v in counted if v > 1)
        per_ep = ", ".join(f"vs {ep} {g:.3f}" for ep in EPS
                           if (g := geometric_mean(row["ep_ratios"].get(ep, {}).get(m) for row in rows)) is not None)
        lines.append(f"{m}: geometric mean ours/faster ORT {gm:.3f} over {len(counted)} cases "
                     f"(max {max(counted):.3f}, slower on {slower}); {per_ep}")
    turns = [(row["ours"]["in_turn_e2e_ms"] / row["ours"]["e2e_ms"], row["ours"].get("weight_bytes_written_in_rounds"))
             for row in rows if row["ours"].get("in_turn_e2e_ms") and row["ours"].get("e2e_ms")]
    if turns:
        ratios = [r for r, _ in turns]
        lines.append(f"two same-signature layers called in turn on one kernel, end to end per layer / one layer alone: "
                     f"geometric mean {geometric_mean(ratios):.3f}, max {max(ratios):.3f} over {len(turns)} cases; "
                     f"weight bytes written in the timed rounds: {sum(w or 0 for _, w in turns)}")
    differs = [f"{row['case']} ({side})" for row in rows for side, r in [("ours", row["ours"]), *row["ort"].items()]
               if r.get("into_same_as_e2e") is False]
    if differs:
        lines.append(f"e2e_into void where its y differs from e2e's (the same calls, y read elsewhere): {', '.join(differs)}")
    hosts = [row["ours"].get("host_ms") for row in rows if row["ours"].get("host_ms") is not None]
    if hosts:
        lines.append(f"host time of a repeat call, GPU-resident tensors: median {sorted(hosts)[len(hosts) // 2]:.3f} ms, "
                     f"max {max(hosts):.3f} ms")
    return lines


def chart_svg(rows: list[dict], title: str) -> str:
    """A horizontal bar chart (log scale) of ours vs each ORT build per case (end-to-end medians), as
    standalone SVG; the bench runner screenshots it to a PNG."""
    series = [("ours", "#1f77b4", lambda r: r["ours"].get("e2e_ms")),
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
    return None if not r or r.get("error") else r.get("e2e_ms")
