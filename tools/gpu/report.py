"""Joins a GPU run's results (tools/gpu/run.sh writes them) into the report's markdown table: per bench
case, our chosen variant and the best forced one against cuDNN, fp32 and fp16, as ms, GFLOP/s and ratio,
plus the time moving the case's bytes takes at the H200's memory bandwidth (the floor for memory-bound cases).
Every case of the tier gets a row, in bench.json's order; what a stage did not produce (a case it failed on,
a stage not run) shows as "-".

    python3 tools/gpu/report.py OUT_DIR [TIER]    (TIER: the bench.json tier of the run, default full)
    python3 tools/gpu/report.py OUT_DIR large --readme    (the README's table: the planner's choice in both
                                                           dtypes against cuDNN, ms, TFLOP/s and ratio)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from app import bench  # noqa: E402
from app.host.bench_report import geometric_mean  # noqa: E402

HBM_BYTES_PER_S = 4.8e12  # H200 HBM3e, NVIDIA's figure


def _load(path: Path):
    return json.loads(path.read_text()) if path.exists() else []


def _fmt(value, places: int = 3) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _gflops(flop: int, ms: float | None) -> float | None:
    return flop / (ms * 1e6) if flop and ms else None


def _best(rows: list[dict]) -> dict:
    """The fastest of a case's rows (forced variants, then the planner's), or the planner's when none was timed."""
    timed = [r for r in rows if r.get("median_ms") is not None]
    return min(timed, key=lambda r: r["median_ms"]) if timed else rows[-1]


