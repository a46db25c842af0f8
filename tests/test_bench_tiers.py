"""bench.json's tiers: the holdout tier's shapes appear in no other tier, nothing tunes on it, and its bench
check (sampled against the float64 reference) stays cheap at its largest case; `python -m app tune` takes any other
tier of its bench file and stops on what the file lacks or where nothing was tuned."""
import contextlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from app import bench, tuner
from app.__main__ import main
from app.host import tune_runner
from app.host.tune_runner import check_request
from app.kernel import validate
from app.reference import reference_at, sample_points
from app.shapes import infer

ROOT = Path(__file__).resolve().parent.parent
DOC = json.loads((ROOT / "bench.json").read_text())


def _shape(case: dict) -> str:
    return json.dumps([case["x"], case["w"], case["attributes"]], sort_keys=True)


def test_holdout_shapes_and_names_appear_in_no_other_tier():
    held = [c for c in DOC["cases"] if c["tier"] == bench.HOLDOUT]
    others = [c for c in DOC["cases"] if c["tier"] != bench.HOLDOUT]
    assert len(held) >= 12 and bench.HOLDOUT in DOC["tiers"]
    assert len({_shape(c) for c in held}) == len(held)
    assert not {_shape(c) for c in held} & {_shape(c) for c in others}
    assert len({c["name"] for c in held}) == len(held) and not {c["name"] for c in held} & {c["name"] for c in others}


def test_every_holdout_case_is_a_valid_request():
    for case in bench.load(json.dumps(DOC), bench.HOLDOUT):
        m = case["w"][1] * case["attributes"].get("group", 1)
        infer(case["x"], case["w"], [m] if case["bias"] else None, case["attributes"])


def test_the_tuner_refuses_the_holdout_tier():
    cases = bench.load(json.dumps(DOC), bench.HOLDOUT)[:1]
    # Stepped by hand, not asyncio.run: the refusal comes before the first await, and the browser tests'
    # Playwright keeps an event loop running in this thread.
    with pytest.raises(ValueError, match="never tuned on"):
        tuner.tune(None, cases).send(None)
    with pytest.raises(SystemExit, match="never tuned on"):
        main(["tune", "--tier", bench.HOLDOUT])


@pytest.mark.parametrize("argv, words", [
    (["--tier", "extra"], "no tier 'extra' in bench.json: its tiers are ['full', 'holdout', 'large', 'small']"),
    (["--tier", "full", "--cases", "stride1_3x3,encodec_k20s10p5"], "no case encodec_k20s10p5 in the full tier"),
])
def test_tune_names_a_tier_or_case_the_bench_file_lacks_before_any_host_starts(argv, words):
    with pytest.raises(SystemExit, match=re.escape(words)):
        main(["tune", "--host", "node", *argv])


def test_tune_takes_any_tier_of_its_bench_file(tmp_path):
    doc = dict(DOC, tiers={"probe": "shapes of one experiment"},
               cases=[dict(DOC["cases"][0], tier="probe", name="p1")])
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(doc))
    check_request(path.read_text(), "probe", ["p1"], str(path))  # no exit
    with pytest.raises(SystemExit, match="no case p2"):
        check_request(path.read_text(), "probe", ["p2"], str(path))


def test_tune_stops_where_nothing_was_tuned(monkeypatch, tmp_path):
    # a tier none of whose cases plans a variant with a grid would write an empty table, read later as "the defaults
    # are best everywhere"
    class Host:
        def py(self, name, *args):
            return {"lines": [], "file": "x.json", "table": {"variants": {}, "choices": {}, "rejected": [], "measured": []}}

    monkeypatch.setattr(tune_runner, "open_host", lambda host: contextlib.nullcontext(Host()))
    with pytest.raises(SystemExit, match="nothing tuned: no case of the full tier"):
        tune_runner.main("full", "node", out=str(tmp_path / "table.json"))
    assert not (tmp_path / "table.json").exists()


