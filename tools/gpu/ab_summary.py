"""Summarises tools/gpu/run.sh's ab stage: per case and dtype, the median over the rounds of each side's GPU median
(a: ALT's files, b: this tree's), b / a (under 1: this tree is faster), and whether every run's output passed its
check against the float64 reference; then the geometric mean of b / a per dtype.

    python3 tools/gpu/ab_summary.py DIR    (DIR holds the stage's a1-f32.json, b1-f32.json, a1-f16.json, ...)
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.host.bench_report import geometric_mean  # noqa: E402

RUN = re.compile(r"([ab])(\d+)-(f32|f16)\.json")


def summary(folder: str) -> list[str]:
    times: dict[tuple[str, str], dict] = {}  # (dtype, case) -> {"a": [ms], "b": [ms], "ok": bool}
    for path in sorted(Path(folder).iterdir()):
        match = RUN.fullmatch(path.name)
        if not match:
            continue
        side, _, dtype = match.groups()
        for row in json.loads(path.read_text()):
            entry = times.setdefault((dtype, row["case"]), {"a": [], "b": [], "ok": True})
            if row.get("median_ms") is not None:
                entry[side].append(row["median_ms"])
            entry["ok"] &= bool(row.get("check", {}).get("ok"))
    lines = ["| case | dtype | a ms | b ms | b / a | checked |", "|---|---|---|---|---|---|"]
    ratios: dict[str, list[float]] = {"f32": [], "f16": []}
    for (dtype, case), entry in sorted(times.items(), key=lambda kv: (kv[0][0] != "f32", kv[0][1])):
        a, b = (statistics.median(entry[s]) if entry[s] else None for s in "ab")
        ratio = b / a if a and b else None
        if ratio:
            ratios[dtype].append(ratio)
        cells = [f"{a:.4f}" if a else "-", f"{b:.4f}" if b else "-", f"{ratio:.3f}" if ratio else "-"]
        lines.append(f"| {case} | {dtype} | " + " | ".join(cells) + f" | {'ok' if entry['ok'] else 'FAILED'} |")
    for dtype, values in ratios.items():
        if values:
            lines.append(f"\n{dtype}: b / a geometric mean {geometric_mean(values):.3f} over {len(values)} cases")
    return lines


if __name__ == "__main__":
    print("\n".join(summary(sys.argv[1])))
