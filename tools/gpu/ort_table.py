"""Markdown table of a `bench --against ort --out FILE` run: end to end and GPU-resident, ours beside the faster
onnxruntime-web build (the README's performance table).

    python3 tools/gpu/ort_table.py OUT/ort-full.json
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.host.bench_report import faster, geometric_mean  # noqa: E402


def cell(ours, theirs):
    return (f"{ours:.2f} | {theirs:.2f} | {ours / theirs:.2f}" if theirs else f"{ours:.2f} | refused (3D) | -")


def main(path: str) -> None:
    rows = json.loads(Path(path).read_text())
    print("| case | e2e ours ms | ORT ms | ratio | resident ours ms | ORT ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        o = row["ours"]
        print(f"| `{row['case']}` | {cell(o['e2e_ms'], faster(row, 'e2e'))} | "
              f"{cell(o['resident_ms'], faster(row, 'resident'))} |")
    means = [geometric_mean(row["ratios"][m] for row in rows) for m in ("e2e", "resident")]
    print(f"| geometric mean | | | **{means[0]:.2f}** | | | **{means[1]:.2f}** |")


if __name__ == "__main__":
    main(sys.argv[1])
