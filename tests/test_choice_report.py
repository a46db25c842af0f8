"""tools/choice_report.py on a recorded H100 run (tests/data/choice-runs-h100: one fresh layer of seed 5150 in
float16, its `--variants all` rows and its adaptation row): the adapted choice is compared like for like."""
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import choice_report  # noqa: E402

RUNS = ROOT / "tests" / "data" / "choice-runs-h100"


def report(tmp_path: Path, change=None) -> dict:
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    if change:
        path = runs / "adapt-fresh-float16.jsonl"
        row = json.loads(path.read_text())
        change(row["trial"])
        path.write_text(json.dumps(row) + "\n")
    (out,) = choice_report.rows(runs)
    return out


def test_a_choice_in_other_tiles_than_the_benchs_is_timed_by_the_trials_ratio(tmp_path):
    """The trial chose phase_gemm in 16x32 tiles at 0.47x its first pick; `--variants all` timed phase_gemm in its
    128x64 default, 2.26x the fastest: the report reads the trial's ratio times the first pick's bench time."""
    got = report(tmp_path)
    assert got["adapted"] == "phase_gemm" and got["adapted_basis"] == "trial ratio", got
    ratio = 0.47  # the trial's median ratio, to 0.01
    assert abs(got["adapted_ms"] / got["planner_ms"] - ratio) < 0.01 and got["adapted_to_best"] < 1.0, got
    assert 1.0 < got["trial_over_bench"] < 2.0  # the busy regime: the trial's first pick near its bench time


def test_a_choice_in_the_benchs_tiles_is_read_off_the_bench(tmp_path):
    def bench_tiles(trial):
        trial["chosen"]["params"] = {"tm": 128, "tn": 64, "rm": 4, "rn": 8, "tk": 16, "ks": 1, "kz": 1}

    got = report(tmp_path, bench_tiles)
    assert got["adapted_basis"] == "bench" and abs(got["adapted_to_best"] - 2.26) < 0.01, got


def test_a_layer_timed_in_two_runs_reports_how_far_one_runs_fastest_is_in_the_other(tmp_path):
    """The run-to-run line: the machine's own floor for "within 10% of the fastest". A second run where
    phase_gemm_sgmat is 1.2x faster than the first run's fastest (stride1_halo_sgmat, unchanged)."""
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    rows = json.loads((runs / "all-fresh-float16.json").read_text())
    for r in rows:
        if r["variant"] == "phase_gemm_sgmat":
            r["median_ms"] = 0.0322656 / 1.2
    (runs / "all-fresh-b-float16.json").write_text(json.dumps(rows))
    (out,) = choice_report.rows(runs)
    # run 1's fastest (halo) is 1.2x run 2's; run 2's (sgmat) is 0.0339 / 0.0323 = 1.05x run 1's
    assert sorted(round(x, 3) for x in out["run_to_run"]) == [1.052, 1.2], out["run_to_run"]
    (line,) = [x for x in choice_report.summary([out]) if "run to run" in x]
    assert "within 10% of that run's fastest on 1 of 2 (50%), worst 1.20x" in line, line


def test_rows_that_name_no_tiles_are_read_as_their_variants_own(tmp_path):
    """A bench of one repeat (SwiftShader's) wrote no tiles before it recorded them: such a row ran the variant's own
    tiles (its table's for the class, else its defaults), so a trial that chose those is read off it."""
    def bench_tiles(trial):
        trial["chosen"]["params"] = {"tm": 128, "tn": 64, "rm": 4, "rn": 8, "tk": 16, "ks": 1, "kz": 1}

    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    path = runs / "all-fresh-float16.json"
    path.write_text(json.dumps([{k: v for k, v in r.items() if k != "tiles"} for r in json.loads(path.read_text())]))
    path = runs / "adapt-fresh-float16.jsonl"
    row = json.loads(path.read_text())
    bench_tiles(row["trial"])
    path.write_text(json.dumps(row) + "\n")
    (got,) = choice_report.rows(runs)
    assert got["adapted_basis"] == "bench" and abs(got["adapted_to_best"] - 2.26) < 0.01, got


def test_a_first_pick_that_held_is_read_in_its_own_tiles_of_a_candidates_runs_several(tmp_path):
    """`--variants candidates` times a variant in several tiles: where the trial kept its first pick, the adapted
    time is the first pick's own tiles' (the planner's), not another tiles' row of the variant listed before it (a
    large-tier float16 layer read 22x its first pick so)."""
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    path = runs / "all-fresh-float16.json"
    rows = json.loads(path.read_text())
    own = next(r for r in rows if r["variant"] == "stride1_halo_sgmat")
    path.write_text(json.dumps([own | {"tiles": own["tiles"] | {"tw": 8}, "median_ms": 0.7}] + rows))
    path = runs / "adapt-fresh-float16.jsonl"
    row = json.loads(path.read_text())
    row["trial"]["chosen"] = row["trial"]["first"]
    path.write_text(json.dumps(row) + "\n")
    (got,) = choice_report.rows(runs)
    assert got["planner"] == got["adapted"] == "stride1_halo_sgmat", got
    assert got["adapted_ms"] == got["planner_ms"] == own["median_ms"] and got["adapted_basis"] == "bench", got
    assert 1.0 < got["trial_over_bench"] < 1.5, got  # 0.0435 of the trial over 0.0323 of the bench


def test_an_alternative_serving_an_unsettled_trial_is_read_in_its_own_tiles(tmp_path):
    """A trial still open after its calls, an alternative serving (it beat the first pick with all its samples): its
    time is its own tiles' (here the trial's ratio: the bench timed phase_gemm in other tiles), not the variant's
    first bench row."""
    def unsettled(trial):
        trial["serving"], trial["chosen"], trial["done"] = trial["chosen"], None, False

    got = report(tmp_path, unsettled)
    assert got["adapted"] == "phase_gemm" and got["adapted_basis"] == "trial ratio", got
    assert abs(got["adapted_ms"] / got["planner_ms"] - 0.47) < 0.01, got
