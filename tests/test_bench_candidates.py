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


def bench(tmp_path: Path, variants: str) -> list[dict]:
    """CASE benched in Node with `--variants VARIANTS`, one run, no warm-up: its rows."""
    doc = json.loads((ROOT / "bench.json").read_text())
    cases = tmp_path / "fresh.json"
    cases.write_text(json.dumps({**doc, "tiers": {"fresh": "one layer"}, "cases": [CASE]}))
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, "-m", "app", "bench", "--tier", "fresh", "--bench", str(cases), "--host",
                           "node", "--variants", variants, "--runs", "1", "--warmup", "0", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.browser
def test_every_ranked_candidate_is_timed_and_checked(tmp_path):
    rows = bench(tmp_path, "candidates")
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
    rows = bench(tmp_path, "all")
    geom = infer(CASE["x"], CASE["w"], None, CASE["attributes"])
    caps = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True)
    tiled = [r for r in rows if r["tiles"]]
    assert tiled and all(r["tiles"] == planner.plan(geom, caps, r["variant"]).tiles for r in rows), rows
