"""`python -m app tune`: measures the tuning table for the adapter of headless Chromium (or Node with Dawn)
on bench.json's tuning cases and writes it under tuning/, named after the adapter (app/tuning_tables.py reads it)."""
from __future__ import annotations

import json
from pathlib import Path

from ..bench import UNTUNED
from ..contract import ROOT
from .bench_runner import check_tier, open_host


def check_request(text: str, tier: str, names: list[str] | None, source: str) -> None:
    """Before any host starts: the tier is one of the bench file's and not the holdout, and every named case is in it."""
    doc = json.loads(text)
    if tier in UNTUNED:
        raise SystemExit(f"the {tier} tier checks choices on shapes nothing was tuned on: it is never tuned on")
    check_tier(doc, tier, source)
    in_tier = {case["name"] for case in doc["cases"] if case["tier"] == tier}
    if missing := [name for name in names or () if name not in in_tier]:
        raise SystemExit(f"no case {', '.join(missing)} in the {tier} tier of {source}")


def main(tier: str = "small", host: str = "browser", runs: int = 3, out: str | None = None,
         bench_path: str | None = None, cases: str | None = None, repeats: int = 1, choose: bool = False) -> int:
    text = Path(bench_path or ROOT / "bench.json").read_text()
    names = cases.split(",") if cases else None
    check_request(text, tier, names, bench_path or "bench.json")
    with open_host(host) as app:
        got = app.py("tune", text, tier, names, runs, repeats, choose)
    for line in got["lines"]:
        print(line)
    table = got["table"]
    if not table["measured"]:
        # An empty table would read as "the defaults are best everywhere".
        raise SystemExit(f"nothing tuned: no case of the {tier} tier plans a variant with a tuning grid (a case's "
                         f"\"variant\" forces one: tools/gpu/as_dtype.py --variant)")
    for variant, classes in table["variants"].items():
        for cls, entry in classes.items():
            print(f"tuned {variant} {cls}: {entry['params']} ({entry['relative_time']:.2f}x the defaults' time)")
    for cls, by_planned in table["choices"].items():
        for planned, entry in by_planned.items():
            print(f"chosen {entry['variant']} instead of {planned} for {cls} ({entry['relative_time']:.2f}x its time)")
    for r in table["rejected"]:
        print(f"REJECTED (wrong results) {r['case']} {r['variant']}: {r['candidates']}")
    path = Path(out) if out else ROOT / "tuning" / got["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {path}")
    return 1 if table["rejected"] else 0
