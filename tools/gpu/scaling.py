"""How cost grows with work: one k4 s2 p1 class and one stride-1 3x3 class, channels and spatial sizes swept
from about 1e7 to 1e11 multiply-adds, timed on the H200 for ours, cuDNN and onnxruntime-web, and drawn on
log-log axes (GPU ms against multiply-adds), so that where each one saturates shows.

    python3 tools/gpu/scaling.py cases > /tmp/gpu/scaling.json        # a bench file, tier "scaling"
    python3 tools/gpu/scaling.py cases --ort > /tmp/gpu/scaling-ort.json  # the cases onnxruntime-web runs (ORT_MAX_MADDS)
    (the GPU machine: bench, torch_bench and bench --against ort on it; tools/gpu/run.sh's scaling stage)
    python3 tools/gpu/scaling.py plot OUT_DIR docs/scaling.svg        # the figure, and a table on stdout
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from app.shapes import infer  # noqa: E402  (after the path: the repository's package)

# (channels in, spatial side): k4 s2 p1 with C -> C/2 (8 C^2 H^2 multiply-adds), stride-1 3x3 with C -> C
# (9 C^2 H^2).
K4S2 = [(64, 16), (64, 32), (128, 32), (256, 32), (256, 64), (512, 64), (512, 128), (1024, 128)]
S1 = [(32, 32), (64, 32), (64, 64), (128, 64), (256, 64), (256, 128), (512, 128), (512, 256)]
# onnxruntime-web's ConvTranspose took 7.2 ms at 8.5e9 multiply-adds and its runs of the larger
# cases did not finish within a device call: it is timed up to here.
ORT_MAX_MADDS = 1e10
FILL = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 0,
        "doc": "x, w, b drawn in that order from numpy.random.default_rng(seed), rounded to float32"}


def madds(case: dict) -> int:
    """The case's multiply-adds as the bench counts them (its rows' flop / 2, the plot's axis)."""
    return infer(case["x"], case["w"], None, case["attributes"]).multiply_adds()