def readme_table(out_dir: Path, tier: str) -> int:
    """The README's form of the run: per case, the planner's variant, ms, cuDNN's ms, our TFLOP/s and the ratio in
    each dtype, then the geometric means."""
    ours = {dtype: {r["case"]: r for r in _load(out_dir / f"bench-{tier}{suffix}.json")}
            for dtype, suffix in (("float32", ""), ("float16", "-f16"))}
    torch_rows = {r["case"]: r for r in _load(out_dir / f"torch-{tier}.json")}
    print("| case | f32 variant | ms | cuDNN | TFLOP/s | ratio | f16 variant | ms | cuDNN | TFLOP/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {"float32": [], "float16": []}
    for name in [c["name"] for c in bench.load((ROOT / "bench.json").read_text(), tier)]:
        cells = []
        for dtype in ("float32", "float16"):
            row = ours[dtype].get(name, {})
            ms, theirs = row.get("median_ms"), torch_rows.get(name, {}).get(dtype, {}).get("median_ms")
            ratio = theirs / ms if ms and theirs else None
            ratios[dtype] += [ratio] if ratio else []
            gflops = row.get("gflops")
            cells += [row.get("variant", "-"), _fmt(ms), _fmt(theirs), _fmt(gflops / 1e3 if gflops else None, 1),
                      _fmt(ratio, 2)]
        print(f"| `{name}` | " + " | ".join(cells) + " |")
    means = [_fmt(geometric_mean(ratios[d]), 2) for d in ("float32", "float16")]
    print(f"| geometric mean | | | | | **{means[0]}** | | | | | **{means[1]}** |")
    return 0


def main(out: str, tier: str = "full", form: str | None = None) -> int:
    out_dir = Path(out)
    if form == "--readme":
        return readme_table(out_dir, tier)
    chosen = {r["case"]: r for r in _load(out_dir / f"bench-{tier}.json")}
    forced: dict[str, list] = {}
    for r in _load(out_dir / f"bench-{tier}-all.json"):
        forced.setdefault(r["case"], []).append(r)
    f16 = {r["case"]: r for r in _load(out_dir / f"bench-{tier}-f16.json")}
    for r in _load(out_dir / f"bench-{tier}-f16-all.json"):
        forced.setdefault(("f16", r["case"]), []).append(r)
    torch_rows = {r["case"]: r for r in _load(out_dir / f"torch-{tier}.json")}
    print("| case | GFLOP | ours: chosen variant | ms | GFLOP/s | best forced (ms) | cuDNN fp32 ms | GFLOP/s | "
          "ours/cuDNN fp32 | ours f16: chosen ms | GFLOP/s | best forced (ms) | cuDNN f16 ms | GFLOP/s | ours/cuDNN f16 | "
          "HBM floor f32 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios32, ratios16 = [], []
    for name in [c["name"] for c in bench.load((ROOT / "bench.json").read_text(), tier)]:
        row = chosen.get(name, {"variant": "-", "median_ms": None, "gflops": None, "flop": None})
        t = torch_rows.get(name, {})
        best = _best(forced.get(name, []) + [row])
        t32 = t.get("float32", {}).get("median_ms")
        t16 = t.get("float16", {}).get("median_ms")
        o16 = f16.get(name, {}).get("median_ms")
        best16 = _best(forced.get(("f16", name), []) + [f16.get(name, row)])
        r32 = t32 / row["median_ms"] if t32 and row["median_ms"] else None
        r16 = t16 / o16 if t16 and o16 else None
        ratios32 += [r32] if r32 else []
        ratios16 += [r16] if r16 else []
        floor = t["bytes_f32"] / HBM_BYTES_PER_S * 1e3 if "bytes_f32" in t else None
        flop = row["flop"] or t.get("flop")
        print(f"| {name} | {_fmt(flop / 1e9 if flop else None, 2)} | {row['variant']} | {_fmt(row['median_ms'])} | "
              f"{_fmt(row['gflops'], 0)} | {best['variant']} ({_fmt(best['median_ms'])}) | {_fmt(t32)} | "
              f"{_fmt(_gflops(flop, t32), 0)} | {_fmt(r32, 2)} | {_fmt(o16)} | {_fmt(_gflops(flop, o16), 0)} | "
              f"{best16['variant']} ({_fmt(best16['median_ms'])}) | {_fmt(t16)} | {_fmt(_gflops(flop, t16), 0)} | "
              f"{_fmt(r16, 2)} | {_fmt(floor, 4)} |")
    print(f"\nours/cuDNN throughput, geometric mean over {len(ratios32)} cases: fp32 {_fmt(geometric_mean(ratios32), 2)}, "
          f"fp16 {_fmt(geometric_mean(ratios16), 2)}")
    dense = {c["name"] for c in bench.load((ROOT / "bench.json").read_text(), tier) if c["attributes"].get("group", 1) == 1}
    for label, rows, dtype in (("fp32", chosen, "float32"), ("fp16", f16, "float16")):
        worst = [(t.get(dtype, {}).get("median_ms") / rows[n]["median_ms"], n) for n, t in torch_rows.items()
                 if n in dense and n in rows and rows[n].get("median_ms") and t.get(dtype, {}).get("median_ms")]
        if worst:
            print(f"lowest dense {label} ratio: {min(worst)[0]:.2f} ({min(worst)[1]})")
    tuned = {r["case"]: r for r in _load(out_dir / f"bench-{tier}-f16-autotune.json")}
    if tuned:
        print("\nfp16 with autotuning (a first call's choice, searched afresh):\n")
        print("| case | planner ms | autotuned variant | ms | cuDNN f16 ms | ratio | candidates | search ms |")
        print("|---|---|---|---|---|---|---|---|")
        ratios = []
        for name, r in tuned.items():
            t16 = torch_rows.get(name, {}).get("float16", {}).get("median_ms")
            ratio = t16 / r["median_ms"] if t16 and r["median_ms"] else None
            ratios += [ratio] if ratio else []
            a = r["autotune"]
            print(f"| {name} | {_fmt(f16.get(name, {}).get('median_ms'))} | {r['variant']} | {_fmt(r['median_ms'])} | "
                  f"{_fmt(t16)} | {_fmt(ratio, 2)} | {a['candidates']} | {a['search_ms']:.0f} |")
        print(f"\nautotuned fp16 geometric mean over {len(ratios)} cases: {_fmt(geometric_mean(ratios), 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