def test_the_largest_holdout_case_is_checked_at_samples_quickly():
    case = next(c for c in bench.load(json.dumps(DOC), bench.HOLDOUT) if c["name"].startswith("istft"))
    geom, arrays = validate(**bench.make_inputs(case), **case["attributes"])
    assert geom.multiply_adds() > bench.FULL_CHECK_LIMIT
    points = sample_points(geom, bench.SAMPLES)
    start = time.perf_counter()
    want = reference_at(geom, arrays["x"], arrays["w"], None, points)
    y = np.zeros(geom.y_shape, np.float32)
    y[tuple(points.T)] = want
    assert bench.check(geom, arrays, y)["ok"] and time.perf_counter() - start < 10
    y[tuple(points[-1])] += 0.1  # one wrong tap's worth: the 4-tap phase tolerance must see it
    assert not bench.check(geom, arrays, y)["ok"]


def test_the_gpu_report_tabulates_every_holdout_case_even_where_a_stage_failed(tmp_path):
    names = [c["name"] for c in bench.load(json.dumps(DOC), bench.HOLDOUT)]
    ours = {"case": names[0], "variant": "ncl1d_col2im", "median_ms": 2.0, "gflops": 50.0, "flop": 1e8}
    (tmp_path / "bench-holdout.json").write_text(json.dumps([ours]))
    (tmp_path / "torch-holdout.json").write_text(json.dumps([{"case": names[1], "flop": 1e8, "bytes_f32": 4e6,
                                                              "float32": {"median_ms": 1.0},
                                                              "float16": {"median_ms": 0.5}}]))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu" / "report.py"), str(tmp_path), bench.HOLDOUT],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split(" | ")[0].strip("| ") for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1:] == names and "| ncl1d_col2im | 2.000 |" in out


def test_the_readme_table_has_each_dtype_against_cudnn_and_the_means(tmp_path):
    names = [c["name"] for c in bench.load(json.dumps(DOC), "large")]
    for suffix, ms in (("", 0.2), ("-f16", 0.05)):
        (tmp_path / f"bench-large{suffix}.json").write_text(json.dumps(
            [{"case": names[0], "variant": "phase_gemm", "median_ms": ms, "gflops": 1e3 / ms, "flop": 1e9}]))
    (tmp_path / "torch-large.json").write_text(json.dumps(
        [{"case": names[0], "float32": {"median_ms": 0.1}, "float16": {"median_ms": 0.1}}]))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu" / "report.py"), str(tmp_path), "large", "--readme"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[2] == (f"| `{names[0]}` | phase_gemm | 0.200 | 0.100 | 5.0 | 0.50 | phase_gemm | 0.050 | 0.100 | 20.0 "
                      "| 2.00 |")
    assert out[3].startswith(f"| `{names[1]}` | - | - | - |") and len(out) == 3 + len(names)
    assert out[-1] == "| geometric mean | | | | | **0.50** | | | | | **2.00** |"


def test_the_ab_summary_takes_each_side_s_median_over_rounds_and_flags_a_failed_check(tmp_path):
    def run(name, ms, ok=True):
        (tmp_path / name).write_text(json.dumps([{"case": "k", "median_ms": ms, "check": {"ok": ok}}]))
    for i, (a, b) in enumerate([(0.10, 0.09), (0.30, 0.08), (0.11, 0.07)], 1):
        run(f"a{i}-f32.json", a)
        run(f"b{i}-f32.json", b)
    run("a1-f16.json", 0.05)
    run("b1-f16.json", 0.05, ok=False)
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu" / "ab_summary.py"), str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    # medians over the rounds: a 0.11, b 0.08
    assert out[2:4] == ["| k | f32 | 0.1100 | 0.0800 | 0.727 | ok |", "| k | f16 | 0.0500 | 0.0500 | 1.000 | FAILED |"]
    assert "f32: b / a geometric mean 0.727 over 1 cases" in out