def cases(ort: bool = False) -> dict:
    """The bench file; with `ort`, only the cases onnxruntime-web is timed on."""
    out = []
    for c, h in K4S2:
        out.append({"name": f"k4s2p1_c{c}_{h}px", "tier": "scaling", "model": "k4 s2 p1 class", "x": [1, c, h, h],
                    "w": [c, c // 2, 4, 4], "bias": False, "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                    "dtype": "float32"})
    for c, h in S1:
        out.append({"name": f"s1k3_c{c}_{h}px", "tier": "scaling", "model": "stride-1 3x3 class", "x": [1, c, h, h],
                    "w": [c, c, 3, 3], "bias": False, "attributes": {"pads": [1, 1, 1, 1]}, "dtype": "float32"})
    if ort:
        out = [c for c in out if madds(c) <= ORT_MAX_MADDS]
    return {"op": "ai.onnx.ConvTranspose", "version": 1, "fill": FILL, "tiers": {"scaling": "cost against work"},
            "cases": out, "tuning": {"grids": {}}}


def _load(path: Path):
    return json.loads(path.read_text()) if path.exists() else []


def series(out_dir: Path) -> dict:
    """name -> {case: (multiply-adds, GPU ms)} for every implementation timed."""
    flop = {r["case"]: r["flop"] / 2 for r in _load(out_dir / "torch-scaling.json")}
    found: dict[str, dict] = {}
    for label, path in (("ours fp32", "bench-scaling.json"), ("ours fp16", "bench-scaling-f16.json")):
        for r in _load(out_dir / path):
            found.setdefault(label, {})[r["case"]] = (r["flop"] / 2, r["median_ms"])
    for r in _load(out_dir / "torch-scaling.json"):
        for dtype, label in (("float32", "cuDNN fp32"), ("float16", "cuDNN fp16")):
            found.setdefault(label, {})[r["case"]] = (flop[r["case"]], r[dtype]["median_ms"])
    for r in _load(out_dir / "ort-scaling.json"):
        times = [r["ort"][b]["gpu_ms"] for b in ("webgpu", "jsep") if r["ort"].get(b, {}).get("gpu_ms")]
        if times and r["case"] in flop:
            found.setdefault("onnxruntime-web fp32 (faster build)", {})[r["case"]] = (flop[r["case"]], min(times))
    return found


COLORS = ["#1f77b4", "#6baed6", "#d62728", "#ff9896", "#2ca02c", "#9467bd"]


def svg(found: dict, title: str) -> str:
    w, h, m = 760, 480, 60
    points = [p for s in found.values() for p in s.values() if p[1]]
    lx = [math.log10(p[0]) for p in points]
    ly = [math.log10(p[1]) for p in points]
    x0, x1, y0, y1 = math.floor(min(lx)), math.ceil(max(lx)), math.floor(min(ly)), math.ceil(max(ly))
    X = lambda v: m + (math.log10(v) - x0) / (x1 - x0) * (w - 2 * m)  # noqa: E731
    Y = lambda v: h - m - (math.log10(v) - y0) / (y1 - y0) * (h - 2 * m)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>', f'<text x="{m}" y="20" font-size="14">{title}</text>']
    for e in range(x0, x1 + 1):
        parts.append(f'<line x1="{X(10**e)}" y1="{m}" x2="{X(10**e)}" y2="{h-m}" stroke="#ddd"/>'
                     f'<text x="{X(10**e)}" y="{h-m+16}" text-anchor="middle">1e{e}</text>')
    for e in range(y0, y1 + 1):
        parts.append(f'<line x1="{m}" y1="{Y(10**e)}" x2="{w-m}" y2="{Y(10**e)}" stroke="#ddd"/>'
                     f'<text x="{m-6}" y="{Y(10**e)+4}" text-anchor="end">{10**e:g}</text>')
    parts.append(f'<text x="{w/2}" y="{h-16}" text-anchor="middle">multiply-adds</text>'
                 f'<text x="16" y="{h/2}" transform="rotate(-90 16 {h/2})" text-anchor="middle">GPU ms</text>')
    for i, (label, pts) in enumerate(sorted(found.items())):
        color = COLORS[i % len(COLORS)]
        for cls, marker in (("k4s2p1", "circle"), ("s1k3", "rect")):
            line = sorted(p for c, p in pts.items() if c.startswith(cls) and p[1])
            if line:
                parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" stroke-dasharray='
                             f'"{"none" if cls == "k4s2p1" else "5,3"}" points="'
                             + " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in line) + '"/>')
                for a, b in line:
                    parts.append(f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="3" fill="{color}"/>' if marker == "circle"
                                 else f'<rect x="{X(a)-3:.1f}" y="{Y(b)-3:.1f}" width="6" height="6" fill="{color}"/>')
        parts.append(f'<rect x="{m+10}" y="{m+8+i*16}" width="10" height="10" fill="{color}"/>'
                     f'<text x="{m+26}" y="{m+17+i*16}">{label}</text>')
    parts.append(f'<text x="{w-m}" y="{m+17}" text-anchor="end">solid, circles: k4 s2 p1; dashed, squares: stride-1 3x3</text>')
    return "\n".join(parts + ["</svg>"])


def main(argv: list[str]) -> int:
    if argv[:1] == ["cases"]:
        print(json.dumps(cases(ort=argv[1:] == ["--ort"]), indent=1))
        return 0
    out_dir, figure = Path(argv[1]), Path(argv[2])
    found = series(out_dir)
    figure.write_text(svg(found, "Cost against work on the H200: GPU time per call (median), log-log"))
    names = sorted(found)
    print("| case | multiply-adds | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for c in [c["name"] for c in cases()["cases"]]:
        mac = next((s[c][0] for s in found.values() if c in s), None)
        cells = [f"{found[n][c][1]:.4f}" if c in found[n] and found[n][c][1] else "-" for n in names]
        print(f"| {c} | {mac:.2e} | " + " | ".join(cells) + " |" if mac else f"| {c} | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
