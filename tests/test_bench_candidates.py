"""`python -m app bench --variants candidates`: every (variant, tiles) the planner ranks for a layer, the pool
adaptation's trials draw from, each timed and checked, so that a trial's choice in other tiles than a variant's own
has a bench time of its own (tools/choice_report.py matches rows by variant and tiles)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app import planner
from app.caps import DeviceCaps
from app.shapes import infer

ROOT = Path(__file__).resolve().parent.parent
CASE = {"name": "tiny", "tier": "fresh", "x": [1, 8, 6, 6], "w": [8, 4, 3, 3], "attributes": {"strides": [2, 2]}}


@pytest.mark.browser
def test_every_ranked_candidate_is_timed_and_checked(tmp_path):
    doc = json.loads((ROOT / "bench.json").read_text())
    bench = tmp_path / "fresh.json"
    bench.write_text(json.dumps({**doc, "tiers": {"fresh": "one layer"}, "cases": [CASE]}))
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, "-m", "app", "bench", "--tier", "fresh", "--bench", str(bench), "--host",
                           "node", "--variants", "candidates", "--runs", "1", "--warmup", "0", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    pairs = [(r["variant"], json.dumps(r["tiles"], sort_keys=True)) for r in rows]
    assert len(set(pairs)) == len(pairs) and all(r["check"]["ok"] for r in rows), rows
    variants = {v for v, _ in pairs}
    assert len(pairs) > len(variants)  # some kernel in more than its own tiles, as the trials draw them
    # the adapter's own ranking (Node's SwiftShader: its features and limits): each kernel's own tiles among them
    geom = infer(CASE["x"], CASE["w"], None, CASE["attributes"])
    caps = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True)
    own = {(p.variant, json.dumps(dict(p.tiles), sort_keys=True)) for _, p, _ in planner.ranked(geom, caps)
           if p.variant in variants}
    assert own <= set(pairs), own - set(pairs)


@pytest.mark.browser
def test_an_all_variants_run_of_one_repeat_records_the_tiles_each_variant_ran(tmp_path):
    """`--variants all` without --repeats (software adapters' runs): each row names its tiles, the variant's own."""
    doc = json.loads((ROOT / "bench.json").read_text())
    bench = tmp_path / "fresh.json"
    bench.write_text(json.dumps({**doc, "tiers": {"fresh": "one layer"}, "cases": [CASE]}))
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, "-m", "app", "bench", "--tier", "fresh", "--bench", str(bench), "--host",
                           "node", "--variants", "all", "--runs", "1", "--warmup", "0", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    geom = infer(CASE["x"], CASE["w"], None, CASE["attributes"])
    caps = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True)
    tiled = [r for r in rows if r["tiles"]]
    assert tiled and all(r["tiles"] == planner.plan(geom, caps, r["variant"]).tiles for r in rows), rows
